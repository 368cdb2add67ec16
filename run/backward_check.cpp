// SPDX-License-Identifier: BSD-3-Clause
#include "run/backward_check.h"

#include <algorithm>
#include <exception>
#include <new>
#include <sstream>
#include <stdexcept>

#include "oracle/tensor_rows.h"
#include "run/device_staging.h"
#include "run/kernel_inputs.h"

#if ATTNFUZZ_HAVE_CUDA
#include <type_traits>

#include "core/device_array.h"
#endif

namespace attnfuzz {
AttentionProblem backward_problem_of(AttentionCase attention_case) {
  attention_case.return_lse = true;
  return problem_of(attention_case);
}

namespace {

// dO for a case's problem: Q's draw from the case's distribution under kGradOutputSeed.
std::vector<std::uint16_t> draw_grad_output(const AttentionProblem& problem,
                                            const AttentionCase& attention_case) {
  const AttentionInputs drawn =
      generate_inputs(problem, attention_case.data, attention_case.seed ^ kGradOutputSeed);
  const AttentionTensors drawn_tensors = input_tensors(drawn);
  std::vector<std::uint16_t> grad_output(static_cast<std::size_t>(o_span(problem)), 0);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
      for (std::int64_t h = 0; h < problem.heads; ++h) {
        std::copy_n(query_row(problem, drawn_tensors, b, i, h), problem.head_dim,
                    output_row(problem, grad_output.data(), b, i, h));
      }
    }
  }
  return grad_output;
}

}  // namespace

BackwardCase::BackwardCase(const AttentionCase& attention_case, bool with_plain_backward)
    : BackwardCase([&] {
        AttentionProblem problem = backward_problem_of(attention_case);
        AttentionInputs inputs = generate_inputs(problem, attention_case.data, attention_case.seed,
                                                 attention_case.injection);
        std::vector<std::uint16_t> grad_output = draw_grad_output(problem, attention_case);
        return BackwardCase(problem, std::move(inputs), std::move(grad_output),
                            with_plain_backward);
      }()) {}

BackwardCase::BackwardCase(const AttentionProblem& problem_in, AttentionInputs inputs_in,
                           std::vector<std::uint16_t> grad_output_in, bool with_plain_backward)
    : problem(problem_in), inputs(std::move(inputs_in)), grad_output(std::move(grad_output_in)) {
  // The oracles read the inputs and index arrays alone.
  const AttentionTensors original =
      with_index_arrays({inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr}, problem);
  forward = reference_attention(problem, original);
  output.assign(static_cast<std::size_t>(o_span(problem)), 0);
  lse.assign(static_cast<std::size_t>(lse_span(problem)), 0.0f);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
      for (std::int64_t h = 0; h < problem.heads; ++h) {
        const std::int64_t row = (b * problem.heads + h) * problem.seq_len_q + i;
        std::uint16_t* out = output_row(problem, output.data(), b, i, h);
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          out[d] = float_to_dtype(static_cast<float>(forward.output[row * problem.head_dim + d]),
                                  problem.dtype);
        }
        lse[problem.lse_offset(b, i, h)] = static_cast<float>(forward.log_sum_exp[row]);
      }
    }
  }
  gradients = reference_backward(problem, original, grad_output.data());
  if (with_plain_backward) plain = plain_backward(problem, original, grad_output.data());
}

AttentionTensors BackwardCase::tensors() const {
  AttentionTensors tensors = with_index_arrays({inputs.q.data(), inputs.k.data(), inputs.v.data(),
                                                const_cast<std::uint16_t*>(output.data())},
                                               problem);
  tensors.lse = const_cast<float*>(lse.data());
  return tensors;
}

std::int64_t gradient_row_offset(const AttentionProblem& problem, GradientTensor tensor,
                                 std::int64_t b, std::int64_t head, std::int64_t row) {
  switch (tensor) {
    case GradientTensor::dq:
      return problem.q_row_offset(b, row) + head * problem.q_strides.head;
    case GradientTensor::dk:
      return problem.k_row_offset(b, row) + head * problem.k_strides.head;
    case GradientTensor::dv:
      break;
  }
  return problem.v_row_offset(b, row) + head * problem.v_strides.head;
}

