// SPDX-License-Identifier: BSD-3-Clause
// The false-alarm run: many random valid cases on a correct kernel, counting the cases the
// harness fails. Every case is checked against the oracle with every check a run makes (the
// element bound, FlashAttention's rule, the bias test, the determinism check's second run);
// every tenth dense one also against every forward metamorphic property. Cases are drawn as the
// property search draws them: other softmax scales, long rows, decode steps (the split-KV path),
// head dims no built-in kernel supports, shapes past CUDA's grid limits (1 case in 64), every
// tensor placement, and the attention variants (packed and paged, windows, softcap, ALiBi, the
// log-sum-exp) each on about half the time. A harness that cries wolf is worse than none: the count
// must be zero.
//
// With --backward each case runs the kernel's backward pass instead (run/backward_check.h: dO
// drawn from the case's distribution, every gradient element against the float64 gradients under
// the backward bound), and every tenth case against the backward's metamorphic properties (which
// judge its dense ones); drawn without paged K/V, which it does not run; cases its backward
// declines (head dims it has no tiles for) are skipped.
//
// A kernel with other numerics is judged by what it declares: --plant NAME runs cpu_flash with a
// planted bug that is such numerics (pv_fp16_accumulation, fp8_p_rounded_to_e4m3,
// fp8_dequantized_to_output), --accumulation, --probabilities and --dequantize-to declare them as
// fuzz_attention's flags do (oracle/declared_numerics.h).
//
//   bench_false_alarms [--cases N] [--first F] [--seed S] [--kernel NAME] [--jobs J] [--backward]
//                      [--plant NAME] [--accumulation A[/KEYS]] [--probabilities P]
//                      [--dequantize-to D]
//                      [--only FEATURE]
// Case i is drawn from (S, i) alone: --first F runs cases F to F + N - 1 of the seed's stream, so
// that a long run can be done in parts that together are the one run. --only FEATURE (a feature's
// id: fp8_inputs, paged_kv, varlen, ...) runs, of those cases, only the ones that use it and passes
// over the rest unrun, so that a run can spend its time on one axis (10^5 fp8 cases are about 6.5
// times as many of the stream).
// Cases are spread over J threads (default: one per core), each running one case at a time on a
// single thread, which keeps every core busy on small cases. Prints each false alarm (case JSON
// and reason), coverage by distribution and dtype and by variant and placement, the worst
// error_ratio and bias ratio seen, the skips by cause and the throughput. SIGINT or SIGTERM stops
// it early: the cases under way finish, the summary covers the cases run, and it says which
// --first goes on from there (every case below it ran). Exit code 1 when there was any false
// alarm.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "case/case_codec.h"
#include "core/clock.h"
#include "core/parallel_for.h"
#include "core/problem_features.h"
#include "fuzz/case_generator.h"
#include "fuzz/properties.h"
#include "kernels/cuda_launch_limits.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"
#include "kernels/planted_bug.h"
#include "oracle/declared_numerics.h"
#include "run/backward_check.h"

namespace attnfuzz {
namespace {

// What one thread saw; merged at the end.
struct Tally {
  long long cases = 0;
  std::map<std::string, long long> checked_by_class;
  std::map<std::string, long long> checked_by_feature;
  std::map<std::string, long long> skipped_by_cause;
  long long false_alarms = 0, skipped = 0, property_checks = 0, passed_over = 0;
  long long next_index = 0;  // the first of this thread's indices not finished
  double worst_ratio = 0.0, worst_bias_ratio = 0.0;
  std::string worst_case;

