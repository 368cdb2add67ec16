// SPDX-License-Identifier: BSD-3-Clause
// Both CPU references run OpenBLAS single-threaded inside their own parallel items, even after
// something else in the process (a benchmark's DGEMM) gave BLAS every core.
#include "oracle/single_threaded_blas.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "oracle/plain_attention.h"
#include "oracle/reference_attention.h"

namespace attnfuzz {
namespace {

class SingleThreadedBlas : public ::testing::Test {
 protected:
  SingleThreadedBlas() {
    AttentionCase attention_case;
    attention_case.batch = 1;
    attention_case.heads = attention_case.kv_heads = 2;
    attention_case.seq_len_q = attention_case.seq_len_k = 16;
    attention_case.head_dim = 32;
    problem_ = problem_of(attention_case);
    inputs_ = generate_inputs(problem_, DataDistribution::normal, 1);
  }
  // Restores single-threaded BLAS for the tests that run after these in the same process.
  ~SingleThreadedBlas() override { openblas_set_num_threads(1); }

  AttentionTensors tensors() const {
    return {inputs_.q.data(), inputs_.k.data(), inputs_.v.data(), nullptr};
  }

  AttentionProblem problem_;
  AttentionInputs inputs_;
};

TEST_F(SingleThreadedBlas, TheFloat64OracleSetsOneThreadWhateverItFinds) {
  openblas_set_num_threads(2);
  (void)reference_attention(problem_, tensors());
  EXPECT_EQ(openblas_get_num_threads(), 1);
}

TEST_F(SingleThreadedBlas, ThePlainReferenceSetsOneThreadWhateverItFinds) {
  openblas_set_num_threads(2);
  (void)plain_attention(problem_, tensors());
  EXPECT_EQ(openblas_get_num_threads(), 1);
}

}  // namespace
}  // namespace attnfuzz
