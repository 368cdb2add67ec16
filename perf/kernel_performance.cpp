// SPDX-License-Identifier: BSD-3-Clause
#include "perf/kernel_performance.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace attnfuzz {
namespace {

// The bootstrap of a report is seeded by a constant: the same samples give the same interval.
constexpr std::uint64_t kSummarySeed = 0x6174746e66757a7a;  // "attnfuzz"

constexpr std::string_view kVerdictNames[] = {"unchanged", "regression", "improvement",
                                              "not_in_baseline"};

[[noreturn]] void malformed(const std::string& field, const std::string& problem) {
  throw std::runtime_error("performance record, field " + field + ": " + problem);
}

const nlohmann::json& member(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) malformed(name, "expected an object around it");
  const auto found = object.find(name);
  if (found == object.end()) malformed(name, "missing");
  return *found;
}

double number(const nlohmann::json& object, const char* name) {
  const nlohmann::json& value = member(object, name);
  if (!value.is_number()) malformed(name, "expected a number");
  return value.get<double>();
}

std::string text(const nlohmann::json& object, const char* name) {
  const nlohmann::json& value = member(object, name);
  if (!value.is_string()) malformed(name, "expected a string");
  return value.get<std::string>();
}

}  // namespace

std::string_view performance_verdict_name(PerformanceVerdict verdict) {
  return kVerdictNames[static_cast<int>(verdict)];
}

void summarize_performance(KernelPerformance& performance) {
  if (performance.rounds_ms.empty()) return;
  performance.summary = summarize_timings(performance.rounds_ms, kSummarySeed);
  const double seconds = performance.summary.median_ms * 1e-3;
  performance.throughput_gflops = seconds > 0 ? performance.flops / seconds / 1e9 : 0;
  performance.bandwidth_gb_s = seconds > 0 ? performance.bytes / seconds / 1e9 : 0;
  // The roofline's fraction is taken at the median too: the GPU's peaks stay, the rest follows.
  if (performance.roofline) {
    const RooflineVerdict& before = *performance.roofline;
    const GpuPeak peak{"", before.gpu, before.peak_tflops, before.peak_bandwidth_gb_s};
    performance.roofline =
        roofline_verdict(peak, performance.flops, performance.bytes, performance.summary.median_ms);
  }
}

void add_rounds(KernelPerformance& performance, const KernelPerformance& later) {
  performance.rounds_ms.insert(performance.rounds_ms.end(), later.rounds_ms.begin(),
                               later.rounds_ms.end());
  performance.warmup_runs += later.warmup_runs;
  performance.stopped_because = later.stopped_because;
  performance.machine_after = later.machine_after;
  if (performance.suspect.empty()) performance.suspect = later.suspect;
  summarize_performance(performance);
}

nlohmann::json performance_to_json(const KernelPerformance& performance) {
  const TimingSummary& summary = performance.summary;
  nlohmann::json record = {
      {"mean_time_ms", summary.mean_ms},
      {"std_time_ms", summary.std_ms},
      {"throughput_gflops", performance.throughput_gflops},
      {"bandwidth_gb_s", performance.bandwidth_gb_s},
      {"median_time_ms", summary.median_ms},
      {"p95_time_ms", summary.p95_ms},
      {"p99_time_ms", summary.p99_ms},
      {"min_time_ms", summary.min_ms},
      {"max_time_ms", summary.max_ms},
      {"ci95_median_ms", {summary.ci95_median_low_ms, summary.ci95_median_high_ms}},
      {"cv", summary.cv},
      {"repetitions", summary.samples},
      {"rounds", performance.rounds_ms.size()},
      {"warmup_runs", performance.warmup_runs},
      {"clock", performance.clock},
      {"l2_flushed", performance.l2_flushed},
      {"stopped_because", performance.stopped_because},
      {"flops", performance.flops},
      {"bytes", performance.bytes},
      {"roofline",
       performance.roofline ? roofline_to_json(*performance.roofline) : nlohmann::json(nullptr)},
      {"machine_before", performance.machine_before},
      {"machine_after", performance.machine_after},
      {"suspect", performance.suspect},
      {"rounds_ms", performance.rounds_ms},
  };
  if (performance.baseline) {
    const BaselineComparison& baseline = *performance.baseline;
    // A case the baseline did not time has nothing to compare with: null, not placeholder figures.
    const bool compared = baseline.verdict != PerformanceVerdict::not_in_baseline;
    record["baseline"] = {
        {"verdict", std::string(performance_verdict_name(baseline.verdict))},
        {"baseline_median_ms",
         compared ? nlohmann::json(baseline.baseline_median_ms) : nlohmann::json(nullptr)},
        {"ratio", compared ? nlohmann::json(baseline.ratio.ratio) : nlohmann::json(nullptr)},
        {"ratio_ci95", compared ? nlohmann::json{baseline.ratio.low, baseline.ratio.high}
                                : nlohmann::json(nullptr)},
    };
  }
  return record;
}