  void merge(const Tally& other) {
    cases += other.cases;
    for (const auto& [name, count] : other.checked_by_class) checked_by_class[name] += count;
    for (const auto& [name, count] : other.checked_by_feature) checked_by_feature[name] += count;
    for (const auto& [name, count] : other.skipped_by_cause) skipped_by_cause[name] += count;
    false_alarms += other.false_alarms;
    skipped += other.skipped;
    property_checks += other.property_checks;
    passed_over += other.passed_over;
    if (other.worst_ratio > worst_ratio) {
      worst_ratio = other.worst_ratio;
      worst_case = other.worst_case;
    }
    worst_bias_ratio = std::max(worst_bias_ratio, other.worst_bias_ratio);
  }
};

std::mutex output_mutex;
std::atomic<bool> stop_requested{false};

extern "C" void request_stop(int) {
  stop_requested = true;
}

void report_false_alarm(std::string_view check, const AttentionCase& attention_case,
                        const std::string& reason) {
  const std::lock_guard<std::mutex> lock(output_mutex);
  std::printf("FALSE ALARM %s %s\n    %s\n", std::string(check).c_str(),
              case_keys_to_json(attention_case).dump().c_str(), reason.c_str());
  std::fflush(stdout);
}

// A case that was judged, counted by its distribution and dtype and by the variants it uses.
AttentionProblem count_checked(const AttentionCase& attention_case, Tally& tally) {
  ++tally.checked_by_class[std::string(distribution_name(attention_case.data)) + " " +
                           std::string(dtype_name(attention_case.dtype))];
  const AttentionProblem problem = problem_of(attention_case);
  for (const ProblemFeatureInfo& info : kProblemFeatures) {
    if (info.used_by(problem)) ++tally.checked_by_feature[std::string(info.name)];
  }
  return problem;
}

// Every metamorphic property of `pass` on the case.
void check_metamorphic(PropertyPass pass, const AttentionCase& attention_case,
                       const RunSettings& settings, Tally& tally) {
  for (const PropertyInfo& info : kProperties) {
    if (info.property == Property::matches_oracle || info.pass != pass) continue;
    ++tally.property_checks;
    if (const auto failure = check_property(info.property, attention_case, settings).failure) {
      ++tally.false_alarms;
      report_false_alarm(info.name, attention_case, *failure);
    }
  }
}

// The features --only names, by their ids.
struct FeatureId {
  std::string_view id;
  ProblemFeature feature;
};
constexpr FeatureId kFeatureIds[] = {
#define ATTNFUZZ_FEATURE_ID(id, bit, name, used) {#id, ProblemFeature::id},
    ATTNFUZZ_PROBLEM_FEATURES(ATTNFUZZ_FEATURE_ID)
#undef ATTNFUZZ_FEATURE_ID
};

// Case `index` of the seed's stream; with `only`, nothing when it does not use that feature.
std::optional<AttentionCase> drawn_case(const rc::Gen<AttentionCase>& generator, std::uint64_t seed,
                                        long long index, std::optional<ProblemFeature> only,
                                        Tally& tally) {
  AttentionCase attention_case =
      generator(rc::Random(seed * 1000003 + static_cast<std::uint64_t>(index)), 100).value();
  if (only && (features_of(problem_of(attention_case)) & static_cast<std::uint32_t>(*only)) == 0) {
    ++tally.passed_over;
    return std::nullopt;
  }
  return attention_case;
}

// Case `index` of the run: against the oracle, and every tenth against every forward property
// (which passes over a case with a variant: the relations are written for dense cases).
void check_case(const rc::Gen<AttentionCase>& generator, std::uint64_t seed, long long index,
                std::optional<ProblemFeature> only, const RunSettings& settings, Tally& tally) {
  const std::optional<AttentionCase> drawn = drawn_case(generator, seed, index, only, tally);
  if (!drawn) return;
  const AttentionCase& attention_case = *drawn;
  const CaseResult result = CaseRunner(settings).run(attention_case);
  ++tally.cases;
  if (result.status == CaseStatus::skip) {
    ++tally.skipped;
    ++tally.skipped_by_cause[std::string(skip_cause_name(result.skip_cause))];
    return;
  }
  const AttentionProblem problem = count_checked(attention_case, tally);
  if (attention_case.seq_len_q <= kMaxKvSplitQueryRows &&
      attention_case.seq_len_k > kKeysPerKvSplit) {
    ++tally.checked_by_feature["decode shapes (split-KV in flash kernels)"];
  }
  if (attention_case.batch * attention_case.heads > kMaxGridYZ ||
      attention_case.seq_len_q > kMaxGridYZ) {
    ++tally.checked_by_feature["past a grid y/z launch limit (65535 pairs, batches or rows)"];
  }
  if (attention_case.placement != Placement::shared) {
    ++tally
          .checked_by_feature["placement " + std::string(placement_name(attention_case.placement))];
  }
  tally.worst_bias_ratio = std::max(tally.worst_bias_ratio, result.comparison.bias.ratio);
  if (result.comparison.error_ratio > tally.worst_ratio) {
    tally.worst_ratio = result.comparison.error_ratio;
    tally.worst_case = case_keys_to_json(attention_case).dump();
  }
  if (result.status == CaseStatus::fail) {
    ++tally.false_alarms;
    report_false_alarm("matches_oracle", attention_case, result.reason);
  }
  if (index % 10 == 0) check_metamorphic(PropertyPass::forward, attention_case, settings, tally);
}

// Case `index` of the run through the kernel's backward pass.
void check_backward_case(const rc::Gen<AttentionCase>& generator, std::uint64_t seed,
                         long long index, std::optional<ProblemFeature> only,
                         const AttentionKernel& kernel, Tally& tally) {
  const std::optional<AttentionCase> drawn = drawn_case(generator, seed, index, only, tally);
  if (!drawn) return;
  const AttentionCase& attention_case = *drawn;
  ++tally.cases;
  const SupportVerdict support = kernel.backward_support(problem_of(attention_case));
  if (!support.supported) {
    ++tally.skipped;
    ++tally.skipped_by_cause["declined by the backward"];
    return;
  }
  if (index % 10 == 0) {
    RunSettings settings;
    settings.backend = Backend::cpu;
    settings.kernel = std::string(kernel.name());
    check_metamorphic(PropertyPass::backward, attention_case, settings, tally);
  }
  const BackwardCheck check = check_backward(kernel, attention_case, PlantedBug::none);
  if (!check.error.empty()) {
    ++tally.false_alarms;
    report_false_alarm("backward", attention_case, check.error);
    return;
  }
  if (check.comparison.inconclusive) {
    ++tally.skipped;
    ++tally.skipped_by_cause["inconclusive"];
    return;
  }
  const AttentionProblem problem = count_checked(attention_case, tally);
  if (problem.group_size() > 1) ++tally.checked_by_feature["GQA/MQA (dK, dV summed over a group)"];
  if (check.comparison.bound_ratio > tally.worst_ratio) {
    tally.worst_ratio = check.comparison.bound_ratio;
    tally.worst_case = case_keys_to_json(attention_case).dump();
  }
  if (check.comparison.failed) {
    ++tally.false_alarms;
    report_false_alarm("backward", attention_case, check.comparison.reason);
  }
}

}  // namespace
}  // namespace attnfuzz