namespace {

std::int64_t gradient_span(const AttentionProblem& problem, GradientTensor tensor) {
  return tensor == GradientTensor::dq   ? q_span(problem)
         : tensor == GradientTensor::dk ? k_span(problem)
                                        : v_span(problem);
}

// Calls visit(b, head, row, offset) for every row of a gradient tensor laid out as its input,
// offset from element [0, 0, 0, 0].
template <typename Visit>
void for_each_gradient_row(const AttentionProblem& problem, GradientTensor tensor, Visit&& visit) {
  const bool query = tensor == GradientTensor::dq;
  const std::int64_t heads = query ? problem.heads : problem.kv_heads;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    const std::int64_t rows = query ? problem.seq_len_q_of(b) : problem.seq_len_k_of(b);
    for (std::int64_t row = 0; row < rows; ++row) {
      for (std::int64_t h = 0; h < heads; ++h) {
        visit(b, h, row, gradient_row_offset(problem, tensor, b, h, row));
      }
    }
  }
}

// The margin after a gradient: wide enough that one written with another tensor's strides, or with
// a packed sequence's rows taken from the wrong end, lands in it rather than in foreign memory
// (as output_trailing_guard_elements does for O).
std::int64_t trailing_guard_elements(const AttentionProblem& problem, GradientTensor tensor) {
  const std::int64_t widest =
      std::max({q_span(problem), k_span(problem), v_span(problem), o_span(problem)});
  const std::int64_t packed =
      tensor == GradientTensor::dq
          ? (problem.varlen_q ? problem.seq_len_q * problem.q_strides.seq : 0)
          : (problem.varlen_k
                 ? problem.seq_len_k * std::max(problem.k_strides.seq, problem.v_strides.seq)
                 : 0);
  return kOutputGuardElements + packed + widest - gradient_span(problem, tensor);
}

// dQ, dK and dV of one run, each in a buffer whose guard margins (before and after) and row
// padding start as the dtype's poison and must stay so: a write there is a write outside the
// tensor. Elements of the rows start as poison too, so one left unwritten is not finite.
class GuardedGradients {
 public:
  static constexpr std::int64_t kGuard = kOutputGuardElements;

  explicit GuardedGradients(const AttentionProblem& problem) : problem_(problem) {
    const std::uint16_t poison = traits_of(problem.dtype).poison_bits;
    for (const GradientTensor tensor : kTensors) {
      buffers_[index(tensor)].assign(
          static_cast<std::size_t>(kGuard + gradient_span(problem, tensor) +
                                   trailing_guard_elements(problem, tensor)),
          poison);
    }
  }

  std::uint16_t* data(GradientTensor tensor) { return buffers_[index(tensor)].data() + kGuard; }
  // The whole buffer, guard margins included (what a device kernel's copy starts from and fills).
  std::vector<std::uint16_t>& buffer(GradientTensor tensor) { return buffers_[index(tensor)]; }
  const std::uint16_t* data(GradientTensor tensor) const {
    return buffers_[index(tensor)].data() + kGuard;
  }

