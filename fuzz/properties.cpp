// SPDX-License-Identifier: BSD-3-Clause
// The properties (see properties.h) and the RapidCheck loop that searches for a counterexample
// within a wall-clock budget. Metamorphic properties run the kernel under test twice, on inputs
// that must give equal outputs, and compare either bitwise (when every correct kernel does exactly
// the same arithmetic in both runs) or within twice the oracle-free bound (when rounding may
// differ). Equal bits are demanded of two runs of one shape only from a kernel that is
// deterministic (not --allow-nondeterminism), and of two shapes (GQA and its MHA twin) only from a
// kernel that declares shape-independent arithmetic: a correct BLAS-based kernel may sum in another
// order for another shape.
#include "fuzz/properties.h"

#include <rapidcheck.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <ostream>
#include <sstream>

#include "case/case_codec.h"
#include "core/clock.h"
#include "core/problem_features.h"
#include "core/splitmix.h"
#include "core/write_file_atomically.h"
#include "fuzz/backward_properties.h"
#include "fuzz/case_generator.h"
#include "fuzz/kernel_reach.h"
#include "fuzz/property_schedule.h"
#include "oracle/tolerance.h"
#include "run/replay_command.h"

namespace attnfuzz {
namespace {

using Clock = std::chrono::steady_clock;

// Rounds a property may run without judging a case before the search gives its share away.
constexpr int kRoundsToJudgeOne = 5;

// The output of one kernel run, or what went wrong.
struct KernelOutput {
  std::vector<std::uint16_t> elements;  // the output buffer's span
  std::string error;                    // kernel error, changed input or out-of-bounds write
};

KernelOutput execute(const AttentionKernel& kernel, const AttentionProblem& problem,
                     const AttentionInputs& inputs, PlantedBug plant) {
  GuardedOutput output(problem);
  KernelOutput result;
  const KernelCall call = run_kernel(kernel, problem, inputs, plant, output);
  result.error = call.error;
  if (result.error.empty() && call.changed_input) result.error = *call.changed_input;
  if (result.error.empty()) {
    if (const std::optional<std::string> stray = output.find_stray_write()) result.error = *stray;
  }
  result.elements.assign(output.data(), output.data() + output.span());
  return result;
}

std::int64_t output_offset(const AttentionProblem& problem, std::int64_t b, std::int64_t h,
                           std::int64_t i, std::int64_t d) {
  return b * problem.o_strides.batch + i * problem.o_strides.seq + h * problem.o_strides.head + d;
}

std::string element_name(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) {
  std::ostringstream text;
  text << "element (b=" << b << ", h=" << h << ", i=" << i << ", d=" << d << ")";
  return text.str();
}

// Compares two outputs element by element where `compared(b, h, i)` says so. `allowed` gives the
// permitted difference (nullptr: bitwise equality).
using RowFilter = std::function<bool(std::int64_t, std::int64_t, std::int64_t)>;
using AllowedDifference =
    std::function<double(std::int64_t, std::int64_t, std::int64_t, std::int64_t, double)>;

std::optional<std::string> compare_outputs(const AttentionProblem& problem,
                                           const KernelOutput& first, const KernelOutput& second,
                                           const std::string& what, const RowFilter& compared,
                                           const AllowedDifference& allowed) {
  if (!first.error.empty()) return first.error;
  if (!second.error.empty()) return second.error + " (" + what + ")";
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
        if (compared && !compared(b, h, i)) continue;
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          const std::int64_t offset = output_offset(problem, b, h, i, d);
          const std::uint16_t bits_a = first.elements[offset], bits_b = second.elements[offset];
          if (bits_a == bits_b) continue;
          const double a = dtype_to_float(bits_a, problem.dtype);
          const double b_value = dtype_to_float(bits_b, problem.dtype);
          std::ostringstream text;
          text.precision(6);
          if (allowed) {
            const double limit = allowed(b, h, i, d, std::max(std::fabs(a), std::fabs(b_value)));
            if (std::fabs(a - b_value) <= limit) continue;  // false for NaN: NaN always fails
            text << element_name(b, h, i, d) << " is " << a << " but " << b_value << " " << what
                 << " (allowed difference " << limit << ")";
          } else {
            text << element_name(b, h, i, d) << " is " << a << " but " << b_value << " " << what
                 << " (must be bitwise equal)";
          }
          return text.str();
        }
      }
    }
  }
  return std::nullopt;
}

