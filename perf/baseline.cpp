// SPDX-License-Identifier: BSD-3-Clause
#include "perf/baseline.h"

#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/json_parse.h"

namespace attnfuzz {
namespace {

// Each comparison's bootstrap is seeded the same way: one report, one verdict.
constexpr std::uint64_t kRatioSeed = 0x62617365;  // "base"

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& problem) {
  throw HarnessError("--baseline " + path.string() + ": " + problem +
                     " (a baseline is the --json report of an earlier fuzz_attention --bench run)");
}

std::string text_field(const std::filesystem::path& path, const nlohmann::json& object,
                       const std::string& where, const char* name) {
  if (!object.is_object() || !object.contains(name) || !object[name].is_string()) {
    refuse(path, "no text field " + where + "/" + name);
  }
  return object[name].get<std::string>();
}

PerformanceVerdict verdict_of(const RatioInterval& ratio, double max_slowdown) {
  return is_regression(ratio, max_slowdown)    ? PerformanceVerdict::regression
         : is_improvement(ratio, max_slowdown) ? PerformanceVerdict::improvement
                                               : PerformanceVerdict::unchanged;
}

}  // namespace

nlohmann::json bench_identity_to_json(const BenchIdentity& identity) {
  return {{"matrix_name", identity.matrix_name},
          {"device", identity.device},
          {"driver", identity.driver}};
}

Baseline load_baseline(const std::filesystem::path& path) {
  nlohmann::json report;
  try {
    report = parse_json(read_file(path));
  } catch (const HarnessError& error) {
    throw HarnessError("--baseline: " + std::string(error.what()));
  } catch (const std::exception& error) {
    refuse(path, std::string("not JSON: ") + error.what());
  }
  Baseline baseline;
  baseline.path = path;
  if (!report.is_object() || !report.contains("bench") || !report["bench"].is_object()) {
    refuse(path, "no \"bench\" section: not the report of a --bench run");
  }
  const nlohmann::json& identity = report["bench"].value("identity", nlohmann::json());
  baseline.identity.matrix_name = text_field(path, identity, "/bench/identity", "matrix_name");
  baseline.identity.device = text_field(path, identity, "/bench/identity", "device");
  baseline.identity.driver = text_field(path, identity, "/bench/identity", "driver");
  if (!report.contains("results") || !report["results"].is_array())
    refuse(path, "no results array");
  for (std::size_t index = 0; index < report["results"].size(); ++index) {
    const nlohmann::json& result = report["results"][index];
    const std::string where = "/results/" + std::to_string(index);
    const std::string id = text_field(path, result, where, "case_id");
    if (!result.contains("performance") || result["performance"].is_null()) continue;
    BaselineCase entry;
    entry.kernel_name = text_field(path, result, where, "kernel_name");
    if (!result.contains("config") || !result["config"].is_object()) {
      refuse(path, "no object " + where + "/config");
    }
    entry.config = result["config"];
    try {
      KernelPerformance performance = performance_from_json(result["performance"], false);
      entry.rounds_ms = std::move(performance.rounds_ms);
      entry.suspect = std::move(performance.suspect);
    } catch (const std::exception& error) {
      refuse(path, where + "/performance: " + error.what());
    }
    // A ratio to a median of zero is infinite: the interval would be NaN and judge nothing.
    if (!(pooled_median(entry.rounds_ms) > 0)) {
      refuse(path,
             where + "/performance: a median time of 0 ms, which nothing can be compared with");
    }
    if (!baseline.cases.emplace(id, std::move(entry)).second) {
      refuse(path, "case " + id + " appears twice");
    }
  }
  return baseline;
}

std::vector<std::string> identity_mismatches(const BenchIdentity& baseline,
                                             const BenchIdentity& current) {
  std::vector<std::string> mismatches;
  auto check = [&](const char* what, const std::string& then, const std::string& now) {
    if (then != now) {
      mismatches.push_back(std::string(what) + ": the baseline's is '" + then +
                           "', this run's is '" + now + "'");
    }
  };
  check("matrix", baseline.matrix_name, current.matrix_name);
  check("device", baseline.device, current.device);
  check("driver", baseline.driver, current.driver);
  return mismatches;
}

BaselineComparison compare_side_by_side(const TimingRounds& reference,
                                        const TimingRounds& candidate, double max_slowdown) {
  BaselineComparison comparison;
  comparison.baseline_median_ms = pooled_median(reference);
  comparison.ratio = paired_median_ratio_interval(reference, candidate, kRatioSeed);
  comparison.verdict = verdict_of(comparison.ratio, max_slowdown);
  return comparison;
}

BaselineComparison compare_with_baseline(const TimingRounds& baseline, const TimingRounds& current,
                                         double max_slowdown) {
  BaselineComparison comparison;
  comparison.baseline_median_ms = pooled_median(baseline);
  comparison.ratio = median_ratio_interval(baseline, current, kRatioSeed);
  comparison.verdict = verdict_of(comparison.ratio, max_slowdown);
  return comparison;
}

}  // namespace attnfuzz
