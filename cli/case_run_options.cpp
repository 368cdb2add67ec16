// SPDX-License-Identifier: BSD-3-Clause
#include "cli/case_run_options.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <system_error>
#include <vector>

#include "core/harness_error.h"
#include "run/worker_memory.h"

namespace attnfuzz {
namespace {

// The largest --memory-limit: 1 PiB, in MiB.
constexpr std::int64_t kMaxMemoryLimitMebibytes = std::int64_t{1} << 30;

// "0,1" -> {"0", "1"}: the GPUs for --devices.
std::vector<std::string> parse_devices(const std::string& list) {
  std::vector<std::string> devices;
  std::size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string device = list.substr(start, end - start);
    if (device.empty() || device.find_first_not_of("0123456789") != std::string::npos) {
      throw HarnessError("--devices: expected GPU indices separated by commas (e.g. 0,1), got '" +
                         list + "'");
    }
    devices.push_back(device);
    start = end + 1;
  }
  return devices;
}

}  // namespace

std::string self_executable(const char* argv0) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string(argv0) : self.string();
}

CaseRunSettings case_run_settings(const HarnessOptions& options, int argc, char** argv) {
  CaseRunSettings settings;
  settings.in_process = options.in_process;
  settings.fail_fast = options.fail_fast;
  settings.stream = options.stream;
  if (!options.resume.empty()) {
    if (!options.stream.empty() && options.stream != options.resume) {
      throw HarnessError("--resume appends to the stream it reads; --stream names another file");
    }
    if (!std::filesystem::exists(options.resume)) {
      throw HarnessError("--resume: no such file: " + options.resume);
    }
    settings.resume = options.resume;
    settings.stream = options.resume;
  }
  // Limits past these are typing mistakes, and larger numbers would overflow the deadline's and
  // the byte count's arithmetic (an infinite timeout used to spin a core, a huge limit to wrap
  // negative and switch itself off).
  if (!(options.progress_every >= 0.0 && options.progress_every <= kMaxCaseTimeoutSeconds)) {
    throw HarnessError("--progress-every: must be from 0 (no progress lines) to " +
                       std::to_string(static_cast<long long>(kMaxCaseTimeoutSeconds)) +
                       " seconds, got " + std::to_string(options.progress_every));
  }
  if (!(options.case_timeout >= 0.0 && options.case_timeout <= kMaxCaseTimeoutSeconds)) {
    throw HarnessError("--case-timeout: must be from 0 (no limit) to " +
                       std::to_string(static_cast<long long>(kMaxCaseTimeoutSeconds)) +
                       " seconds, got " + std::to_string(options.case_timeout));
  }
  if (options.memory_limit < 0 || options.memory_limit > kMaxMemoryLimitMebibytes) {
    throw HarnessError("--memory-limit: must be from 0 (3/4 of RAM) to " +
                       std::to_string(kMaxMemoryLimitMebibytes) + " MiB, got " +
                       std::to_string(options.memory_limit));
  }
  if (!options.known_failures.empty()) {
    settings.known_failures = KnownFailures::load(options.known_failures);
  }
  WorkerPoolSettings& workers = settings.workers;
  workers.devices = parse_devices(options.devices);
  workers.case_timeout_seconds = options.case_timeout;
  workers.memory_limit_bytes = options.memory_limit > 0
                                   ? options.memory_limit << 20
                                   : default_worker_memory_limit(static_cast<int>(
                                         std::max<std::size_t>(workers.devices.size(), 1)));
  workers.command.push_back(self_executable(argv[0]));
  for (int index = 1; index < argc; ++index) workers.command.emplace_back(argv[index]);
  workers.command.emplace_back("--worker");
  return settings;
}

}  // namespace attnfuzz