// The sum of two runs' oracle-free bounds, each on its problem and inputs: each output is within
// its own bound of the truth. The comparison keeps the bounds (one, when both runs have the same
// inputs); the problems must have the same query heads, so that an element's place is the same.
AllowedDifference within_bounds(const AttentionProblem& first_problem,
                                const AttentionInputs& first_inputs,
                                const AttentionProblem& second_problem,
                                const AttentionInputs& second_inputs,
                                const DeclaredNumerics& numerics) {
  const auto first =
      std::make_shared<const OracleFreeBound>(first_problem, input_tensors(first_inputs), numerics);
  const auto second = &first_inputs == &second_inputs
                          ? first
                          : std::make_shared<const OracleFreeBound>(
                                second_problem, input_tensors(second_inputs), numerics);
  return [first, second](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d,
                         double magnitude) {
    return first->allowed(b, h, i, d, magnitude) + second->allowed(b, h, i, d, magnitude);
  };
}

// Visits every key/value row: fn(batch, kv head, key index, k offset, v offset).
template <typename Visit>
void for_each_key_row(const AttentionProblem& problem, Visit visit) {
  for (std::int64_t b = 0; b < problem.batch; ++b)
    for (std::int64_t kv = 0; kv < problem.kv_heads; ++kv)
      for (std::int64_t j = 0; j < problem.seq_len_k; ++j)
        visit(
            b, kv, j,
            b * problem.k_strides.batch + j * problem.k_strides.seq + kv * problem.k_strides.head,
            b * problem.v_strides.batch + j * problem.v_strides.seq + kv * problem.v_strides.head);
}

// Everything a metamorphic check needs: the kernel, the problem and the case's own inputs.
struct Subject {
  const AttentionKernel* kernel = nullptr;
  AttentionProblem problem;
  AttentionInputs inputs;
  PlantedBug plant = PlantedBug::none;
  DeclaredNumerics numerics;       // the bounds follow the kernel's declared numerics
  bool deterministic = true;       // two runs of one shape on equal inputs give equal bits
  bool shape_independent = false;  // ... and so do two shapes that differ in batch or heads only

  KernelOutput run(const AttentionInputs& on) const { return execute(*kernel, problem, on, plant); }
  KernelOutput run() const { return run(inputs); }
  // Two runs of this problem, on these inputs, within their bounds.
  AllowedDifference bounds(const AttentionInputs& first, const AttentionInputs& second) const {
    return within_bounds(problem, first, problem, second, numerics);
  }
  // Bitwise equality (nullptr) for two runs of this shape whose arithmetic is the same, where the
  // kernel is deterministic; else their bounds (computed only then).
  AllowedDifference same_arithmetic_or_bounds(const AttentionInputs& first,
                                              const AttentionInputs& second) const {
    return deterministic ? nullptr : bounds(first, second);
  }
};

PropertyCheck check_permutation(const Subject& subject) {
  const AttentionProblem& problem = subject.problem;
  if (problem.causal) return PropertyCheck::not_judged();
  AttentionInputs permuted = subject.inputs;  // key j takes the place of key seq_len_k - 1 - j
  const std::int64_t dim = problem.head_dim;
  for_each_key_row(problem, [&](std::int64_t b, std::int64_t kv, std::int64_t j, std::int64_t k_at,
                                std::int64_t v_at) {
    const std::int64_t mirror = problem.seq_len_k - 1 - j;
    const std::int64_t k_from =
        b * problem.k_strides.batch + mirror * problem.k_strides.seq + kv * problem.k_strides.head;
    const std::int64_t v_from =
        b * problem.v_strides.batch + mirror * problem.v_strides.seq + kv * problem.v_strides.head;
    std::copy_n(&subject.inputs.k[k_from], dim, &permuted.k[k_at]);
    std::copy_n(&subject.inputs.v[v_from], dim, &permuted.v[v_at]);
  });
  return compare_outputs(problem, subject.run(), subject.run(permuted),
                         "after reversing the order of the keys", nullptr,
                         subject.bounds(subject.inputs, subject.inputs));
}

