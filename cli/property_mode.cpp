// SPDX-License-Identifier: BSD-3-Clause
#include "cli/property_mode.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "case/case_codec.h"
#include "cli/case_run_options.h"
#include "cli/case_selection.h"
#include "cli/report_files.h"
#include "core/exit_codes.h"
#include "core/harness_error.h"
#include "core/text.h"
#include "fuzz/contained_property_check.h"
#include "fuzz/properties.h"

namespace attnfuzz {
namespace {

// The largest --budget: about a year.
constexpr double kMaxBudgetSeconds = 3.2e7;

std::vector<Property> selected_properties(const HarnessOptions& options) {
  std::vector<Property> selected;
  for (const std::string& name : options.property_names) {
    const std::optional<Property> property = parse_property(name);
    if (!property) {
      throw HarnessError("--property: unknown property '" + name +
                         "' (fuzz_attention --list-properties lists them)");
    }
    // A property named twice is checked once.
    if (std::find(selected.begin(), selected.end(), *property) == selected.end()) {
      selected.push_back(*property);
    }
  }
  return selected;
}

// --properties --replay FILE: checks the selected properties (default: all) on saved cases.
int replay_properties(const HarnessOptions& options, const RunSettings& settings,
                      const PropertyChecker& checker) {
  std::vector<Property> selected = selected_properties(options);
  if (selected.empty()) {
    for (const PropertyInfo& info : kProperties) selected.push_back(info.property);
  }
  const RunPlan plan = replay_plan(options.replay);
  int passed = 0, failed = 0, skipped = 0;
  for (const AttentionCase& attention_case : select_cases(plan.matrix, options.case_ids)) {
    for (Property property : selected) {
      const PropertyCheck check = checker ? checker(property, attention_case)
                                          : check_property(property, attention_case, settings);
      // Not judged: the kernel could not run the case here, or the property does not apply.
      std::cout << (check.failure  ? "FAIL "
                    : check.judged ? "PASS "
                                   : "SKIP ")
                << kProperties[static_cast<int>(property)].name << " " << attention_case.id << " "
                << case_keys_to_json(attention_case).dump() << "\n";
      if (check.failure) {
        std::cout << "    reason: " << printable_text(*check.failure, KeptControls::tab_and_newline)
                  << "\n";
      }
      (check.failure ? failed : check.judged ? passed : skipped) += 1;
    }
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  if (failed > 0) return kExitFail;
  return passed > 0 ? kExitPass : kExitSkip;
}

int search_properties(const HarnessOptions& options, const RunSettings& settings,
                      const PropertyChecker& checker,
                      const std::function<KernelReach()>& reach_probe) {
  if (!(options.budget > 0.0 && options.budget <= kMaxBudgetSeconds)) {
    throw HarnessError("--budget: must be a number of seconds > 0 and <= " +
                       std::to_string(static_cast<long long>(kMaxBudgetSeconds)) + ", got " +
                       std::to_string(options.budget));
  }
  PropertySettings search;
  search.run = settings;
  search.budget_seconds = options.budget;
  search.seed = options.seed;
  search.properties = selected_properties(options);
  search.regressions_dir = options.regressions;
  search.stop_at_first_failure = options.fail_fast;
  search.checker = checker;
  search.reach_probe = reach_probe;
  std::cout << "fuzz_attention --properties: " << options.budget << " s budget, seed "
            << options.seed << ", kernel " << CaseRunner(settings).kernel_for(AttentionCase{})
            << ", plant " << options.plant << "\n";
  const std::vector<PropertyOutcome> outcomes = run_properties(search, std::cout);
  int passed = 0, failed = 0, skipped = 0;
  std::cout << "\n";
  for (const PropertyOutcome& outcome : outcomes) {
    const bool broken = outcome.minimal_case.has_value();
    // A property no case of which was judged (the search stopped at another's failure, or the
    // budget ran out first, or none of its cases could run here or was one it applies to) has
    // not been shown to hold: skipped, not passed.
    const bool never_checked = !broken && outcome.judged == 0;
    const char* verdict = broken ? "FAIL" : never_checked ? "SKIP" : "PASS";
    const char* note =
        broken           ? "  (minimal case saved)"
        : !never_checked ? ""
        : outcome.tests > 0
            ? "  (not judged: no case of it could run here, or was one it applies to)"
        : options.fail_fast ? "  (not run: --fail-fast stopped first)"
                            : "  (not run: the --budget ran out first)";
    std::printf("%s %-28s %6d cases %8.2f s%s\n", verdict,
                std::string(kProperties[static_cast<int>(outcome.property)].name).c_str(),
                outcome.tests, outcome.seconds, note);
    (broken ? failed : never_checked ? skipped : passed) += 1;
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  if (failed > 0) return kExitFail;
  return passed > 0 ? kExitPass : kExitSkip;
}

// The report flags describe a matrix run, and so do --stream and --resume; the property search
// prints its outcome and saves each minimal failing case instead. Given with --properties they
// would be ignored: refused.
void refuse_report_flags_with_properties(const HarnessOptions& options) {
  std::vector<std::string> given = report_flags_given(options);
  if (!options.stream.empty()) given.emplace_back("--stream");
  if (!options.resume.empty()) given.emplace_back("--resume");
  if (!options.known_failures.empty()) {
    throw HarnessError(
        "--known-failures judges the cases of a matrix or --replay run; a property search "
        "draws new cases each run (replay its saved minimal cases with --replay DIR instead)");
  }
  if (!given.empty()) {
    throw HarnessError(given.front() +
                       " reports a matrix run; --properties writes no report (it prints each "
                       "property's outcome and saves minimal failing cases in --regressions)");
  }
}

}  // namespace

int run_property_mode(const HarnessOptions& options, const RunSettings& settings, int argc,
                      char** argv) {
  refuse_report_flags_with_properties(options);
  CaseRunner(settings).validate(AttentionCase{});  // the kernel exists and carries the plant
  std::optional<ContainedPropertyCheck> contained;
  PropertyChecker checker;
  std::function<KernelReach()> reach_probe;
  if (!options.in_process) {
    const double budget = options.replay.empty() ? options.budget : kMaxBudgetSeconds;
    contained.emplace(case_run_settings(options, argc, argv).workers, budget);
    checker = [&](Property property, const AttentionCase& attention_case) {
      return (*contained)(property, attention_case);
    };
    reach_probe = [&] { return contained->reach(); };
  }
  return options.replay.empty() ? search_properties(options, settings, checker, reach_probe)
                                : replay_properties(options, settings, checker);
}

void list_properties(std::ostream& out) {
  for (const PropertyInfo& info : kProperties) out << info.name << ": " << info.sentence << "\n";
}

}  // namespace attnfuzz