  // One line naming the first write outside dQ's, dK's or dV's elements, or nothing.
  std::optional<std::string> find_stray_write() const {
    const std::uint16_t poison = traits_of(problem_.dtype).poison_bits;
    for (const GradientTensor tensor : kTensors) {
      const std::vector<std::uint16_t>& buffer = buffers_[index(tensor)];
      const std::string name(gradient_tensor_name(tensor));
      const std::int64_t span = gradient_span(problem_, tensor);
      for (std::int64_t offset = 1; offset <= kGuard; ++offset) {
        if (buffer[static_cast<std::size_t>(kGuard - offset)] != poison) {
          return "write before " + name + ": guard element " + std::to_string(offset) +
                 " before its element [0,0,0,0] was overwritten";
        }
      }
      // The margin after the tensor: what the buffer holds beyond it (sized at construction).
      const std::int64_t trailing = static_cast<std::int64_t>(buffer.size()) - kGuard - span;
      for (std::int64_t offset = 0; offset < trailing; ++offset) {
        if (buffer[static_cast<std::size_t>(kGuard + span + offset)] != poison) {
          return "write past the end of " + name + ": guard element " + std::to_string(offset) +
                 " after its last element was overwritten";
        }
      }
      std::vector<bool> in_row(static_cast<std::size_t>(span), false);
      for_each_gradient_row(problem_, tensor,
                            [&](std::int64_t, std::int64_t, std::int64_t, std::int64_t offset) {
                              std::fill_n(in_row.begin() + offset, problem_.head_dim, true);
                            });
      for (std::int64_t offset = 0; offset < span; ++offset) {
        if (!in_row[static_cast<std::size_t>(offset)] &&
            buffer[static_cast<std::size_t>(kGuard + offset)] != poison) {
          return "write into " + name + " outside its rows (row padding, or past a sequence's " +
                 "end) at element offset " + std::to_string(offset);
        }
      }
    }
    return std::nullopt;
  }

  // One line naming the first element of `other`'s rows whose bits differ from this run's.
  std::optional<std::string> find_difference(const GuardedGradients& other, int run) const {
    for (const GradientTensor tensor : kTensors) {
      std::optional<std::string> found;
      for_each_gradient_row(
          problem_, tensor, [&](std::int64_t b, std::int64_t h, std::int64_t row, std::int64_t at) {
            for (std::int64_t d = 0; d < problem_.head_dim && !found; ++d) {
              const std::uint16_t first = data(tensor)[at + d], again = other.data(tensor)[at + d];
              if (first == again) continue;
              std::ostringstream text;
              text << "run " << run
                   << " wrote other bits than run 1: " << gradient_tensor_name(tensor) << "[b=" << b
                   << ", h=" << h << (tensor == GradientTensor::dq ? ", i=" : ", j=") << row
                   << ", d=" << d << "] was " << dtype_to_float(first, problem_.dtype) << ", is "
                   << dtype_to_float(again, problem_.dtype)
                   << " (a nondeterministic kernel, e.g. atomics on dQ, is judged run by run with "
                      "--allow-nondeterminism, or a plugin that declares "
                      "ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD)";
              found = text.str();
            }
          });
      if (found) return found;
    }
    return std::nullopt;
  }

 private:
  static constexpr GradientTensor kTensors[] = {GradientTensor::dq, GradientTensor::dk,
                                                GradientTensor::dv};
  static std::size_t index(GradientTensor tensor) { return static_cast<std::size_t>(tensor); }

  AttentionProblem problem_;
  std::vector<std::uint16_t> buffers_[3];
};

// What one run of the backward did: its error, its gradients, and the inputs it was handed (their
// own copies, checked against the case's afterwards).
struct BackwardRun {
  std::string error;
  GuardedGradients gradients;
  std::optional<std::string> changed_input;
};

// What a backward is handed, as host copies it may change: the inputs, O, the log-sum-exp, dO.
struct HandedToBackward {
  KernelInputs inputs;
  std::vector<std::uint16_t> output;
  std::vector<float> lse;
  std::vector<std::uint16_t> grad_output;
};