PropertyCheck check_key_shift(const Subject& subject, std::uint64_t seed) {
  // Every key of a head gets the same vector c added: every score of a row moves by the same
  // scale * q . c, which the softmax cancels. That holds only where K + c is exact in the dtype
  // (small integers plus a shift in [-2, 2] are, which is what this property's cases hold): a
  // dimension where some key's shifted value would round keeps c_d = 0, so that the two runs differ
  // by the shift alone whatever the data (a rounded key would move its scores by up to
  // scale |q| u |K + c|, which a large softmax_scale makes larger than both bounds).
  const AttentionProblem& problem = subject.problem;
  AttentionInputs shifted = subject.inputs;
  const auto shifted_value = [&](std::uint16_t bits, float shift) {
    return dtype_to_float(bits, problem.dtype) + shift;
  };
  const auto exact = [&](float value) { return round_to_dtype(value, problem.dtype) == value; };
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t kv = 0; kv < problem.kv_heads; ++kv) {
      for (std::int64_t d = 0; d < problem.head_dim; ++d) {
        const std::uint64_t draw =
            splitmix64_finalise(seed ^ splitmix64_finalise(static_cast<std::uint64_t>(
                                           (b * problem.kv_heads + kv) * 4096 + d)));
        float shift = static_cast<float>(static_cast<int>(draw % 5) - 2);
        const std::int64_t first = b * problem.k_strides.batch + kv * problem.k_strides.head + d;
        for (std::int64_t j = 0; j < problem.seq_len_k && shift != 0.0f; ++j) {
          if (!exact(shifted_value(shifted.k[first + j * problem.k_strides.seq], shift)))
            shift = 0.0f;
        }
        for (std::int64_t j = 0; j < problem.seq_len_k && shift != 0.0f; ++j) {
          std::uint16_t& key = shifted.k[first + j * problem.k_strides.seq];
          key = float_to_dtype(shifted_value(key, shift), problem.dtype);
        }
      }
    }
  }
  return compare_outputs(problem, subject.run(), subject.run(shifted),
                         "after adding one vector to every key of its head", nullptr,
                         subject.bounds(subject.inputs, shifted));
}

PropertyCheck check_independence(const Subject& subject, const AttentionCase& attention_case) {
  // Change Q of (batch 0, head 0) and K, V of the last (batch, kv head): every other output must
  // stay the same (bitwise from a deterministic kernel, else within the bound).
  const AttentionProblem& problem = subject.problem;
  AttentionCase other_seed = attention_case;
  other_seed.seed = attention_case.seed ^ 0x5A5A5A5A5A5A5A5Aull;
  const AttentionInputs other =
      generate_inputs(problem, other_seed.data, other_seed.seed, other_seed.injection);
  AttentionInputs changed = subject.inputs;
  for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
    const std::int64_t at = i * problem.q_strides.seq;
    std::copy_n(&other.q[at], problem.head_dim, &changed.q[at]);
  }
  const std::int64_t last_batch = problem.batch - 1, last_kv = problem.kv_heads - 1;
  for_each_key_row(problem, [&](std::int64_t b, std::int64_t kv, std::int64_t, std::int64_t k_at,
                                std::int64_t v_at) {
    if (b != last_batch || kv != last_kv) return;
    std::copy_n(&other.k[k_at], problem.head_dim, &changed.k[k_at]);
    std::copy_n(&other.v[v_at], problem.head_dim, &changed.v[v_at]);
  });
  const RowFilter untouched = [&](std::int64_t b, std::int64_t h, std::int64_t) {
    const bool query_changed = b == 0 && h == 0;
    const bool keys_changed = b == last_batch && h / problem.group_size() == last_kv;
    return !query_changed && !keys_changed;
  };
  return compare_outputs(problem, subject.run(), subject.run(changed),
                         "after changing only another batch's or head's data", untouched,
                         subject.same_arithmetic_or_bounds(subject.inputs, subject.inputs));
}

