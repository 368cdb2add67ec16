#include "perf/timing_statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <utility>

#include "core/splitmix.h"

namespace attnfuzz {
namespace {

// A uniform index below `size`, SplitMix64's next output from `state` (the modulo's bias is below
// 2^-40 for the sample sizes here).
std::size_t draw_index(std::uint64_t& state, std::size_t size) {
  state += kSplitMix64Gamma;
  return static_cast<std::size_t>(splitmix64_finalise(state) % size);
}

double median_of(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  return percentile(values, 0.5);
}

// The median of a resample of `sample` with replacement, into `scratch`.
double resampled_median(std::span<const double> sample, std::uint64_t& state,
                        std::vector<double>& scratch) {
  scratch.resize(sample.size());
  for (double& value : scratch) value = sample[draw_index(state, sample.size())];
  return median_of(scratch);
}

// The 2.5% and 97.5% quantiles of `estimates`.
std::pair<double, double> central_95(std::vector<double>& estimates) {
  std::sort(estimates.begin(), estimates.end());
  return {percentile(estimates, 0.025), percentile(estimates, 0.975)};
}

}  // namespace

double percentile(std::span<const double> sorted, double fraction) {
  const double position = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = position - static_cast<double>(below);
  return sorted[below] + weight * (sorted[above] - sorted[below]);
}

TimingSummary summarize_timings(std::span<const double> milliseconds, std::uint64_t seed) {
  std::vector<double> sorted(milliseconds.begin(), milliseconds.end());
  std::sort(sorted.begin(), sorted.end());
  TimingSummary summary;
  summary.samples = static_cast<int>(sorted.size());
  summary.median_ms = percentile(sorted, 0.5);
  summary.p95_ms = percentile(sorted, 0.95);
  summary.p99_ms = percentile(sorted, 0.99);
  summary.min_ms = sorted.front();
  summary.max_ms = sorted.back();
  summary.mean_ms =
      std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  double squares = 0;
  for (double value : sorted) squares += (value - summary.mean_ms) * (value - summary.mean_ms);
  // The sample standard deviation (n - 1), as the seed's numpy.std(ddof=1) had it; 0 for one
  // sample.
  summary.std_ms =
      sorted.size() > 1 ? std::sqrt(squares / static_cast<double>(sorted.size() - 1)) : 0.0;
  summary.cv = summary.mean_ms > 0 ? summary.std_ms / summary.mean_ms : 0.0;

  std::uint64_t state = seed;
  std::vector<double> scratch, medians(kBootstrapResamples);
  for (double& median : medians) median = resampled_median(sorted, state, scratch);
  std::tie(summary.ci95_median_low_ms, summary.ci95_median_high_ms) = central_95(medians);
  return summary;
}

RatioInterval median_ratio_interval(std::span<const double> baseline,
                                    std::span<const double> current, std::uint64_t seed) {
  std::vector<double> scratch(baseline.begin(), baseline.end());
  const double baseline_median = median_of(scratch);
  scratch.assign(current.begin(), current.end());
  RatioInterval interval;
  interval.ratio = median_of(scratch) / baseline_median;
  std::uint64_t state = seed;
  std::vector<double> ratios(kBootstrapResamples);
  for (double& ratio : ratios) {
    const double resampled_baseline = resampled_median(baseline, state, scratch);
    ratio = resampled_median(current, state, scratch) / resampled_baseline;
  }
  std::tie(interval.low, interval.high) = central_95(ratios);
  return interval;
}

bool is_regression(const RatioInterval& interval, double max_slowdown) {
  return interval.low > 1.0 + max_slowdown;
}

bool is_improvement(const RatioInterval& interval, double max_slowdown) {
  return interval.high < 1.0 / (1.0 + max_slowdown);
}

}  // namespace attnfuzz
