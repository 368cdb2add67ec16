// SPDX-License-Identifier: BSD-3-Clause
// A kernel author's library as the harness meets it through version 1 of the plugin ABI, which
// declares no variants: cpu_flash behind the five version 1 functions, carrying the plant that the
// environment variable ATTNFUZZ_TEST_PLANT names (none when unset). What each engine finds through
// it, with the reach a version 1 plugin has, is the version 1 column of docs/detection.md's
// kill-rate table (scripts/kill_rate.sh --kernel-lib).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "attnfuzz/attnfuzz_plugin.h"
#include "kernels/kernel_registry.h"
#include "kernels/planted_bug.h"

namespace {

using attnfuzz::AttentionProblem;
using attnfuzz::PlantedBug;

// The plant ATTNFUZZ_TEST_PLANT names: none when unset, nullopt when it names no plant.
std::optional<PlantedBug> named_plant() {
  const char* name = std::getenv("ATTNFUZZ_TEST_PLANT");
  if (name == nullptr || *name == '\0') return PlantedBug::none;
  return attnfuzz::parse_planted_bug(name);
}

attnfuzz::TensorStrides strides_of(const attnfuzz_strides& strides) {
  return {strides.batch, strides.seq, strides.head};
}

// The harness's problem for a version 1 one: the dense fields, every variant off.
AttentionProblem problem_of(const attnfuzz_problem& abi) {
  AttentionProblem problem;
  problem.batch = abi.batch;
  problem.heads = abi.heads;
  problem.kv_heads = abi.kv_heads;
  problem.seq_len_q = abi.seq_len_q;
  problem.seq_len_k = abi.seq_len_k;
  problem.head_dim = abi.head_dim;
  problem.dtype = abi.dtype == ATTNFUZZ_DTYPE_FP16 ? attnfuzz::Dtype::fp16 : attnfuzz::Dtype::bf16;
  problem.causal = abi.causal != 0;
  problem.softmax_scale = abi.softmax_scale;
  problem.q_strides = strides_of(abi.q_strides);
  problem.k_strides = strides_of(abi.k_strides);
  problem.v_strides = strides_of(abi.v_strides);
  problem.o_strides = strides_of(abi.o_strides);
  return problem;
}

void write_text(char* buffer, std::size_t size, const std::string& text) {
  if (size > 0) std::snprintf(buffer, size, "%s", text.c_str());
}

}  // namespace

extern "C" {

int attnfuzz_plugin_abi_version(void) {
  return 1;
}

const char* attnfuzz_plugin_name(void) {
  return "planted_flash_v1";
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}

int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  const attnfuzz::SupportVerdict verdict =
      attnfuzz::cpu_flash_kernel().supports(problem_of(*problem));
  if (!verdict.supported) write_text(reason, reason_size, verdict.reason);
  return verdict.supported ? 1 : 0;
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  const std::optional<PlantedBug> plant = named_plant();
  if (!plant) {
    write_text(
        error, error_size,
        std::string("ATTNFUZZ_TEST_PLANT names no plant: ") + std::getenv("ATTNFUZZ_TEST_PLANT"));
    return ATTNFUZZ_STATUS_ERROR;
  }
  attnfuzz::AttentionTensors host;
  host.q = tensors->q;
  host.k = tensors->k;
  host.v = tensors->v;
  host.o = tensors->o;
  try {
    attnfuzz::cpu_flash_kernel().forward(problem_of(*problem), host, *plant);
  } catch (const std::exception& failure) {
    write_text(error, error_size, failure.what());
    return ATTNFUZZ_STATUS_ERROR;
  }
  return ATTNFUZZ_STATUS_OK;
}

}  // extern "C"