PropertyCheck check_gqa(const Subject& subject, const AttentionCase& attention_case) {
  if (attention_case.kv_heads == attention_case.heads) return PropertyCheck::not_judged();
  AttentionCase mha_case = attention_case;
  mha_case.kv_heads = attention_case.heads;
  const AttentionProblem mha = problem_of(mha_case);
  const AttentionProblem& gqa = subject.problem;
  // Inputs of the MHA problem: Q's rows as they are (each at its place in the MHA problem's Q,
  // whose strides differ when Q is a view into a packed QKV buffer), K/V head h = the GQA problem's
  // kv head h / group. O's strides do not depend on the kv heads: one element's place is the same
  // in both outputs.
  AttentionInputs repeated = generate_inputs(mha, attention_case.data, attention_case.seed, {});
  for (std::int64_t b = 0; b < gqa.batch; ++b)
    for (std::int64_t h = 0; h < gqa.heads; ++h)
      for (std::int64_t i = 0; i < gqa.seq_len_q; ++i) {
        std::copy_n(
            &subject.inputs
                 .q[b * gqa.q_strides.batch + i * gqa.q_strides.seq + h * gqa.q_strides.head],
            gqa.head_dim,
            &repeated.q[b * mha.q_strides.batch + i * mha.q_strides.seq + h * mha.q_strides.head]);
      }
  for (std::int64_t b = 0; b < gqa.batch; ++b)
    for (std::int64_t h = 0; h < gqa.heads; ++h)
      for (std::int64_t j = 0; j < gqa.seq_len_k; ++j) {
        const std::int64_t kv = h / gqa.group_size();
        std::copy_n(
            &subject.inputs
                 .k[b * gqa.k_strides.batch + j * gqa.k_strides.seq + kv * gqa.k_strides.head],
            gqa.head_dim,
            &repeated.k[b * mha.k_strides.batch + j * mha.k_strides.seq + h * mha.k_strides.head]);
        std::copy_n(
            &subject.inputs
                 .v[b * gqa.v_strides.batch + j * gqa.v_strides.seq + kv * gqa.v_strides.head],
            gqa.head_dim,
            &repeated.v[b * mha.v_strides.batch + j * mha.v_strides.seq + h * mha.v_strides.head]);
      }
  // Their arithmetic is the same only where the kernel declares it shape-independent.
  const AllowedDifference allowed =
      subject.deterministic && subject.shape_independent
          ? nullptr
          : within_bounds(gqa, subject.inputs, mha, repeated, subject.numerics);
  return compare_outputs(gqa, subject.run(), execute(*subject.kernel, mha, repeated, subject.plant),
                         "in the same problem as MHA with repeated key/value heads", nullptr,
                         allowed);
}

PropertyCheck check_causal_future(const Subject& subject, const AttentionCase& attention_case) {
  const AttentionProblem& problem = subject.problem;
  if (!problem.causal || problem.seq_len_k < 2) return PropertyCheck::not_judged();
  // Keys from `first_changed` on get other values; rows that cannot see them must not move.
  const std::int64_t first_changed =
      1 + static_cast<std::int64_t>(splitmix64_finalise(attention_case.seed) %
                                    static_cast<std::uint64_t>(problem.seq_len_k - 1));
  const AttentionInputs other = generate_inputs(problem, attention_case.data,
                                                attention_case.seed + 1, attention_case.injection);
  AttentionInputs changed = subject.inputs;
  for_each_key_row(problem, [&](std::int64_t, std::int64_t, std::int64_t j, std::int64_t k_at,
                                std::int64_t v_at) {
    if (j < first_changed) return;
    std::copy_n(&other.k[k_at], problem.head_dim, &changed.k[k_at]);
    std::copy_n(&other.v[v_at], problem.head_dim, &changed.v[v_at]);
  });
  const RowFilter blind = [&](std::int64_t, std::int64_t, std::int64_t i) {
    return problem.visible_keys_of(0, i).end <= first_changed;
  };
  return compare_outputs(problem, subject.run(), subject.run(changed),
                         "after changing keys from " + std::to_string(first_changed) +
                             " on, which the row must not see",
                         blind, subject.same_arithmetic_or_bounds(subject.inputs, changed));
}

