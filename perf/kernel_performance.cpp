// SPDX-License-Identifier: BSD-3-Clause
#include "perf/kernel_performance.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <stdexcept>

namespace attnfuzz {
namespace {

// The bootstrap of a report is seeded by a constant: the same samples give the same interval.
constexpr std::uint64_t kSummarySeed = 0x6174746e66757a7a;  // "attnfuzz"

constexpr std::string_view kVerdictNames[] = {"unchanged", "regression", "improvement",
                                              "not_in_baseline", "suspect"};

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

TimingRounds rounds_from_json(const nlohmann::json& rounds, const std::string& field) {
  if (!rounds.is_array() || rounds.empty()) malformed(field, "expected a non-empty array");
  TimingRounds parsed;
  for (const nlohmann::json& round : rounds) {
    if (!round.is_array() || round.empty()) {
      malformed(field, "expected non-empty arrays of milliseconds, found " + round.dump());
    }
    std::vector<double>& samples = parsed.emplace_back();
    for (const nlohmann::json& sample : round) {
      if (!sample.is_number() || !std::isfinite(sample.get<double>()) || sample.get<double>() < 0) {
        malformed(field, "expected milliseconds (numbers >= 0), found " + sample.dump());
      }
      samples.push_back(sample.get<double>());
    }
  }
  return parsed;
}

nlohmann::json comparison_to_json(const BaselineComparison& comparison, const char* median_key) {
  // Nothing to compare with: null, not placeholder figures.
  const bool compared = comparison.verdict != PerformanceVerdict::not_in_baseline;
  return {
      {"verdict", std::string(performance_verdict_name(comparison.verdict))},
      {median_key,
       compared ? nlohmann::json(comparison.baseline_median_ms) : nlohmann::json(nullptr)},
      {"ratio", compared ? nlohmann::json(comparison.ratio.ratio) : nlohmann::json(nullptr)},
      {"ratio_ci95", compared ? nlohmann::json{comparison.ratio.low, comparison.ratio.high}
                              : nlohmann::json(nullptr)},
      {"suspect", comparison.suspect},
  };
}

BaselineComparison comparison_from_json(const nlohmann::json& record, const std::string& field,
                                        const char* median_key) {
  BaselineComparison comparison;
  const std::string verdict = text(record, "verdict");
  bool known = false;
  for (std::size_t index = 0; index < std::size(kVerdictNames); ++index) {
    if (kVerdictNames[index] == verdict) {
      comparison.verdict = static_cast<PerformanceVerdict>(index);
      known = true;
    }
  }
  if (!known) malformed(field + "/verdict", "unknown verdict \"" + verdict + "\"");
  // Reports of earlier versions have no "suspect" here.
  if (const auto found = record.find("suspect"); found != record.end() && found->is_string()) {
    comparison.suspect = found->get<std::string>();
  }
  if (comparison.verdict == PerformanceVerdict::not_in_baseline) return comparison;  // null figures
  if (!record.contains(median_key) || !record[median_key].is_number() ||
      !record.contains("ratio") || !record["ratio"].is_number()) {
    malformed(field, std::string("expected numbers ") + median_key + " and ratio, found " +
                         record.dump().substr(0, 200));
  }
  comparison.baseline_median_ms = record[median_key].get<double>();
  comparison.ratio.ratio = record["ratio"].get<double>();
  const nlohmann::json& interval = member(record, "ratio_ci95");
  if (!interval.is_array() || interval.size() != 2 || !interval[0].is_number() ||
      !interval[1].is_number()) {
    malformed(field + "/ratio_ci95", "expected [low, high]");
  }
  comparison.ratio.low = interval[0].get<double>();
  comparison.ratio.high = interval[1].get<double>();
  return comparison;
}

}  // namespace

const BaselineComparison* gate_comparison(const KernelPerformance& performance) {
  if (performance.reference) {
    return performance.reference->comparison ? &*performance.reference->comparison : nullptr;
  }
  return performance.baseline ? &*performance.baseline : nullptr;
}

std::string_view performance_verdict_name(PerformanceVerdict verdict) {
  return kVerdictNames[static_cast<int>(verdict)];
}

void summarize_performance(KernelPerformance& performance) {
  if (performance.rounds_ms.empty()) return;
  performance.summary = summarize_timings(performance.rounds_ms, kSummarySeed);
  if (performance.reference && !performance.reference->rounds_ms.empty()) {
    performance.reference->summary =
        summarize_timings(performance.reference->rounds_ms, kSummarySeed);
  }
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
  performance.other_work_cores = std::max(performance.other_work_cores, later.other_work_cores);
  if (performance.reference && later.reference) {
    TimingRounds& blocks = performance.reference->rounds_ms;
    blocks.insert(blocks.end(), later.reference->rounds_ms.begin(),
                  later.reference->rounds_ms.end());
  }
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
      {"other_work_cores", performance.other_work_cores},
      {"rounds_ms", performance.rounds_ms},
  };
  if (performance.baseline) {
    record["baseline"] = comparison_to_json(*performance.baseline, "baseline_median_ms");
  }
  if (performance.reference) {
    const ReferenceTiming& reference = *performance.reference;
    const TimingSummary& its = reference.summary;
    record["reference"] = {
        {"kernel", reference.kernel},
        {"plant", reference.plant},
        {"unavailable", reference.unavailable},
        {"median_time_ms", its.median_ms},
        {"ci95_median_ms", {its.ci95_median_low_ms, its.ci95_median_high_ms}},
        {"p95_time_ms", its.p95_ms},
        {"cv", its.cv},
        {"repetitions", its.samples},
        {"rounds_ms", reference.rounds_ms},
        {"comparison", reference.comparison
                           ? comparison_to_json(*reference.comparison, "reference_median_ms")
                           : nlohmann::json(nullptr)},
    };
  }
  return record;
}