int main(int argc, char** argv) {
  using namespace attnfuzz;
  long long cases = 100000;
  long long first = 0;
  std::uint64_t seed = 1;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  RunSettings settings;
  settings.backend = Backend::cpu;
  bool backward = false;
  std::string accumulation = "fp32", probabilities = "output", dequantize_to = "none";
  std::optional<ProblemFeature> only;
  for (int arg = 1; arg < argc; ++arg) {
    if (std::strcmp(argv[arg], "--backward") == 0) {
      backward = true;
      continue;
    }
    if (arg + 1 >= argc) break;
    if (std::strcmp(argv[arg], "--cases") == 0) cases = std::atoll(argv[arg + 1]);
    if (std::strcmp(argv[arg], "--first") == 0) first = std::max(0LL, std::atoll(argv[arg + 1]));
    if (std::strcmp(argv[arg], "--seed") == 0) seed = std::strtoull(argv[arg + 1], nullptr, 10);
    if (std::strcmp(argv[arg], "--kernel") == 0) settings.kernel = argv[arg + 1];
    if (std::strcmp(argv[arg], "--jobs") == 0) jobs = std::max(1, std::atoi(argv[arg + 1]));
    if (std::strcmp(argv[arg], "--plant") == 0) {
      const std::optional<PlantedBug> plant = parse_planted_bug(argv[arg + 1]);
      if (!plant) {
        std::fprintf(stderr, "bench_false_alarms: --plant: unknown planted bug %s\n",
                     argv[arg + 1]);
        return 3;
      }
      settings.plant = *plant;
    }
    if (std::strcmp(argv[arg], "--accumulation") == 0) accumulation = argv[arg + 1];
    if (std::strcmp(argv[arg], "--probabilities") == 0) probabilities = argv[arg + 1];
    if (std::strcmp(argv[arg], "--dequantize-to") == 0) dequantize_to = argv[arg + 1];
    if (std::strcmp(argv[arg], "--only") == 0) {
      const auto row =
          std::find_if(std::begin(kFeatureIds), std::end(kFeatureIds),
                       [&](const FeatureId& feature) { return feature.id == argv[arg + 1]; });
      if (row == std::end(kFeatureIds)) {
        std::fprintf(stderr, "bench_false_alarms: --only: no feature %s (one of:", argv[arg + 1]);
        for (const FeatureId& feature : kFeatureIds) {
          std::fprintf(stderr, " %s", std::string(feature.id).c_str());
        }
        std::fprintf(stderr, ")\n");
        return 3;
      }
      only = row->feature;
    }
    ++arg;
  }
  std::optional<DeclaredNumerics> numerics = parse_accumulation(accumulation);
  if (numerics) numerics = parse_probabilities(probabilities, *numerics);
  if (numerics) numerics = parse_dequantization(dequantize_to, *numerics);
  if (!numerics) {
    std::fprintf(stderr,
                 "bench_false_alarms: cannot read --accumulation %s --probabilities %s "
                 "--dequantize-to %s\n",
                 accumulation.c_str(), probabilities.c_str(), dequantize_to.c_str());
    return 3;
  }
  settings.numerics = *numerics;
  if (backward && (settings.plant != PlantedBug::none || settings.numerics.declared())) {
    std::fprintf(stderr,
                 "bench_false_alarms: --backward runs a correct kernel's backward under the locked "
                 "numerics: no --plant, --accumulation, --probabilities or --dequantize-to\n");
    return 3;
  }
  const AttentionKernel* backward_kernel = nullptr;
  if (backward) {
    backward_kernel = find_kernel(settings.kernel.empty() ? "cpu_flash" : settings.kernel);
    if (backward_kernel == nullptr) {
      std::fprintf(stderr, "bench_false_alarms: no built-in kernel %s\n", settings.kernel.c_str());
      return 3;
    }
  }
  set_default_thread_count(1);  // one case per thread: the jobs are the parallelism
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  // As the property search's oracle check draws; for the backward, without paged K/V (which it
  // does not run) so that its draws are not spent on cases it declines.
  KernelReach reach;
  if (backward) reach.features &= ~static_cast<std::uint32_t>(ProblemFeature::paged_kv);
  if (only && (reach.features & static_cast<std::uint32_t>(*only)) == 0) {
    std::fprintf(stderr, "bench_false_alarms: --only: these runs never draw that feature\n");
    return 3;
  }
  const rc::Gen<AttentionCase> generator = search_cases(reach);
  std::vector<Tally> tallies(static_cast<std::size_t>(jobs));
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int job = 0; job < jobs; ++job) {
    threads.emplace_back([&, job] {
      Tally& tally = tallies[static_cast<std::size_t>(job)];
      tally.next_index = first + cases;
      for (long long index = first + job; index < first + cases; index += jobs) {
        if (stop_requested) {
          tally.next_index = index;
          break;
        }
        if (index > first && (index - first) % 10000 == 0) {
          const std::lock_guard<std::mutex> lock(output_mutex);
          std::fprintf(stderr, "%lld cases, %lld false alarms on this thread\n", index - first,
                       tally.false_alarms);
        }
        if (backward) {
          check_backward_case(generator, seed, index, only, *backward_kernel, tally);
        } else {
          check_case(generator, seed, index, only, settings, tally);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  Tally total;
  long long resume_at = first + cases;
  for (const Tally& tally : tallies) {
    total.merge(tally);
    resume_at = std::min(resume_at, tally.next_index);
  }

  const double seconds = seconds_since(started);
  std::printf("\ncases checked against the oracle, by distribution and dtype:\n");
  for (const auto& [name, count] : total.checked_by_class)
    std::printf("  %-28s %lld\n", name.c_str(), count);
  std::printf("cases checked against the oracle, by variant and placement:\n");
  for (const auto& [name, count] : total.checked_by_feature)
    std::printf("  %-44s %lld\n", name.c_str(), count);
  std::printf("worst %s: %.3f  %s\n", backward ? "bound ratio of a gradient" : "error_ratio",
              total.worst_ratio, total.worst_case.c_str());
  std::printf("worst bias ratio (1 fails): %.3f\n", total.worst_bias_ratio);
  for (const auto& [cause, count] : total.skipped_by_cause)
    std::printf("skipped as %s: %lld\n", cause.c_str(), count);
  if (only) {
    std::printf("passed over, not using %s: %lld\n",
                std::find_if(std::begin(kFeatureIds), std::end(kFeatureIds),
                             [&](const FeatureId& feature) { return feature.feature == *only; })
                    ->id.data(),
                total.passed_over);
  }
  std::printf(
      "%lld random cases (%lld skipped; from case %lld of seed %llu)%s, %lld metamorphic checks, "
      "%d jobs, %.0f s (%.0f cases/s)\n",
      total.cases, total.skipped, first, static_cast<unsigned long long>(seed),
      stop_requested ? ", stopped early" : "", total.property_checks, jobs, seconds,
      static_cast<double>(total.cases) / seconds);
  if (stop_requested) {
    // Every case below this index ran (some above it too, with several jobs).
    std::printf("to go on: --first %lld\n", resume_at);
  }
  std::printf("false alarms: %lld\n", total.false_alarms);
  return total.false_alarms == 0 ? 0 : 1;
}
