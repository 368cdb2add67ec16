// SPDX-License-Identifier: BSD-3-Clause
// A built-in kernel of this build behind the plugin ABI (version 2's functions): how one build's kernel is
// timed side by side with another's in one run. A pull request's benchmark builds this library from
// its base commit and runs `fuzz_attention --bench --kernel cuda_flash --against-lib base.so`: the
// base's cuda_flash, registered as cuda_flash@reference, beside the pull request's.
//
// ATTNFUZZ_BUILTIN_PLUGIN_KERNEL names the kernel (default: cuda_flash in a CUDA build, else
// cpu_flash). The library keeps its own copy of the kernels (a version script exports the ABI's
// functions and nothing else), so that the harness that loads it cannot lend it its own; that copy
// reads its thread count from ATTNFUZZ_THREADS, which --threads sets.
//
// It takes what the ABI hands over without copies: dense cases, with a window, a softcap or the
// log-sum-exp. Packed sequences, paged K/V and ALiBi come as index arrays in the kernel's memory,
// which a built-in kernel reads from the host too; those cases are declined, so that side by side
// they are timed alone and not compared, rather than compared with a copy's cost in the reference.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "attnfuzz/attnfuzz_plugin.h"
#include "kernels/kernel_registry.h"

#define ATTNFUZZ_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using attnfuzz::AttentionKernel;
using attnfuzz::AttentionProblem;

std::string kernel_name() {
  const char* named = std::getenv("ATTNFUZZ_BUILTIN_PLUGIN_KERNEL");
  if (named != nullptr && *named != '\0') return named;
  return ATTNFUZZ_HAVE_CUDA ? "cuda_flash" : "cpu_flash";
}

// The kernel, or null (with a line on stderr) when this build has none of that name.
const AttentionKernel* kernel() {
  static const AttentionKernel* const found = [] {
    const AttentionKernel* kernel = attnfuzz::find_kernel(kernel_name());
    if (kernel == nullptr) {
      std::fprintf(stderr,
                   "builtin kernel plugin: ATTNFUZZ_BUILTIN_PLUGIN_KERNEL names '%s', which this "
                   "build does not have\n",
                   kernel_name().c_str());
    }
    return kernel;
  }();
  return found;
}

attnfuzz::TensorStrides strides_of(const attnfuzz_strides& strides) {
  return {strides.batch, strides.seq, strides.head};
}

// The harness's problem for the ABI's: every field this plugin takes.
AttentionProblem problem_of(const attnfuzz_problem_v2& abi) {
  AttentionProblem problem;
  problem.batch = abi.base.batch;
  problem.heads = abi.base.heads;
  problem.kv_heads = abi.base.kv_heads;
  problem.seq_len_q = abi.base.seq_len_q;
  problem.seq_len_k = abi.base.seq_len_k;
  problem.head_dim = abi.base.head_dim;
  problem.dtype =
      abi.base.dtype == ATTNFUZZ_DTYPE_FP16 ? attnfuzz::Dtype::fp16 : attnfuzz::Dtype::bf16;
  problem.causal = abi.base.causal != 0;
  problem.softmax_scale = abi.base.softmax_scale;
  problem.q_strides = strides_of(abi.base.q_strides);
  problem.k_strides = strides_of(abi.base.k_strides);
  problem.v_strides = strides_of(abi.base.v_strides);
  problem.o_strides = strides_of(abi.base.o_strides);
  problem.window_left = abi.window_left;
  problem.window_right = abi.window_right;
  problem.softcap = abi.softcap;
  problem.return_lse = abi.return_lse != 0;
  problem.lse_strides = strides_of(abi.lse_strides);
  return problem;
}

void write_text(char* buffer, std::size_t size, const std::string& text) {
  if (size > 0) std::snprintf(buffer, size, "%s", text.c_str());
}

}  // namespace

ATTNFUZZ_EXPORT int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

// An empty name when the kernel is missing: the harness refuses to load the plugin.
ATTNFUZZ_EXPORT const char* attnfuzz_plugin_name(void) {
  static const std::string name = kernel() != nullptr ? std::string(kernel()->name()) : "";
  return name.c_str();
}

ATTNFUZZ_EXPORT int attnfuzz_plugin_site(void) {
  return kernel() != nullptr && kernel()->site() == attnfuzz::ExecutionSite::cuda_device
             ? ATTNFUZZ_SITE_CUDA_DEVICE
             : ATTNFUZZ_SITE_HOST;
}

ATTNFUZZ_EXPORT uint32_t attnfuzz_plugin_features(void) {
  return ATTNFUZZ_FEATURE_SLIDING_WINDOW | ATTNFUZZ_FEATURE_SOFTCAP | ATTNFUZZ_FEATURE_RETURN_LSE;
}

ATTNFUZZ_EXPORT int attnfuzz_plugin_supports_v2(const attnfuzz_problem_v2* problem, char* reason,
                                                size_t reason_size) {
  const attnfuzz::SupportVerdict verdict = kernel()->supports(problem_of(*problem));
  if (!verdict.supported) write_text(reason, reason_size, verdict.reason);
  return verdict.supported ? 1 : 0;
}

ATTNFUZZ_EXPORT int attnfuzz_plugin_forward_v2(const attnfuzz_problem_v2* problem,
                                               const attnfuzz_tensors_v2* tensors, char* error,
                                               size_t error_size) {
  attnfuzz::AttentionTensors handed;
  handed.q = tensors->base.q;
  handed.k = tensors->base.k;
  handed.v = tensors->base.v;
  handed.o = tensors->base.o;
  handed.lse = tensors->lse;
  try {
    kernel()->forward(problem_of(*problem), handed, attnfuzz::PlantedBug::none);
  } catch (const std::exception& failure) {
    write_text(error, error_size, failure.what());
    return ATTNFUZZ_STATUS_ERROR;
  }
  return ATTNFUZZ_STATUS_OK;
}

// Version 1's pair, which every plugin exports; the harness calls version 2's.
ATTNFUZZ_EXPORT int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason,
                                             size_t reason_size) {
  attnfuzz_problem_v2 dense{};
  dense.base = *problem;
  dense.window_left = dense.window_right = -1;
  return attnfuzz_plugin_supports_v2(&dense, reason, reason_size);
}

ATTNFUZZ_EXPORT int attnfuzz_plugin_forward(const attnfuzz_problem* problem,
                                            const attnfuzz_tensors* tensors, char* error,
                                            size_t error_size) {
  attnfuzz_problem_v2 dense{};
  dense.base = *problem;
  dense.window_left = dense.window_right = -1;
  attnfuzz_tensors_v2 handed{};
  handed.base = *tensors;
  return attnfuzz_plugin_forward_v2(&dense, &handed, error, error_size);
}
