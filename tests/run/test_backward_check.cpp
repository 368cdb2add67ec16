// SPDX-License-Identifier: BSD-3-Clause
// A backward pass is judged beyond its gradients' values: cpu_flash's backward with one misdeed
// added after it (a write into dQ's row padding or past dV's end, dO changed in place, one bit of
// dK that differs on every second call) is caught and named, and the correct one passes.
#include "run/backward_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "kernels/kernel_registry.h"
#include "support/cpu_flash_with_backward_after.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

enum class Misdeed { none, write_into_dq_padding, write_past_dv_end, change_grad_output, flaky_dk };

// cpu_flash's backward, then the misdeed.
class MisbehavingBackward final : public CpuFlashWithBackwardAfter {
 public:
  explicit MisbehavingBackward(Misdeed misdeed) : misdeed_(misdeed) {}
  std::string_view name() const override { return "test_misbehaving_backward"; }
  std::string_view summary() const override { return "cpu_flash with a misdeed after backward"; }
  std::string capabilities() const override { return ""; }

 protected:
  void after_backward(const AttentionProblem& problem,
                      const BackwardTensors& gradients) const override {
    switch (misdeed_) {
      case Misdeed::none:
        break;
      case Misdeed::write_into_dq_padding:
        gradients.dq[problem.head_dim] = 0;  // the first padding element of row 0
        break;
      case Misdeed::write_past_dv_end:
        gradients.dv[v_span(problem) + 3] = 0;
        break;
      case Misdeed::change_grad_output:
        const_cast<std::uint16_t*>(gradients.grad_output)[5] ^= 1;
        break;
      case Misdeed::flaky_dk:
        if (calls_.fetch_add(1) % 2 == 1) gradients.dk[0] ^= 1;
        break;
    }
  }

 private:
  Misdeed misdeed_;
  mutable std::atomic<int> calls_{0};
};

AttentionCase padded_case() {
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.seq_len_q = 33;
  c.seq_len_k = 70;
  c.head_dim = 64;
  c.row_padding = 8;
  c.causal = true;
  c.backward = true;
  return c;
}

TEST(BackwardCheck, TheCorrectBackwardPassesTwiceWithTheSameBits) {
  const BackwardCheck check =
      check_backward(MisbehavingBackward(Misdeed::none), padded_case(), PlantedBug::none, 2);
  EXPECT_TRUE(check.error.empty()) << check.error;
  EXPECT_TRUE(check.comparison.passed) << check.comparison.reason;
  EXPECT_FALSE(check.changed_input);
  EXPECT_FALSE(check.stray_write);
  EXPECT_FALSE(check.repeat_fault);
}

TEST(BackwardCheck, AWriteOutsideTheGradientsRowsIsNamed) {
  const BackwardCheck padding = check_backward(MisbehavingBackward(Misdeed::write_into_dq_padding),
                                               padded_case(), PlantedBug::none);
  ASSERT_TRUE(padding.stray_write);
  EXPECT_THAT(*padding.stray_write, HasSubstr("write into dQ outside its rows"));
  EXPECT_THAT(*padding.stray_write, HasSubstr("element offset 64"));
  const BackwardCheck past_end = check_backward(MisbehavingBackward(Misdeed::write_past_dv_end),
                                                padded_case(), PlantedBug::none);
  ASSERT_TRUE(past_end.stray_write);
  EXPECT_THAT(*past_end.stray_write,
              HasSubstr("write past the end of dV: guard element 3 after its last element"));
}

TEST(BackwardCheck, AnInputChangedInPlaceIsNamed) {
  const BackwardCheck check = check_backward(MisbehavingBackward(Misdeed::change_grad_output),
                                             padded_case(), PlantedBug::none);
  ASSERT_TRUE(check.changed_input);
  EXPECT_THAT(*check.changed_input, HasSubstr("changed its input dO at element offset 5"));
}

TEST(BackwardCheck, ARunWithOtherBitsFailsUnlessNondeterminismIsAllowed) {
  const BackwardCheck strict =
      check_backward(MisbehavingBackward(Misdeed::flaky_dk), padded_case(), PlantedBug::none, 2);
  ASSERT_TRUE(strict.repeat_fault);
  EXPECT_THAT(*strict.repeat_fault,
              HasSubstr("run 2 wrote other bits than run 1: dK[b=0, h=0, j=0, d=0]"));
  // Allowed, each run is judged on its own: one ulp of one element stays within the bound.
  const BackwardCheck allowed = check_backward(MisbehavingBackward(Misdeed::flaky_dk),
                                               padded_case(), PlantedBug::none, 2, true);
  EXPECT_FALSE(allowed.repeat_fault);
  EXPECT_TRUE(allowed.comparison.passed) << allowed.comparison.reason;
}

}  // namespace
}  // namespace attnfuzz
