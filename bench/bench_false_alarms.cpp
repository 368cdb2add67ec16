// The false-alarm run: many random valid cases on a correct kernel, counting the cases the
// harness fails. Every case is checked against the oracle; every tenth also against every
// metamorphic property. A harness that cries wolf is worse than none: the count must be zero.
//
//   bench_false_alarms [--cases N] [--seed S] [--kernel NAME]
// Prints each false alarm (case JSON and reason), coverage by distribution and dtype, the worst
// error_ratio seen, and the throughput. Exit code 1 when there was any false alarm.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "case/case_codec.h"
#include "core/clock.h"
#include "fuzz/case_generator.h"
#include "fuzz/properties.h"

int main(int argc, char** argv) {
  using namespace attnfuzz;
  long long cases = 100000;
  std::uint64_t seed = 1;
  RunSettings settings;
  settings.backend = Backend::cpu;
  for (int arg = 1; arg + 1 < argc; arg += 2) {
    if (std::strcmp(argv[arg], "--cases") == 0) cases = std::atoll(argv[arg + 1]);
    if (std::strcmp(argv[arg], "--seed") == 0) seed = std::strtoull(argv[arg + 1], nullptr, 10);
    if (std::strcmp(argv[arg], "--kernel") == 0) settings.kernel = argv[arg + 1];
  }
  const CaseRunner runner(settings);
  const rc::Gen<AttentionCase> generator =
      small_case({.max_seq_len = 256, .distributions = {}, .injections = true});
  std::map<std::string, long long> checked_by_class;
  long long false_alarms = 0, skipped = 0, property_checks = 0;
  double worst_ratio = 0.0;
  std::string worst_case;
  const auto started = std::chrono::steady_clock::now();
  for (long long index = 0; index < cases; ++index) {
    const AttentionCase attention_case =
        generator(rc::Random(seed * 1000003 + static_cast<std::uint64_t>(index)), 100).value();
    if (index > 0 && index % 10000 == 0) {
      std::fprintf(stderr, "%lld cases, %lld false alarms\n", index, false_alarms);
    }
    const CaseResult result = runner.run(attention_case);
    if (result.status == CaseStatus::skip) {
      ++skipped;
      continue;
    }
    ++checked_by_class[std::string(distribution_name(attention_case.data)) + " " +
                       std::string(dtype_name(attention_case.dtype))];
    if (result.comparison.error_ratio > worst_ratio) {
      worst_ratio = result.comparison.error_ratio;
      worst_case = case_keys_to_json(attention_case).dump();
    }
    if (result.status == CaseStatus::fail) {
      ++false_alarms;
      std::printf("FALSE ALARM matches_oracle %s\n    %s\n",
                  case_keys_to_json(attention_case).dump().c_str(), result.reason.c_str());
      std::fflush(stdout);
    }
    if (index % 10 != 0) continue;
    for (const PropertyInfo& info : kProperties) {
      if (info.property == Property::matches_oracle) continue;
      ++property_checks;
      if (const auto failure = check_property(info.property, attention_case, settings)) {
        ++false_alarms;
        std::printf("FALSE ALARM %s %s\n    %s\n", std::string(info.name).c_str(),
                    case_keys_to_json(attention_case).dump().c_str(), failure->c_str());
        std::fflush(stdout);
      }
    }
  }
  const double seconds = seconds_since(started);
  std::printf("\ncases checked against the oracle, by distribution and dtype:\n");
  for (const auto& [name, count] : checked_by_class)
    std::printf("  %-28s %lld\n", name.c_str(), count);
  std::printf("worst error_ratio: %.3f  %s\n", worst_ratio, worst_case.c_str());
  std::printf(
      "%lld random cases (%lld skipped as unsupported), %lld metamorphic checks, %.0f s "
      "(%.0f cases/s)\n",
      cases, skipped, property_checks, seconds, static_cast<double>(cases) / seconds);
  std::printf("false alarms: %lld\n", false_alarms);
  return false_alarms == 0 ? 0 : 1;
}