PropertyCheck check_value_scaling(const Subject& subject) {
  // V doubled is exact for data without outliers; P is unchanged, every product and sum doubles
  // exactly, and rounding commutes with doubling for outputs in the normal range.
  const AttentionProblem& problem = subject.problem;
  AttentionInputs doubled = subject.inputs;
  for_each_key_row(
      problem, [&](std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t v_at) {
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          doubled.v[v_at + d] = float_to_dtype(
              2.0f * dtype_to_float(doubled.v[v_at + d], problem.dtype), problem.dtype);
        }
      });
  const KernelOutput first = subject.run();
  KernelOutput second = subject.run(doubled);
  if (!first.error.empty() || !second.error.empty()) {
    return PropertyCheck(first.error.empty() ? second.error : first.error);
  }
  // Halve the second output, except where halving or the doubled run left the normal range.
  const double smallest_normal =
      traits_of(problem.dtype).min_subnormal *
      static_cast<double>(1ull << (traits_of(problem.dtype).significand_bits - 1));
  for (std::uint16_t& bits : second.elements) {
    const float value = dtype_to_float(bits, problem.dtype);
    if (std::isfinite(value) && std::fabs(value) >= 2.0 * smallest_normal) {
      bits = float_to_dtype(value * 0.5f, problem.dtype);
    } else if (std::isfinite(value)) {
      bits = first.elements[&bits - second.elements.data()];  // outside the exact range: skip
    }
  }
  // The doubled run's bound, halved, is the first run's.
  return compare_outputs(problem, first, second, "halved, after doubling V", nullptr,
                         subject.same_arithmetic_or_bounds(subject.inputs, subject.inputs));
}

PropertyCheck check_determinism(const Subject& subject) {
  if (!subject.deterministic) return PropertyCheck::not_judged();  // --allow-nondeterminism
  return compare_outputs(subject.problem, subject.run(), subject.run(), "on a second run", nullptr,
                         nullptr);
}

PropertyCheck check_padding(const Subject& subject) {
  // The generated inputs hold NaN in row padding and in a tail past each tensor's end; the same
  // inputs with zeros there must give the same output.
  const AttentionProblem& problem = subject.problem;
  AttentionInputs zeroed = subject.inputs;
  auto zero_outside = [&](std::vector<std::uint16_t>& buffer, const TensorStrides& strides,
                          std::int64_t seq_len, std::int64_t heads) {
    std::vector<bool> inside(buffer.size(), false);
    for (std::int64_t b = 0; b < problem.batch; ++b)
      for (std::int64_t s = 0; s < seq_len; ++s)
        for (std::int64_t h = 0; h < heads; ++h)
          for (std::int64_t d = 0; d < problem.head_dim; ++d)
            inside[b * strides.batch + s * strides.seq + h * strides.head + d] = true;
    for (std::size_t at = 0; at < buffer.size(); ++at) {
      if (!inside[at]) buffer[at] = 0;
    }
  };
  zero_outside(zeroed.q, problem.q_strides, problem.seq_len_q, problem.heads);
  zero_outside(zeroed.k, problem.k_strides, problem.seq_len_k, problem.kv_heads);
  zero_outside(zeroed.v, problem.v_strides, problem.seq_len_k, problem.kv_heads);
  return compare_outputs(problem, subject.run(zeroed), subject.run(),
                         "with NaN instead of zeros in the inputs' padding and tails", nullptr,
                         subject.same_arithmetic_or_bounds(zeroed, zeroed));
}

// The cases a property draws from: the general generator, adjusted so the property applies.
rc::Gen<AttentionCase> generator_for(Property property, const KernelReach& reach) {
  rc::Gen<AttentionCase> cases = property == Property::matches_oracle
                                     ? search_cases(reach)
                                     : small_case(search_case_limits(reach));
  return rc::gen::map(std::move(cases), [property](AttentionCase attention_case) {
    switch (property) {
      case Property::key_value_permutation:
        attention_case.causal = false;
        break;
      case Property::key_shift:
        attention_case.data = DataDistribution::small_integers;
        attention_case.injection = {};
        break;
      case Property::gqa_equals_mha:
        attention_case.heads =
            attention_case.kv_heads *
            std::max<std::int64_t>(2, attention_case.heads / attention_case.kv_heads);
        break;
      case Property::causal_future_independence:
        attention_case.causal = true;
        break;
      case Property::value_scaling:
        if (attention_case.data == DataDistribution::value_outliers) {
          attention_case.data = DataDistribution::normal;
        }
        if (attention_case.injection.tensor == TensorRole::value) attention_case.injection = {};
        break;
      case Property::padding_nan_independence:
        attention_case.row_padding = std::max<std::int64_t>(attention_case.row_padding, 1);
        break;
      case Property::backward_key_permutation:
        attention_case.causal = false;
        attention_case.backward = true;
        break;
      case Property::backward_gradient_sums:
      case Property::backward_grad_output_scaling:
        attention_case.backward = true;  // what it runs, so that a saved case says so
        break;
      default:
        break;
    }
    return attention_case;
  });
}

