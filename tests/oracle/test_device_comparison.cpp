// SPDX-License-Identifier: BSD-3-Clause
// The comparison on the GPU gives the CPU's verdict, reason, first failing element, worst element
// and figures, for outputs that pass, that fail every way an element can (beyond its bound,
// unwritten, not finite), that lean (the bias test) and that cannot be judged (inconclusive rows).
// Needs a GPU; without one it reports skipped.
#include "oracle/device_comparison.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "kernels/cuda_device_probe.h"
#include "oracle/plain_attention.h"
#include "oracle/tensor_rows.h"
#include "run/guarded_output.h"

namespace attnfuzz {
namespace {

std::vector<AttentionCase> shapes() {
  AttentionCase gqa;
  gqa.id = "GQA 4:2, BHSD padded, fp16";
  gqa.batch = 2;
  gqa.heads = 4;
  gqa.kv_heads = 2;
  gqa.seq_len_q = 37;
  gqa.seq_len_k = 70;
  gqa.head_dim = 32;
  gqa.layout = Layout::bhsd;
  gqa.row_padding = 3;

  AttentionCase masked = gqa;
  masked.id = "causal with rows that see no key, bf16";
  masked.dtype = Dtype::bf16;
  masked.causal = true;
  masked.seq_len_q = 50;
  masked.seq_len_k = 20;
  masked.layout = Layout::bshd;
  masked.row_padding = 0;

  AttentionCase flat = gqa;
  flat.id = "flat softmax: rows with equal outputs count once in the bias test";
  flat.data = DataDistribution::flat_softmax;

  AttentionCase large = gqa;
  large.id = "large scores: inconclusive rows";
  large.data = DataDistribution::large_scores;
  large.head_dim = 128;

  AttentionCase many_rows = gqa;
  many_rows.id = "160000 rows: several a thread in the device's summary, every block of it";
  many_rows.seq_len_q = 20000;
  many_rows.seq_len_k = 5;
  many_rows.head_dim = 8;
  return {gqa, masked, flat, large, many_rows};
}

// Ways to write a kernel's output from the reference.
struct Writer {
  const char* name;
  std::function<std::uint16_t(double expected, Dtype dtype, std::mt19937& random)> value;
};

std::vector<Writer> writers() {
  return {
      {"rounded",
       [](double e, Dtype t, std::mt19937&) { return float_to_dtype(static_cast<float>(e), t); }},
      {"two ulps of noise",
       [](double e, Dtype t, std::mt19937& random) {
         return static_cast<std::uint16_t>(float_to_dtype(static_cast<float>(e), t) +
                                           static_cast<int>(random() % 5) - 2);
       }},
      {"truncated toward zero",
       [](double e, Dtype t, std::mt19937&) {
         return float_to_dtype_toward_zero(static_cast<float>(e), t);
       }},
      {"one in 97 off by 300 ulps, one in 501 NaN, one in 733 unwritten",
       [](double e, Dtype t, std::mt19937& random) {
         const std::uint32_t draw = random();
         if (draw % 733 == 0) return traits_of(t).poison_bits;
         if (draw % 501 == 0) return static_cast<std::uint16_t>(0x7E01u);
         const std::uint16_t bits = float_to_dtype(static_cast<float>(e), t);
         return draw % 97 == 0 ? static_cast<std::uint16_t>(bits + 300) : bits;
       }},
  };
}

void expect_close(double cpu, double gpu, const char* what) {
  if (std::isnan(cpu) || std::isinf(cpu)) {
    EXPECT_EQ(std::isnan(cpu), std::isnan(gpu)) << what;
    if (std::isinf(cpu)) {
      EXPECT_EQ(cpu, gpu) << what;
    }
    return;
  }
  EXPECT_LE(std::fabs(cpu - gpu), 1e-9 * std::fabs(cpu)) << what << ": " << cpu << " vs " << gpu;
}

TEST(CudaComparison, GivesTheCpuComparisonsVerdictFirstFailureAndFigures) {
  if (!cuda_device_status().usable) {
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description;
  }
  for (const AttentionCase& shape : shapes()) {
    const AttentionProblem problem = problem_of(shape);
    AttentionInputs inputs = generate_inputs(problem, shape.data, 11);
    const AttentionTensors tensors{inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr};
    const ReferenceAttention reference = reference_attention(problem, tensors);
    const std::vector<float> plain = plain_attention(problem, tensors);
    for (const Writer& writer : writers()) {
      SCOPED_TRACE(shape.id + ", " + writer.name);
      GuardedOutput output(problem);
      std::mt19937 random(5);
      for (std::int64_t b = 0; b < problem.batch; ++b)
        for (std::int64_t h = 0; h < problem.heads; ++h)
          for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
            std::uint16_t* row = output_row(problem, output.data(), b, i, h);
            for (std::int64_t d = 0; d < problem.head_dim; ++d) {
              const std::int64_t index =
                  ((b * problem.heads + h) * problem.seq_len_q + i) * problem.head_dim + d;
              row[d] = writer.value(reference.output[index], problem.dtype, random);
            }
          }
      const Comparison cpu = compare_to_reference(problem, reference, plain, output.data());
      const Comparison gpu =
          compare_on_device(problem, reference, plain, output.data(),
                            output.buffer().size() - GuardedOutput::kGuardElements);
      EXPECT_EQ(cpu.passed, gpu.passed);
      EXPECT_EQ(cpu.failed, gpu.failed);
      EXPECT_EQ(cpu.inconclusive, gpu.inconclusive);
      EXPECT_EQ(cpu.reason, gpu.reason);
      EXPECT_EQ(cpu.elements, gpu.elements);
      EXPECT_EQ(cpu.failing_elements, gpu.failing_elements);
      EXPECT_EQ(cpu.inconclusive_rows, gpu.inconclusive_rows);
      EXPECT_EQ(cpu.bias.rows, gpu.bias.rows);
      ASSERT_EQ(cpu.first_failure.has_value(), gpu.first_failure.has_value());
      if (cpu.first_failure) {
        EXPECT_EQ(cpu.first_failure->batch, gpu.first_failure->batch);
        EXPECT_EQ(cpu.first_failure->head, gpu.first_failure->head);
        EXPECT_EQ(cpu.first_failure->row, gpu.first_failure->row);
        EXPECT_EQ(cpu.first_failure->dim, gpu.first_failure->dim);
        EXPECT_EQ(cpu.first_failure->fault, gpu.first_failure->fault);
      }
      EXPECT_EQ(cpu.worst_element.head, gpu.worst_element.head);
      EXPECT_EQ(cpu.worst_element.row, gpu.worst_element.row);
      EXPECT_EQ(cpu.worst_element.dim, gpu.worst_element.dim);
      expect_close(cpu.error_ratio, gpu.error_ratio, "error_ratio");
      expect_close(cpu.bound_ratio, gpu.bound_ratio, "bound_ratio");
      expect_close(cpu.fa_rule_ratio, gpu.fa_rule_ratio, "fa_rule_ratio");
      expect_close(cpu.bias.ratio, gpu.bias.ratio, "bias.ratio");
      expect_close(cpu.bias.outward_z, gpu.bias.outward_z, "bias.outward_z");
      expect_close(cpu.max_abs_error, gpu.max_abs_error, "max_abs_error");
      expect_close(cpu.mean_abs_error, gpu.mean_abs_error, "mean_abs_error");
      expect_close(cpu.max_rel_error, gpu.max_rel_error, "max_rel_error");
      expect_close(cpu.correlation, gpu.correlation, "correlation");
      expect_close(cpu.plain_max_abs_error, gpu.plain_max_abs_error, "plain_max_abs_error");
    }
  }
}

TEST(CudaComparison, TakesNeitherPackedSequencesNorTheLogSumExp) {
  AttentionProblem problem = problem_of(shapes()[0]);
  EXPECT_TRUE(device_comparison_supports(problem));
  problem.return_lse = true;
  EXPECT_FALSE(device_comparison_supports(problem));
}

}  // namespace
}  // namespace attnfuzz