KernelPerformance performance_from_json(const nlohmann::json& record, bool summarize) {
  KernelPerformance performance;
  const nlohmann::json& rounds = member(record, "rounds_ms");
  if (!rounds.is_array() || rounds.empty()) malformed("rounds_ms", "expected a non-empty array");
  for (const nlohmann::json& round : rounds) {
    if (!round.is_array() || round.empty()) {
      malformed("rounds_ms", "expected non-empty arrays of milliseconds, found " + round.dump());
    }
    std::vector<double>& samples = performance.rounds_ms.emplace_back();
    for (const nlohmann::json& sample : round) {
      if (!sample.is_number() || !std::isfinite(sample.get<double>()) || sample.get<double>() < 0) {
        malformed("rounds_ms", "expected milliseconds (numbers >= 0), found " + sample.dump());
      }
      samples.push_back(sample.get<double>());
    }
  }
  const nlohmann::json& warmup_runs = member(record, "warmup_runs");
  if (!warmup_runs.is_number_integer() || warmup_runs.get<std::int64_t>() < 0 ||
      warmup_runs.get<std::int64_t>() > std::numeric_limits<int>::max()) {
    malformed("warmup_runs", "expected a count of calls, found " + warmup_runs.dump());
  }
  performance.warmup_runs = warmup_runs.get<int>();
  performance.clock = text(record, "clock");
  const nlohmann::json& flushed = member(record, "l2_flushed");
  if (!flushed.is_boolean()) malformed("l2_flushed", "expected true or false");
  performance.l2_flushed = flushed.get<bool>();
  performance.stopped_because = text(record, "stopped_because");
  performance.flops = number(record, "flops");
  performance.bytes = number(record, "bytes");
  if (const nlohmann::json& roofline = member(record, "roofline"); !roofline.is_null()) {
    RooflineVerdict verdict;
    verdict.gpu = text(roofline, "gpu");
    verdict.peak_tflops = number(roofline, "peak_tflops");
    verdict.peak_bandwidth_gb_s = number(roofline, "peak_bandwidth_gb_s");
    verdict.arithmetic_intensity = number(roofline, "arithmetic_intensity");
    verdict.ridge_point = number(roofline, "ridge_point");
    const std::string bound = text(roofline, "bound");
    if (bound != "compute" && bound != "memory") {
      malformed("roofline/bound", "expected \"compute\" or \"memory\", found \"" + bound + "\"");
    }
    verdict.compute_bound = bound == "compute";
    verdict.fraction_of_roof = number(roofline, "fraction_of_roof");
    performance.roofline = verdict;
  }
  performance.machine_before = member(record, "machine_before");
  performance.machine_after = member(record, "machine_after");
  performance.suspect = text(record, "suspect");
  if (const auto found = record.find("baseline"); found != record.end()) {
    BaselineComparison baseline;
    const std::string verdict = text(*found, "verdict");
    bool known = false;
    for (int index = 0; index < 4; ++index) {
      if (kVerdictNames[index] == verdict) {
        baseline.verdict = static_cast<PerformanceVerdict>(index);
        known = true;
      }
    }
    if (!known) malformed("baseline/verdict", "unknown verdict \"" + verdict + "\"");
    if (baseline.verdict == PerformanceVerdict::not_in_baseline) {  // its figures are null
      performance.baseline = baseline;
      if (summarize) summarize_performance(performance);
      return performance;
    }
    if (!found->is_object() || !found->contains("baseline_median_ms") ||
        !(*found)["baseline_median_ms"].is_number() || !found->contains("ratio") ||
        !(*found)["ratio"].is_number()) {
      malformed("baseline", "expected numbers baseline_median_ms and ratio, found " +
                                found->dump().substr(0, 200));
    }
    baseline.baseline_median_ms = (*found)["baseline_median_ms"].get<double>();
    baseline.ratio.ratio = (*found)["ratio"].get<double>();
    const nlohmann::json& interval = member(*found, "ratio_ci95");
    if (!interval.is_array() || interval.size() != 2 || !interval[0].is_number() ||
        !interval[1].is_number()) {
      malformed("baseline/ratio_ci95", "expected [low, high]");
    }
    baseline.ratio.low = interval[0].get<double>();
    baseline.ratio.high = interval[1].get<double>();
    performance.baseline = baseline;
  }
  if (summarize) summarize_performance(performance);
  return performance;
}

}  // namespace attnfuzz
