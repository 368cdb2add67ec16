// SPDX-License-Identifier: BSD-3-Clause
#include "fuzz/contained_property_check.h"

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "case/case_codec.h"
#include "core/clock.h"
#include "core/number_text.h"

namespace attnfuzz {
namespace {

// No check starts later than this after the budget.
constexpr double kBudgetGraceSeconds = 1.0;
// What the search waits for a check once the budget is spent: a last check that happens to be
// running then gets the longest of kSlowCheckFactor times the longest check that finished, the
// budget again (up to kLongestBudgetGraceSeconds) and kLeastGraceSeconds. Past that it is a hang.
// Not ten times the longest check alone: a random case can be thousands of times a typical one
// (a decode step over 68,556 sequences), and a slow kernel, Python's above all, takes seconds on
// it.
constexpr double kSlowCheckFactor = 10.0;
constexpr double kLongestBudgetGraceSeconds = 300.0;
constexpr double kLeastGraceSeconds = 10.0;
// The kernel's reach is probed before any check, in a worker that starts then: it may take the
// budget, at least this long, when no --case-timeout bounds it.
constexpr double kReachProbeSeconds = 10.0;

// The key of a property check's request: the property's name.
constexpr const char* kPropertyKey = "property";
// The key of the reach's request (its value is not read).
constexpr const char* kReachKey = "kernel_reach";

}  // namespace

ContainedPropertyCheck::ContainedPropertyCheck(WorkerPoolSettings workers, double budget_seconds)
    : case_timeout_seconds_(workers.case_timeout_seconds),
      budget_seconds_(budget_seconds),
      started_(std::chrono::steady_clock::now()),
      pool_(std::move(workers)) {}

PropertyCheck ContainedPropertyCheck::operator()(Property property,
                                                 const AttentionCase& attention_case) {
  // No new check starts once the budget (and a second more) is spent: the search is over, and
  // every further check, a shrinking step's included, judges nothing.
  const double budget_left = budget_seconds_ - seconds_since(started_);
  if (budget_left + kBudgetGraceSeconds <= 0) return PropertyCheck::not_judged();
  // A check running when the budget ends may finish within the grace (a slow kernel's last
  // check; a worker's start-up counts in the first); past that it is a hang.
  const double grace =
      std::max({kSlowCheckFactor * longest_check_seconds_,
                std::min(budget_seconds_, kLongestBudgetGraceSeconds), kLeastGraceSeconds});
  const double time_left = std::max(budget_left, 0.0) + grace;
  const bool budget_bounds = case_timeout_seconds_ <= 0 || time_left < case_timeout_seconds_;
  pool_.set_case_timeout(budget_bounds ? time_left : case_timeout_seconds_);

  std::optional<std::string> failure;
  bool judged = false;
  const auto request_of = [&](std::size_t) {
    return nlohmann::json{{"id", "property"},
                          {"case", case_keys_to_json(attention_case)},
                          {kPropertyKey, kProperties[static_cast<int>(property)].name}};
  };
  const auto check_started = std::chrono::steady_clock::now();
  const auto on_record = [&](std::size_t, const nlohmann::json& record) {
    longest_check_seconds_ = std::max(longest_check_seconds_, seconds_since(check_started));
    const nlohmann::json& verdict = record.at("failure");
    if (!verdict.is_null()) failure = verdict.get<std::string>();
    judged = record.at("judged").get<bool>() || failure.has_value();
    return true;
  };
  const auto on_loss = [&](std::size_t, const WorkerLoss& loss) {
    judged = loss.kind != WorkerLossKind::out_of_memory;  // as a matrix run's skip
    if (!judged) return true;
    if (loss.kind == WorkerLossKind::hung && budget_bounds) {  // the budget ran out
      failure = "hung: the kernel was still running a check " +
                fixed_decimals(seconds_since(check_started), 1) +
                " s after it began, when the --budget had run out and " + fixed_decimals(grace, 1) +
                " s more had passed (the longest of " + fixed_decimals(kSlowCheckFactor, 0) +
                " times the longest check that finished, the budget again up to " +
                fixed_decimals(kLongestBudgetGraceSeconds, 0) + " s, and " +
                fixed_decimals(kLeastGraceSeconds, 0) +
                " s); a --case-timeout below the budget names a hang sooner" +
                (loss.output_tail.empty() ? "" : "; its last output:\n" + loss.output_tail);
      return true;
    }
    failure = loss.description +
              (loss.output_tail.empty() ? "" : "; its last output:\n" + loss.output_tail);
    return true;
  };
  pool_.run({0}, request_of, on_record, on_loss);
  return judged ? PropertyCheck(failure) : PropertyCheck::not_judged();
}

KernelReach ContainedPropertyCheck::reach() {
  pool_.set_case_timeout(case_timeout_seconds_ > 0 ? case_timeout_seconds_
                                                   : std::max(kReachProbeSeconds, budget_seconds_));
  KernelReach reach;
  const auto request_of = [](std::size_t) {
    return nlohmann::json{
        {"id", "kernel_reach"}, {"case", case_keys_to_json(AttentionCase{})}, {kReachKey, true}};
  };
  const auto on_record = [&](std::size_t, const nlohmann::json& record) {
    reach = kernel_reach_from_json(record.at("reach"));
    return true;
  };
  const auto on_loss = [](std::size_t, const WorkerLoss&) { return true; };  // everything, then
  pool_.run({0}, request_of, on_record, on_loss);
  return reach;
}

WorkerRequestKind ContainedPropertyCheck::reach_request_kind(const RunSettings& settings) {
  return {kReachKey, [settings](const AttentionCase&, const nlohmann::json&) -> nlohmann::json {
            return {{"status", "pass"},
                    {"reach", kernel_reach_to_json(probe_kernel_reach(CaseRunner(settings)))}};
          }};
}

WorkerRequestKind ContainedPropertyCheck::request_kind(const RunSettings& settings) {
  return {kPropertyKey,
          [settings](const AttentionCase& attention_case,
                     const nlohmann::json& request) -> nlohmann::json {
            const std::optional<Property> property =
                parse_property(request.at(kPropertyKey).get_ref<const std::string&>());
            if (!property) throw std::invalid_argument("unknown property in a request");
            const PropertyCheck check = check_property(*property, attention_case, settings);
            // "status" as a case record has it: what the pool reads of an answer
            // (run/worker_pool.h).
            return {{"status", check.failure  ? "fail"
                               : check.judged ? "pass"
                                              : "skip"},
                    {"judged", check.judged},
                    {"failure",
                     check.failure ? nlohmann::json(*check.failure) : nlohmann::json(nullptr)}};
          }};
}

}  // namespace attnfuzz
