#include "run/case_worker.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/exit_codes.h"
#include "core/file_io.h"
#include "core/json_text.h"
#include "kernels/cuda_device_probe.h"
#include "run/case_result_json.h"

namespace attnfuzz {
namespace {

// Writes one line to the supervisor; false when it is gone (the pipe closed).
bool answer(const nlohmann::json& message) {
  // Plugin error texts need not be UTF-8: invalid bytes become U+FFFD rather than an exception.
  return write_all(kWorkerResultFd, json_text(message) + "\n") == 0;
}

}  // namespace

int serve_cases(const CaseRunner& runner, const std::vector<AttentionCase>& cases) {
  const bool had_cuda = cuda_device_status().usable;
  if (!answer({{"ready", true}})) return kExitHarnessError;
  for (std::string line; std::getline(std::cin, line);) {
    const nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    if (!request.is_object() || !request.contains("index") ||
        !request["index"].is_number_unsigned() ||
        request["index"].get<std::size_t>() >= cases.size()) {
      std::cerr << "fuzz_attention worker: bad request: " << line << "\n";
      return kExitHarnessError;
    }
    const std::size_t index = request["index"].get<std::size_t>();
    const CaseResult result = runner.run(cases[index]);
    // A dead CUDA context stays dead in this process: the worker says it leaves, and a fresh
    // worker (a fresh context) takes the next case.
    const bool leaving = had_cuda && !cuda_device_status().usable;
    if (!answer({{"index", index}, {"result", case_to_json(result)}, {"leaving", leaving}})) {
      return kExitHarnessError;
    }
    if (leaving) return kExitPass;
  }
  return kExitPass;
}

}  // namespace attnfuzz