// Calls a CUDA-device kernel's backward on device copies of everything it is handed and of the
// gradients' whole guarded buffers, then brings every copy back over the host's, so that the host
// checks (changed inputs, stray writes, unwritten elements) see what the kernel left.
void call_backward_on_device(const AttentionKernel& kernel, const AttentionProblem& problem,
                             HandedToBackward& handed, GuardedGradients& gradients,
                             PlantedBug plant, bool deterministic) {
#if ATTNFUZZ_HAVE_CUDA
  try {
    const auto to_device = [](const auto* host, std::size_t count) {
      using Element = std::remove_cv_t<std::remove_pointer_t<decltype(host)>>;
      DeviceArray<Element> array(std::max<std::size_t>(count, 1));
      if (count > 0) array.copy_from_host(host, count);
      return array;
    };
    const DeviceArray<std::uint16_t> q = to_device(handed.inputs.q.data(), handed.inputs.q.size());
    const DeviceArray<std::uint16_t> k = to_device(handed.inputs.k.data(), handed.inputs.k.size());
    const DeviceArray<std::uint16_t> v = to_device(handed.inputs.v.data(), handed.inputs.v.size());
    const DeviceArray<std::uint16_t> o = to_device(handed.output.data(), handed.output.size());
    const DeviceArray<float> lse = to_device(handed.lse.data(), handed.lse.size());
    const DeviceArray<std::uint16_t> grad_output =
        to_device(handed.grad_output.data(), handed.grad_output.size());
    const DeviceIndexArrays index_arrays(problem);
    std::vector<std::uint16_t>& dq_host = gradients.buffer(GradientTensor::dq);
    std::vector<std::uint16_t>& dk_host = gradients.buffer(GradientTensor::dk);
    std::vector<std::uint16_t>& dv_host = gradients.buffer(GradientTensor::dv);
    const DeviceArray<std::uint16_t> dq = to_device(dq_host.data(), dq_host.size());
    const DeviceArray<std::uint16_t> dk = to_device(dk_host.data(), dk_host.size());
    const DeviceArray<std::uint16_t> dv = to_device(dv_host.data(), dv_host.size());
    AttentionTensors tensors = index_arrays.bind({q.get(), k.get(), v.get(), o.get()});
    tensors.lse = lse.get();
    const std::int64_t guard = GuardedGradients::kGuard;
    kernel.backward(
        problem, tensors,
        {grad_output.get(), dq.get() + guard, dk.get() + guard, dv.get() + guard, deterministic},
        plant);
    ATTNFUZZ_CUDA_CHECK(cudaDeviceSynchronize());
    q.copy_to_host(handed.inputs.q.data(), handed.inputs.q.size());
    k.copy_to_host(handed.inputs.k.data(), handed.inputs.k.size());
    v.copy_to_host(handed.inputs.v.data(), handed.inputs.v.size());
    index_arrays.copy_to_host(handed.inputs);
    o.copy_to_host(handed.output.data(), handed.output.size());
    lse.copy_to_host(handed.lse.data(), handed.lse.size());
    grad_output.copy_to_host(handed.grad_output.data(), handed.grad_output.size());
    dq.copy_to_host(dq_host.data(), dq_host.size());
    dk.copy_to_host(dk_host.data(), dk_host.size());
    dv.copy_to_host(dv_host.data(), dv_host.size());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& error) {
    note_device_failure(error.what());  // a sticky error: later CUDA cases skip, naming it
    throw;
  }
#else
  (void)kernel, (void)problem, (void)handed, (void)gradients, (void)plant, (void)deterministic;
  throw std::runtime_error("this build has no CUDA: a CUDA-device kernel's backward cannot run");
#endif
}

BackwardRun run_backward(const AttentionKernel& kernel, const BackwardCase& backward_case,
                         PlantedBug plant, bool deterministic) {
  const AttentionProblem& problem = backward_case.problem;
  BackwardRun run{"", GuardedGradients(problem), std::nullopt};
  HandedToBackward handed{KernelInputs::copy_of(problem, backward_case.inputs),
                          backward_case.output, backward_case.lse, backward_case.grad_output};
  const std::vector<std::uint16_t>& output = handed.output;
  const std::vector<float>& lse = handed.lse;
  const std::vector<std::uint16_t>& grad_output = handed.grad_output;
  try {
    if (kernel.site() == ExecutionSite::cuda_device) {
      call_backward_on_device(kernel, problem, handed, run.gradients, plant, deterministic);
    } else {
      kernel.backward(problem, handed.inputs.bind(handed.output.data(), handed.lse.data()),
                      {handed.grad_output.data(), run.gradients.data(GradientTensor::dq),
                       run.gradients.data(GradientTensor::dk),
                       run.gradients.data(GradientTensor::dv), deterministic},
                      plant);
    }
  } catch (const std::bad_alloc&) {
    throw;  // out of memory: the case is skipped, not failed
  } catch (const std::exception& error) {
    run.error = error.what();
    return run;
  }
  run.changed_input = find_changed_input(problem, backward_case.inputs, handed.inputs);
  const auto first_change = [](const auto& original,
                               const auto& now) -> std::optional<std::size_t> {
    const auto [a, b] = std::mismatch(original.begin(), original.end(), now.begin());
    if (a == original.end()) return std::nullopt;
    return static_cast<std::size_t>(a - original.begin());
  };
  if (!run.changed_input) {
    if (const auto at = first_change(backward_case.output, output)) {
      run.changed_input = "the kernel changed its input O at element offset " + std::to_string(*at);
    } else if (const auto at_lse = first_change(backward_case.lse, lse)) {
      run.changed_input =
          "the kernel changed its input log-sum-exp at element offset " + std::to_string(*at_lse);
    } else if (const auto at_grad = first_change(backward_case.grad_output, grad_output)) {
      run.changed_input =
          "the kernel changed its input dO at element offset " + std::to_string(*at_grad);
    }
  }
  return run;
}

