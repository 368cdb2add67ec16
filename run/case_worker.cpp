// SPDX-License-Identifier: BSD-3-Clause
#include "run/case_worker.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "case/case_codec.h"
#include "core/exit_codes.h"
#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/json_parse.h"
#include "core/json_text.h"
#include "kernels/cuda_device_probe.h"
#include "run/bench_rounds.h"
#include "run/case_result_json.h"

namespace attnfuzz {
namespace {

// The protocol's two pipes, as the supervisor passed them.
struct WorkerChannel {
  int requests = -1;
  int answers = -1;
};

// Reads and hides ATTNFUZZ_WORKER_FDS, and makes both descriptors close-on-exec so that no
// program a plugin starts inherits them.
WorkerChannel open_worker_channel() {
  const char* value = std::getenv(kWorkerFdsVariable);
  WorkerChannel channel;
  if (value == nullptr || std::sscanf(value, "%d,%d", &channel.requests, &channel.answers) != 2 ||
      fcntl(channel.requests, F_GETFD) < 0 || fcntl(channel.answers, F_GETFD) < 0) {
    throw HarnessError(
        "--worker: started without the supervisor's pipes (fuzz_attention starts its own workers; "
        "run it without --worker)");
  }
  unsetenv(kWorkerFdsVariable);
  fcntl(channel.requests, F_SETFD, FD_CLOEXEC);
  fcntl(channel.answers, F_SETFD, FD_CLOEXEC);
  return channel;
}

// Writes one line to the supervisor; false when it is gone (the pipe closed).
bool answer(const WorkerChannel& channel, const nlohmann::json& message) {
  // Plugin error texts need not be UTF-8: invalid bytes become U+FFFD rather than an exception.
  return write_all(channel.answers, json_text(message) + "\n") == 0;
}

// The next request line, or false at the end of the requests (or when the pipe fails).
bool next_request(const WorkerChannel& channel, std::string& pending, std::string& line) {
  for (;;) {
    if (const std::size_t end = pending.find('\n'); end != std::string::npos) {
      line = pending.substr(0, end);
      pending.erase(0, end + 1);
      return true;
    }
    char buffer[1 << 16];
    const ssize_t count = read_some(channel.requests, buffer, sizeof buffer);
    if (count <= 0) return false;
    pending.append(buffer, static_cast<std::size_t>(count));
  }
}

}  // namespace

nlohmann::json run_case_request(const CaseRunner& runner, const AttentionCase& attention_case) {
  return case_to_json(runner.run(attention_case));
}

int serve_requests(const WorkerHandler& handle) {
  const WorkerChannel channel = open_worker_channel();
  const bool had_cuda = cuda_device_status().usable;
  if (!answer(channel, {{"ready", true}})) return kExitHarnessError;
  std::string pending;
  for (std::string line; next_request(channel, pending, line);) {
    const nlohmann::json request = parse_json_or_discarded(line);
    AttentionCase attention_case;
    std::size_t index = 0;
    try {
      if (!request.is_object() || !request.contains("index") || !request.contains("case")) {
        throw std::invalid_argument("not a request");
      }
      index = request.at("index").get<std::size_t>();
      attention_case = case_from_keys_json(request.at("case"));
      attention_case.id = request.at("id").get<std::string>();
    } catch (const std::exception& error) {
      std::cerr << "fuzz_attention worker: bad request (" << error.what()
                << "): " << line.substr(0, 200) << "\n";
      return kExitHarnessError;
    }
    if (!answer(channel, {{"started", index}})) return kExitHarnessError;
    const nlohmann::json result = handle(attention_case, request);
    // A dead CUDA context stays dead in this process: the worker says it leaves, and a fresh
    // worker (a fresh context) takes the next case.
    const bool leaving = had_cuda && !cuda_device_status().usable;
    if (!answer(channel, {{"index", index}, {"result", result}, {"leaving", leaving}})) {
      return kExitHarnessError;
    }
    if (leaving) return kExitPass;
  }
  return kExitPass;
}

int serve_worker(const CaseRunner& runner, const std::vector<WorkerRequestKind>& other_kinds) {
  std::vector<WorkerRequestKind> kinds = {timing_request_kind(runner)};
  kinds.insert(kinds.end(), other_kinds.begin(), other_kinds.end());
  return serve_requests([&](const AttentionCase& attention_case, const nlohmann::json& request) {
    for (const WorkerRequestKind& kind : kinds) {
      if (request.contains(kind.key)) return kind.answer(attention_case, request);
    }
    return run_case_request(runner, attention_case);
  });
}

}  // namespace attnfuzz
