// SPDX-License-Identifier: BSD-3-Clause
// The cuBLAS float64 oracle agrees with the CPU float64 oracle to about 1e-12 of each element's
// scale (A_id = sum_j p_ij |V_jd|, which bounds |O_id|), on every field the tolerance reads but
// the magnitude: the GPU computes A in float64, the CPU in float rounded up to a bound, so the
// CPU's may exceed the GPU's by magnitude_excess and never falls below it. Needs a GPU; without
// one it reports skipped. Without CUDA in the build, it says why it cannot run.
#include "oracle/cublas_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "kernels/cuda_device_probe.h"

namespace attnfuzz {
namespace {

// Each case names what it exercises in its id.
std::vector<AttentionCase> shapes() {
  AttentionCase square;
  square.id = "MHA, square";
  square.batch = 2;
  square.heads = square.kv_heads = 4;
  square.seq_len_q = square.seq_len_k = 130;

  AttentionCase masked = square;
  masked.id = "GQA 6:2, causal, seq_len_q > seq_len_k (masked rows), large scores";
  masked.heads = 6;
  masked.kv_heads = 2;
  masked.seq_len_q = 203;
  masked.seq_len_k = 113;
  masked.head_dim = 128;
  masked.causal = true;
  masked.data = DataDistribution::large_scores;

  AttentionCase long_keys;
  long_keys.id = "MQA, causal, seq_len_q < seq_len_k, BHSD padded, bf16, peaked";
  long_keys.heads = 6;
  long_keys.kv_heads = 1;
  long_keys.seq_len_q = 97;
  long_keys.seq_len_k = 1025;
  long_keys.head_dim = 32;
  long_keys.dtype = Dtype::bf16;
  long_keys.causal = true;
  long_keys.layout = Layout::bhsd;
  long_keys.row_padding = 5;
  long_keys.data = DataDistribution::peaked_softmax;

  AttentionCase one_row;
  one_row.id = "V outliers, one query row";
  one_row.batch = 3;
  one_row.heads = one_row.kv_heads = 2;
  one_row.seq_len_q = 1;
  one_row.seq_len_k = 777;
  one_row.head_dim = 96;
  one_row.data = DataDistribution::value_outliers;
  return {square, masked, long_keys, one_row};
}

double relative_gap(double a, double b, double scale) {
  return std::fabs(a - b) / std::max(scale, 1e-300);
}

TEST(CublasReference, AgreesWithTheCpuOracleToAbout1e12OnEveryField) {
  if (!cuda_device_status().usable) {
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description;
  }
  for (const AttentionCase& shape : shapes()) {
    const AttentionProblem problem = problem_of(shape);
    const AttentionInputs inputs = generate_inputs(problem, shape.data, 27);
    const AttentionTensors tensors{inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr};
    const ReferenceAttention cpu = reference_attention(problem, tensors);
    const ReferenceAttention gpu = cublas_reference_attention(problem, tensors);

    // Every array at the CPU oracle's size: the comparison indexes each by row.
    ASSERT_EQ(gpu.output.size(), cpu.output.size()) << shape.id;
    ASSERT_EQ(gpu.magnitude.size(), cpu.magnitude.size()) << shape.id;
    ASSERT_EQ(gpu.inverse_row_sum.size(), cpu.inverse_row_sum.size()) << shape.id;
    ASSERT_EQ(gpu.score_scale.size(), cpu.score_scale.size()) << shape.id;
    ASSERT_EQ(gpu.bias_scale.size(), cpu.bias_scale.size()) << shape.id;
    ASSERT_EQ(gpu.log_sum_exp.size(), cpu.log_sum_exp.size()) << shape.id;
    ASSERT_EQ(gpu.value_abs_sum.size(), cpu.value_abs_sum.size()) << shape.id;
    double worst = 0.0;
    const double excess = magnitude_excess(problem.seq_len_k);
    const double slack = magnitude_underflow_slack(
        *std::max_element(cpu.value_abs_sum.begin(), cpu.value_abs_sum.end()), problem.seq_len_k);
    for (std::size_t i = 0; i < cpu.output.size(); ++i) {
      worst = std::max(worst, relative_gap(gpu.output[i], cpu.output[i], cpu.magnitude[i]));
      EXPECT_GE(cpu.magnitude[i], gpu.magnitude[i] * (1.0 - 1e-12)) << shape.id << ", " << i;
      EXPECT_LE(cpu.magnitude[i], gpu.magnitude[i] * excess * (1.0 + 1e-12) + slack)
          << shape.id << ", " << i;
    }
    for (std::size_t row = 0; row < cpu.inverse_row_sum.size(); ++row) {
      worst = std::max(worst, relative_gap(gpu.inverse_row_sum[row], cpu.inverse_row_sum[row],
                                           cpu.inverse_row_sum[row]));
      worst = std::max(
          worst, relative_gap(gpu.score_scale[row], cpu.score_scale[row], cpu.score_scale[row]));
      EXPECT_EQ(gpu.inverse_row_sum[row] == 0.0, cpu.inverse_row_sum[row] == 0.0)
          << shape.id << ": fully masked rows must agree, row " << row;
      EXPECT_EQ(gpu.bias_scale[row], cpu.bias_scale[row]) << shape.id << ", row " << row;
      if (std::isinf(cpu.log_sum_exp[row])) {
        EXPECT_EQ(gpu.log_sum_exp[row], cpu.log_sum_exp[row]) << shape.id << ", row " << row;
      } else {
        // Relative to the row's score scale: the log-sum-exp is a score plus log(keys).
        worst = std::max(worst, relative_gap(gpu.log_sum_exp[row], cpu.log_sum_exp[row],
                                             cpu.score_scale[row] + 1.0));
      }
    }
    for (std::size_t i = 0; i < cpu.value_abs_sum.size(); ++i) {
      worst = std::max(
          worst, relative_gap(gpu.value_abs_sum[i], cpu.value_abs_sum[i], cpu.value_abs_sum[i]));
    }
    EXPECT_LT(worst, 1e-12) << shape.id;
    std::printf("cuBLAS vs CPU oracle, %s: worst relative gap %.3g\n", shape.id.c_str(), worst);
  }
}

TEST(CublasReference, DescribesItsLockedNumericsOrWhyItIsUnavailable) {
  const std::string description = cublas_description();  // never throws
  if (cuda_device_status().usable) {
    EXPECT_NE(description.find("CUBLAS_PEDANTIC_MATH"), std::string::npos) << description;
    return;
  }
  EXPECT_NE(description.find("unavailable"), std::string::npos) << description;
  EXPECT_THROW(cublas_reference_attention(problem_of(AttentionCase{}), AttentionTensors{}),
               std::runtime_error);
}

}  // namespace
}  // namespace attnfuzz
