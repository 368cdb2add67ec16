// SPDX-License-Identifier: BSD-3-Clause
#include "run/bench_rounds.h"

#include <new>
#include <stdexcept>

#include "case/case_codec.h"
#include "core/harness_error.h"
#include "run/kernel_timer.h"

namespace attnfuzz {
namespace {

constexpr const char* kRoundKey = "bench_round";
constexpr const char* kSideBySideKey = "side_by_side";

void fail_in_round(CaseResult& result, int round, const std::string& why) {
  result.status = CaseStatus::fail;
  result.reason = "timing round " + std::to_string(round) + ": " + why;
}

}  // namespace

WorkerRequestKind timing_request_kind(const CaseRunner& runner) {
  return {kRoundKey, [&runner](const AttentionCase& attention_case, const nlohmann::json& request) {
            const nlohmann::json& round = request[kRoundKey];
            const auto side_by_side = request.find(kSideBySideKey);
            return answer_timing_request(
                runner, attention_case, round.is_number_integer() ? round.get<int>() : 0,
                side_by_side != request.end() && side_by_side->is_boolean() &&
                    side_by_side->get<bool>());
          }};
}

nlohmann::json answer_timing_request(const CaseRunner& runner, const AttentionCase& attention_case,
                                     int round, bool side_by_side) {
  try {
    return {{"performance",
             performance_to_json(runner.time_round(attention_case, round, side_by_side))}};
  } catch (const std::bad_alloc&) {
    return {{"error", "out of memory (std::bad_alloc)"}};
  } catch (const std::exception& error) {
    return {{"error", error.what()}};
  }
}

void run_later_rounds(const CaseRunner& runner, const CaseRunSettings& settings, int rounds,
                      std::vector<CaseResult>& results, const std::function<void(int)>& on_round) {
  for (int round = 2; round <= rounds; ++round) {
    std::vector<std::size_t> timed;
    for (std::size_t index = 0; index < results.size(); ++index) {
      if (results[index].performance && results[index].status == CaseStatus::pass) {
        timed.push_back(index);
      }
    }
    if (timed.empty()) return;
    on_round(round);
    auto take = [&](std::size_t index, const nlohmann::json& answer) {
      CaseResult& result = results[index];
      if (answer.contains("error") && answer["error"].is_string()) {
        fail_in_round(result, round, answer["error"].get<std::string>());
        return !settings.fail_fast;
      }
      try {
        add_rounds(*result.performance, performance_from_json(answer.at("performance"), false));
      } catch (const std::exception& error) {
        throw HarnessError(std::string("a worker's timing answer: ") + error.what());
      }
      return true;
    };
    // A case whose reference ran the case is timed beside it again.
    const auto side_by_side = [&](std::size_t index) {
      const std::optional<ReferenceTiming>& reference = results[index].performance->reference;
      return reference && reference->unavailable.empty();
    };
    if (settings.in_process) {
      for (std::size_t index : timed) {
        if (!take(index, answer_timing_request(runner, results[index].attention_case, round,
                                               side_by_side(index)))) {
          return;
        }
      }
      continue;
    }
    run_on_workers(
        settings.workers, timed,
        [&](std::size_t index) {
          const AttentionCase& attention_case = results[index].attention_case;
          return nlohmann::json{{"id", attention_case.id},
                                {"case", case_keys_to_json(attention_case)},
                                {kRoundKey, round},
                                {kSideBySideKey, side_by_side(index)}};
        },
        take,
        [&](std::size_t index, const WorkerLoss& loss) {
          fail_in_round(results[index], round, loss.description);
          results[index].output_tail = loss.output_tail;
          return !settings.fail_fast;
        });
  }
}

}  // namespace attnfuzz