KernelPerformance performance_from_json(const nlohmann::json& record, bool summarize) {
  KernelPerformance performance;
  performance.rounds_ms = rounds_from_json(member(record, "rounds_ms"), "rounds_ms");
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
  // Reports of earlier versions have no other_work_cores.
  if (const auto found = record.find("other_work_cores");
      found != record.end() && found->is_number() && found->get<double>() >= 0) {
    performance.other_work_cores = found->get<double>();
  }
  if (const auto found = record.find("baseline"); found != record.end()) {
    performance.baseline = comparison_from_json(*found, "baseline", "baseline_median_ms");
  }
  if (const auto found = record.find("reference"); found != record.end() && !found->is_null()) {
    ReferenceTiming reference;
    reference.kernel = text(*found, "kernel");
    reference.plant = text(*found, "plant");
    reference.unavailable = text(*found, "unavailable");
    if (const auto comparison = found->find("comparison");
        comparison != found->end() && !comparison->is_null()) {
      reference.comparison =
          comparison_from_json(*comparison, "reference/comparison", "reference_median_ms");
    }
    const nlohmann::json& blocks = member(*found, "rounds_ms");
    if (!reference.unavailable.empty() && blocks.empty()) {
      performance.reference = std::move(reference);
      if (summarize) summarize_performance(performance);
      return performance;
    }
    reference.rounds_ms = rounds_from_json(blocks, "reference/rounds_ms");
    if (reference.rounds_ms.size() != performance.rounds_ms.size()) {
      malformed("reference/rounds_ms", "expected as many blocks as rounds_ms has (" +
                                           std::to_string(performance.rounds_ms.size()) +
                                           "), found " +
                                           std::to_string(reference.rounds_ms.size()));
    }
    performance.reference = std::move(reference);
  }
  if (summarize) summarize_performance(performance);
  return performance;
}

}  // namespace attnfuzz
