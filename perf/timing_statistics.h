// The statistics of a kernel's timings that the performance gate (fuzz_attention --bench) reports
// and compares. Timings on a shared machine are skewed (a preempted repetition is slow, never
// fast) and sometimes bimodal, so the gate leans on the median and on intervals that assume no
// distribution: percentile bootstrap intervals, resampled with a fixed seed so that a report is
// reproducible. Mean, standard deviation and CV are reported beside them, under the names the
// seed's benchmark used.
#pragma once

#include <cstdint>
#include <span>
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

// Every statistic of `milliseconds` (not empty); `seed` seeds the bootstrap.
TimingSummary summarize_timings(std::span<const double> milliseconds, std::uint64_t seed);

// The ratio of medians current / baseline, with its bootstrap 95% interval (each sample resampled
// on its own, the ratio of the two resampled medians taken each time).
struct RatioInterval {
  double ratio = 1, low = 1, high = 1;
};
RatioInterval median_ratio_interval(std::span<const double> baseline,
                                    std::span<const double> current, std::uint64_t seed);

// A regression: the current run is slower than the baseline by more than `max_slowdown` (0.03 for
// 3%) at 95% confidence, i.e. the interval's low end lies above 1 + max_slowdown. A slowdown within
// the noise, or one no larger than allowed, is not.
bool is_regression(const RatioInterval& interval, double max_slowdown);

// An improvement: faster than the baseline by more than `max_slowdown` at 95% confidence.
bool is_improvement(const RatioInterval& interval, double max_slowdown);

}  // namespace attnfuzz
