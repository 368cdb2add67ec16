// SPDX-License-Identifier: BSD-3-Clause
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
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (values.size() % 2 == 1) return *middle;
  return (*std::max_element(values.begin(), middle) + *middle) / 2;  // type 7 at 0.5
}

// The median of a hierarchical resample of `rounds` into `scratch`: as many rounds as there are,
// drawn with replacement, and from each drawn round as many repetitions as it has, drawn with
// replacement.
double resampled_median(const TimingRounds& rounds, std::uint64_t& state,
                        std::vector<double>& scratch) {
  scratch.clear();
  for (std::size_t draw = 0; draw < rounds.size(); ++draw) {
    const std::vector<double>& round = rounds[draw_index(state, rounds.size())];
    for (std::size_t repetition = 0; repetition < round.size(); ++repetition) {
      scratch.push_back(round[draw_index(state, round.size())]);
    }
  }
  return median_of(scratch);
}

std::vector<double> pooled(const TimingRounds& rounds) {
  std::vector<double> all;
  for (const std::vector<double>& round : rounds) all.insert(all.end(), round.begin(), round.end());
  return all;
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

double pooled_median(const TimingRounds& rounds) {
  std::vector<double> all = pooled(rounds);
  return median_of(all);
}

TimingSummary summarize_timings(const TimingRounds& rounds, std::uint64_t seed) {
  std::vector<double> sorted = pooled(rounds);
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
  for (double& median : medians) median = resampled_median(rounds, state, scratch);
  std::tie(summary.ci95_median_low_ms, summary.ci95_median_high_ms) = central_95(medians);
  return summary;
}

TimingSummary summarize_timings(std::span<const double> milliseconds, std::uint64_t seed) {
  return summarize_timings(TimingRounds{{milliseconds.begin(), milliseconds.end()}}, seed);
}

std::pair<double, double> median_order_interval(std::span<const double> sorted) {
  const double n = static_cast<double>(sorted.size());
  const double half_width = 0.98 * std::sqrt(n);  // 1.96 standard deviations of Binomial(n, 1/2)
  const auto low = static_cast<std::size_t>(std::max(0.0, std::floor(n / 2 - half_width)));
  const auto high = static_cast<std::size_t>(std::min(n - 1, std::ceil(n / 2 + half_width)));
  return {sorted[low], sorted[high]};
}

RatioInterval median_ratio_interval(const TimingRounds& baseline, const TimingRounds& current,
                                    std::uint64_t seed) {
  RatioInterval interval;
  interval.ratio = pooled_median(current) / pooled_median(baseline);
  std::vector<double> scratch;
  std::uint64_t state = seed;
  std::vector<double> ratios(kBootstrapResamples);
  for (double& ratio : ratios) {
    const double resampled_baseline = resampled_median(baseline, state, scratch);
    ratio = resampled_median(current, state, scratch) / resampled_baseline;
  }
  std::tie(interval.low, interval.high) = central_95(ratios);
  return interval;
}

RatioInterval median_ratio_interval(std::span<const double> baseline,
                                    std::span<const double> current, std::uint64_t seed) {
  return median_ratio_interval(TimingRounds{{baseline.begin(), baseline.end()}},
                               TimingRounds{{current.begin(), current.end()}}, seed);
}

RatioInterval paired_median_ratio_interval(const TimingRounds& reference,
                                           const TimingRounds& candidate, std::uint64_t seed) {
  const std::size_t blocks = std::min(reference.size(), candidate.size());
  std::vector<double> ratios(blocks), scratch;
  for (std::size_t block = 0; block < blocks; ++block) {
    std::vector<double> reference_block = reference[block], candidate_block = candidate[block];
    ratios[block] = median_of(candidate_block) / median_of(reference_block);
  }
  RatioInterval interval;
  interval.ratio = median_of(ratios);
  std::uint64_t state = seed;
  std::vector<double> estimates(kBootstrapResamples), resampled_ratios(blocks);
  // One block's median of a resample of its repetitions.
  const auto resampled_block_median = [&](const std::vector<double>& block) {
    scratch.clear();
    for (std::size_t repetition = 0; repetition < block.size(); ++repetition) {
      scratch.push_back(block[draw_index(state, block.size())]);
    }
    return median_of(scratch);
  };
  for (double& estimate : estimates) {
    for (double& ratio : resampled_ratios) {
      const std::size_t block = draw_index(state, blocks);
      const double reference_median = resampled_block_median(reference[block]);
      ratio = resampled_block_median(candidate[block]) / reference_median;
    }
    estimate = median_of(resampled_ratios);
  }
  std::tie(interval.low, interval.high) = central_95(estimates);
  return interval;
}

bool is_regression(const RatioInterval& interval, double max_slowdown) {
  return interval.low > 1.0 + max_slowdown;
}

bool is_improvement(const RatioInterval& interval, double max_slowdown) {
  return interval.high < 1.0 / (1.0 + max_slowdown);
}

}  // namespace attnfuzz
