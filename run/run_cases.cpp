// SPDX-License-Identifier: BSD-3-Clause
#include "run/run_cases.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "case/case_codec.h"
#include "core/exit_codes.h"
#include "core/harness_error.h"
#include "kernels/planted_bug.h"
#include "run/case_result_json.h"
#include "run/result_stream.h"

namespace attnfuzz {
namespace {

// The resume stream's records, each checked against the case of this run it belongs to.
std::vector<std::optional<CaseResult>> resumed_results(const CaseRunner& runner,
                                                       const std::vector<AttentionCase>& cases,
                                                       const std::filesystem::path& stream) {
  std::vector<std::optional<CaseResult>> results(cases.size());
  std::map<std::string, std::size_t> index_of_id;
  for (std::size_t index = 0; index < cases.size(); ++index) index_of_id[cases[index].id] = index;
  const std::string plant(planted_bug_name(runner.settings().plant));
  for (const nlohmann::json& record : read_result_stream(stream)) {
    const std::string id = record.value("case_id", std::string());
    const auto found = index_of_id.find(id);
    if (found == index_of_id.end()) {
      throw HarnessError("--resume: " + stream.string() + " holds case '" + id +
                         "', which this run does not have (another matrix, --case or --shard?)");
    }
    CaseResult result;
    try {
      result = case_result_from_json(record, cases[found->second]);
    } catch (const std::exception& error) {
      throw HarnessError("--resume: " + stream.string() + ": " + error.what());
    }
    const std::string kernel = runner.kernel_for(cases[found->second]);
    if (result.plant != plant || result.kernel_name != kernel) {
      throw HarnessError("--resume: " + stream.string() + " ran case " + id + " on kernel " +
                         result.kernel_name + " with plant " + result.plant + "; this run uses " +
                         kernel + " with plant " + plant);
    }
    results[found->second] = std::move(result);
  }
  return results;
}

// With --in-process nothing contains a kernel that calls exit(): the process would end with the
// kernel's status, 0 included, after one case. While a case runs, an atexit handler turns such an
// exit into exit code 1 with a message naming the case (a crash ends the process anyway).
std::atomic<const std::string*> case_in_flight{nullptr};

void refuse_exit_during_a_case() {
  const std::string* id = case_in_flight.load();
  if (id == nullptr) return;
  const std::string message = "\nfuzz_attention: the kernel called exit() while running case " +
                              *id +
                              " in this process (--in-process): the case fails and the run "
                              "ends here; run without --in-process to contain it\n";
  [[maybe_unused]] const ssize_t ignored = write(STDERR_FILENO, message.data(), message.size());
  _exit(kExitFail);
}

class CaseInFlight {
 public:
  explicit CaseInFlight(const std::string& id) {
    static const bool registered = std::atexit(refuse_exit_during_a_case) == 0;
    (void)registered;
    case_in_flight.store(&id);
  }
  ~CaseInFlight() { case_in_flight.store(nullptr); }
  CaseInFlight(const CaseInFlight&) = delete;
  CaseInFlight& operator=(const CaseInFlight&) = delete;
};

}  // namespace

CaseResult result_of_lost_worker(const CaseRunner& runner, const AttentionCase& attention_case,
                                 const WorkerLoss& loss) {
  CaseResult result = runner.unfinished_result(
      attention_case,
      loss.kind == WorkerLossKind::out_of_memory ? CaseStatus::skip : CaseStatus::fail,
      loss.description);
  result.output_tail = loss.output_tail;
  result.timing.total_seconds = loss.seconds;
  return result;
}

CaseRunOutcome run_cases(const CaseRunner& runner, const std::vector<AttentionCase>& cases,
                         const CaseRunSettings& settings,
                         const std::function<void(const CaseResult&)>& on_new_result) {
  std::vector<std::optional<CaseResult>> results(cases.size());
  CaseRunOutcome outcome;
  if (!settings.resume.empty()) {
    results = resumed_results(runner, cases, settings.resume);
    for (auto& result : results) {
      if (!result) continue;
      ++outcome.resumed;
      settings.known_failures.judge(*result);
    }
  }
  std::optional<ResultStream> stream;
  if (!settings.stream.empty()) {
    std::set<std::string> case_ids;
    for (const AttentionCase& attention_case : cases) case_ids.insert(attention_case.id);
    stream.emplace(settings.stream, case_ids);
  }

  // Streamed first: whatever happens next (a full disk for the report, a kill), it is on disk.
  // The stream holds the verdict before the known failures judge it, so that a --resume under
  // another list (or none) judges every case, old and new, by that list.
  auto keep = [&](std::size_t index, CaseResult result) {
    if (stream) stream->append(result);
    settings.known_failures.judge(result);
    on_new_result(result);
    const bool go_on = !(settings.fail_fast && result.status == CaseStatus::fail);
    results[index] = std::move(result);
    return go_on;
  };

  std::vector<std::size_t> pending;
  for (std::size_t index = 0; index < cases.size(); ++index) {
    if (!results[index]) pending.push_back(index);
  }
  const bool earlier_failure =
      settings.fail_fast && std::any_of(results.begin(), results.end(), [](const auto& result) {
        return result && result->status == CaseStatus::fail;
      });
  if (earlier_failure) pending.clear();

  if (settings.in_process) {
    for (std::size_t index : pending) {
      const CaseInFlight in_flight(cases[index].id);
      CaseResult result = runner.run(cases[index]);
      if (!keep(index, std::move(result))) break;
    }
  } else {
    run_on_workers(
        settings.workers, pending,
        [&](std::size_t index) {
          return nlohmann::json{{"id", cases[index].id}, {"case", case_keys_to_json(cases[index])}};
        },
        [&](std::size_t index, const nlohmann::json& record) {
          CaseResult result;
          try {
            result = case_result_from_json(record, cases[index]);
          } catch (const std::exception& error) {
            throw HarnessError(std::string("a worker's answer: ") + error.what());
          }
          return keep(index, std::move(result));
        },
        [&](std::size_t index, const WorkerLoss& loss) {
          return keep(index, result_of_lost_worker(runner, cases[index], loss));
        });
  }
  for (auto& result : results) {
    if (result) outcome.results.push_back(std::move(*result));
  }
  return outcome;
}

}  // namespace attnfuzz