GradientComparison compare_run(const BackwardCase& backward_case, const BackwardRun& run) {
  return compare_gradients(backward_case.problem, backward_case.forward, backward_case.gradients,
                           run.gradients.data(GradientTensor::dq),
                           run.gradients.data(GradientTensor::dk),
                           run.gradients.data(GradientTensor::dv),
                           backward_case.plain.dq.empty() ? nullptr : &backward_case.plain);
}

}  // namespace

BackwardGradients backward_gradients(const AttentionKernel& kernel,
                                     const BackwardCase& backward_case, PlantedBug plant,
                                     bool deterministic) {
  const BackwardRun run = run_backward(kernel, backward_case, plant, deterministic);
  BackwardGradients result;
  result.fault = !run.error.empty()  ? run.error
                 : run.changed_input ? *run.changed_input
                                     : run.gradients.find_stray_write().value_or("");
  const auto copy_out = [&](GradientTensor tensor) {
    const std::uint16_t* data = run.gradients.data(tensor);
    return std::vector<std::uint16_t>(data, data + gradient_span(backward_case.problem, tensor));
  };
  result.dq = copy_out(GradientTensor::dq);
  result.dk = copy_out(GradientTensor::dk);
  result.dv = copy_out(GradientTensor::dv);
  return result;
}

BackwardCheck check_backward(const AttentionKernel& kernel, const AttentionCase& attention_case,
                             PlantedBug plant, int repeats, bool allow_nondeterminism) {
  const BackwardCase backward_case(attention_case);
  BackwardCheck check;
  const bool judged_run_by_run = allow_nondeterminism || !kernel.backward_deterministic();
  const BackwardRun first = run_backward(kernel, backward_case, plant, !allow_nondeterminism);
  if (!first.error.empty()) {
    check.error = first.error;
    return check;
  }
  check.changed_input = first.changed_input;
  check.stray_write = first.gradients.find_stray_write();
  check.comparison = compare_run(backward_case, first);
  for (int run = 2; run <= repeats && !check.repeat_fault; ++run) {
    const BackwardRun again = run_backward(kernel, backward_case, plant, !allow_nondeterminism);
    const std::string prefix = "run " + std::to_string(run) + ": ";
    if (!again.error.empty()) {
      check.repeat_fault = prefix + again.error;
    } else if (again.changed_input && !first.changed_input) {
      check.repeat_fault = prefix + *again.changed_input;
    } else if (std::optional<std::string> stray = again.gradients.find_stray_write()) {
      check.repeat_fault = prefix + *stray;
    } else if (!judged_run_by_run) {
      check.repeat_fault = first.gradients.find_difference(again.gradients, run);
    } else if (!check.comparison.failed) {
      // Each run judged on its own: the figures are the worst's.
      GradientComparison judged = compare_run(backward_case, again);
      if (judged.failed || judged.bound_ratio > check.comparison.bound_ratio) {
        if (judged.failed) judged.reason = prefix + judged.reason;
        check.comparison = std::move(judged);
      }
    }
  }
  return check;
}

}  // namespace attnfuzz
