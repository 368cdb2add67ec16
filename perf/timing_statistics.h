// SPDX-License-Identifier: BSD-3-Clause
// The statistics of a kernel's timings that the performance gate (fuzz_attention --bench) reports
// and compares. Timings on a shared machine are skewed (a preempted repetition is slow, never
// fast) and sometimes bimodal, so the gate leans on the median and on intervals that assume no
// distribution: percentile bootstrap intervals, resampled with a fixed seed so that a report is
// reproducible. Mean, standard deviation and CV are reported beside them, under the names the
// seed's benchmark used.
//
// A shared machine also drifts: for seconds at a time everything runs 10-15% slower or faster
// (measured on a 2-core cloud machine: cpu_flash's median moved that much between two runs of the
// same build, and within one run from one second to the next). Repetitions taken back to back share
// that state, so their spread says nothing of it. Timings are therefore taken in rounds spread over
// the run, and the intervals resample rounds first, then repetitions within each round drawn (the
// hierarchical bootstrap): the drift between rounds widens the interval, as it should.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace attnfuzz {

// How many bootstrap resamples an interval is built from: the 2.5% and 97.5% quantiles of 2000
// resamples move by well under 1% of the interval's width from one seed to another.
inline constexpr int kBootstrapResamples = 2000;

struct TimingSummary {
  int samples = 0;
  double median_ms = 0, mean_ms = 0, std_ms = 0, min_ms = 0, max_ms = 0;
  double p95_ms = 0, p99_ms = 0;
  double cv = 0;                                           // std / mean
  double ci95_median_low_ms = 0, ci95_median_high_ms = 0;  // bootstrap 95% interval of the median
};

// The value below which `fraction` (0..1) of `sorted` lies, interpolating linearly between the two
// nearest ranks (the definition numpy and R call type 7). `sorted` is ascending and not empty.
double percentile(std::span<const double> sorted, double fraction);

// Timings in rounds: each round a stretch of back-to-back repetitions, rounds apart in time.
using TimingRounds = std::vector<std::vector<double>>;

// The median of every repetition of `rounds` together (not empty).
double pooled_median(const TimingRounds& rounds);

// Every statistic of the pooled repetitions of `rounds` (none empty, at least one), the median's
// interval from the hierarchical bootstrap; `seed` seeds it.
TimingSummary summarize_timings(const TimingRounds& rounds, std::uint64_t seed);
// The same for one round of `milliseconds` (not empty).
TimingSummary summarize_timings(std::span<const double> milliseconds, std::uint64_t seed);

// The distribution-free 95% interval of the median from order statistics: the sorted sample's
// values at ranks n/2 -+ 0.98 sqrt(n) (the normal approximation to the binomial). Cheap enough to
// recompute while timing goes on, to decide when to stop; reports give the bootstrap interval.
// `sorted` is ascending and not empty.
std::pair<double, double> median_order_interval(std::span<const double> sorted);

// The ratio of pooled medians current / baseline, with its bootstrap 95% interval (each side
// resampled on its own, rounds then repetitions, the ratio of the two resampled medians taken
// each time).
struct RatioInterval {
  double ratio = 1, low = 1, high = 1;
};
RatioInterval median_ratio_interval(const TimingRounds& baseline, const TimingRounds& current,
                                    std::uint64_t seed);
RatioInterval median_ratio_interval(std::span<const double> baseline,
                                    std::span<const double> current, std::uint64_t seed);

// The ratio of a candidate's timings to a reference's taken side by side (fuzz_attention --bench
// --against-*): block i of `candidate` and of `reference` ran back to back, so that both saw the
// same state of the machine. The ratio is the median over the blocks of each block's ratio of
// medians (a drift between blocks cancels within each); its interval the bootstrap's: blocks drawn
// with replacement, the same block of both sides together, then repetitions within each side's
// block. `reference` and `candidate` have as many blocks, none empty.
RatioInterval paired_median_ratio_interval(const TimingRounds& reference,
                                           const TimingRounds& candidate, std::uint64_t seed);

// A regression: the current run is slower than the baseline by more than `max_slowdown` (0.03 for
// 3%) at 95% confidence, i.e. the interval's low end lies above 1 + max_slowdown. A slowdown within
// the noise, or one no larger than allowed, is not.
bool is_regression(const RatioInterval& interval, double max_slowdown);

// An improvement: faster than the baseline by more than `max_slowdown` at 95% confidence.
bool is_improvement(const RatioInterval& interval, double max_slowdown);

}  // namespace attnfuzz