std::string save_regression(const std::filesystem::path& folder, Property property,
                            const AttentionCase& minimal, const std::string& kernel) {
  std::filesystem::create_directories(folder);
  // Named after the case (so that one case found twice is saved once), and the matrix inside
  // named after the file, so that each regression's case has an id of its own.
  const std::uint64_t digest =
      splitmix64_finalise(std::hash<std::string>{}(case_to_matrix_text(minimal, "regression")));
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(digest));
  const std::string stem = std::string(kProperties[static_cast<int>(property)].name) + "-" +
                           kernel + "-" + std::string(suffix, 8);
  const std::filesystem::path path = folder / (stem + ".json");
  write_file_atomically(path, case_to_matrix_text(minimal, stem));
  return path.string();
}

}  // namespace

std::optional<Property> parse_property(std::string_view name) {
  for (const PropertyInfo& info : kProperties) {
    if (info.name == name) return info.property;
  }
  return std::nullopt;
}

PropertyPass pass_of(Property property) {
  return kProperties[static_cast<int>(property)].pass;
}

PropertyCheck check_property(Property property, const AttentionCase& attention_case,
                             const RunSettings& settings) {
  const CaseRunner runner(settings);
  if (property == Property::matches_oracle) {
    const CaseResult result = runner.run(attention_case);
    if (result.status == CaseStatus::skip) return PropertyCheck::not_judged();
    if (result.status == CaseStatus::fail) return PropertyCheck(result.reason);
    return PropertyCheck(std::nullopt);
  }
  // A backward property runs the case's backward whatever its flag: the kernel is chosen for that.
  AttentionCase as_run = attention_case;
  if (pass_of(property) == PropertyPass::backward) as_run.backward = true;
  const KernelChoice choice = runner.choose_kernel(as_run);
  if (choice.kernel == nullptr) return PropertyCheck::not_judged();  // cannot run here
  if (pass_of(property) == PropertyPass::backward) {
    return check_backward_property(property, attention_case, *choice.kernel, settings.plant,
                                   !settings.allow_nondeterminism);
  }
  Subject subject;
  subject.kernel = choice.kernel;
  subject.problem = problem_of(attention_case);
  subject.inputs = generate_inputs(subject.problem, attention_case.data, attention_case.seed,
                                   attention_case.injection);
  subject.plant = settings.plant;
  subject.numerics = settings.numerics;
  subject.deterministic = !settings.allow_nondeterminism;
  subject.shape_independent =
      settings.shape_independent_arithmetic || choice.kernel->shape_independent_arithmetic();
  // The metamorphic relations are written for dense tensors without a window or a bias: a case
  // with a variant is checked against the oracle (matches_oracle) alone.
  if (features_of(subject.problem) != 0) return PropertyCheck::not_judged();
  switch (property) {
    case Property::key_value_permutation:
      return check_permutation(subject);
    case Property::key_shift:
      return check_key_shift(subject, attention_case.seed);
    case Property::batch_head_independence:
      return check_independence(subject, attention_case);
    case Property::gqa_equals_mha:
      return check_gqa(subject, attention_case);
    case Property::causal_future_independence:
      return check_causal_future(subject, attention_case);
    case Property::value_scaling:
      return check_value_scaling(subject);
    case Property::determinism:
      return check_determinism(subject);
    case Property::padding_nan_independence:
      return check_padding(subject);
    case Property::matches_oracle:
    case Property::backward_gradient_sums:
    case Property::backward_key_permutation:
    case Property::backward_grad_output_scaling:
      break;
  }
  return PropertyCheck(std::nullopt);
}

std::vector<PropertyOutcome> run_properties(const PropertySettings& settings, std::ostream& log) {
  std::vector<Property> selected = settings.properties;
  if (selected.empty()) {
    for (const PropertyInfo& info : kProperties) selected.push_back(info.property);
  }
  std::vector<PropertyOutcome> outcomes;
  for (Property property : selected) {
    PropertyOutcome outcome;
    outcome.property = property;
    outcomes.push_back(std::move(outcome));
  }
  const Clock::time_point started = Clock::now();
  auto elapsed = [&] { return seconds_since(started); };
  const std::string kernel = CaseRunner(settings.run).kernel_for(AttentionCase{});
  const KernelReach reach =
      settings.reach_probe ? settings.reach_probe() : probe_kernel_reach(CaseRunner(settings.run));
  if (const std::string unreached = describe_unreached(reach); !unreached.empty()) {
    log << "not drawn (" << kernel << " does not run them): " << unreached << "\n";
  }
  std::vector<rc::Gen<AttentionCase>> generators;
  for (Property property : selected) generators.push_back(generator_for(property, reach));
  const std::vector<double> shares = property_shares(selected);
  std::vector<int> rounds(outcomes.size(), 0);

  while (elapsed() < settings.budget_seconds) {
    std::vector<PropertyTurn> turns;
    for (std::size_t index = 0; index < outcomes.size(); ++index) {
      const PropertyOutcome& outcome = outcomes[index];
      // Open until it fails, or until its first rounds judged nothing: a property this kernel
      // cannot show (determinism under --allow-nondeterminism, grouped heads for a kernel without
      // them, any property where nothing runs here) gives its share to the others.
      const bool unjudgeable = rounds[index] >= kRoundsToJudgeOne && outcome.judged == 0;
      turns.push_back(
          {shares[index], outcome.seconds, rounds[index], !outcome.minimal_case && !unjudgeable});
    }
    const std::optional<std::size_t> next = next_property(turns);
    if (!next) break;
    PropertyOutcome& outcome = outcomes[*next];
    const rc::Gen<AttentionCase>& generator = generators[*next];
    const auto round = static_cast<std::uint64_t>(rounds[*next]++);
    const Clock::time_point round_started = Clock::now();
    std::optional<AttentionCase> last_failing;
    std::string last_message;
    int tests = 0;
    int judged = 0;
    rc::detail::TestParams params;
    // SplitMix64's output at state seed + property advanced `round` steps.
    params.seed = splitmix64_finalise(settings.seed + round * kSplitMix64Gamma +
                                      static_cast<std::uint64_t>(outcome.property));
    params.maxSuccess = settings.tests_per_round;
    params.maxSize = 100;
    const auto result = rc::detail::checkTestable(
        [&] {
          const AttentionCase attention_case = *generator;
          ++tests;
          const PropertyCheck check =
              settings.checker ? settings.checker(outcome.property, attention_case)
                               : check_property(outcome.property, attention_case, settings.run);
          judged += check.judged ? 1 : 0;
          if (check.failure) {
            last_failing = attention_case;  // shrinking keeps the last failing case it tried
            last_message = *check.failure;
            RC_FAIL(*check.failure);
          }
        },
        rc::detail::TestMetadata{}, params);
    outcome.tests += tests;
    outcome.judged += judged;
    outcome.seconds += seconds_since(round_started);
    if (!result.template is<rc::detail::FailureResult>() || !last_failing) continue;

    outcome.seconds_to_failure = elapsed();
    last_failing->id = "minimal";
    outcome.minimal_case = last_failing;
    outcome.message = last_message;
    const std::string name(kProperties[static_cast<int>(outcome.property)].name);
    outcome.saved_to =
        save_regression(settings.regressions_dir, outcome.property, *last_failing, kernel);
    ReplayCommand replay = replay_command_for(settings.run);
    replay.property = name;
    replay.replay = outcome.saved_to.string();
    replay.kernel = kernel;
    log << "FAIL property " << name << " after " << outcome.tests << " cases ("
        << outcome.seconds_to_failure << " s): " << last_message << "\n"
        << "  minimal case: " << case_keys_to_json(*last_failing).dump() << "\n"
        << "  saved to " << outcome.saved_to.string() << "\n"
        << "  replay: " << replay_command_line(replay) << "\n";
    if (settings.stop_at_first_failure) return outcomes;
  }
  return outcomes;
}

}  // namespace attnfuzz
