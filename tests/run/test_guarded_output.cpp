// SPDX-License-Identifier: BSD-3-Clause
// The fenced output buffer: writes to every element go unreported, and a write before the first
// element, past the last one or into row padding is reported with where it landed, in both
// layouts.
#include "run/guarded_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>

#include "case/attention_case.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

struct OutputShape {
  Layout layout;
  std::int64_t row_padding;
  Dtype dtype;
};

class GuardedOutputShape : public ::testing::TestWithParam<OutputShape> {
 protected:
  // A GQA problem whose output has several batches, rows and heads, so that strides matter.
  AttentionProblem problem() const {
    AttentionCase attention_case;
    attention_case.batch = 2;
    attention_case.heads = 4;
    attention_case.kv_heads = 2;
    attention_case.seq_len_q = 5;
    attention_case.seq_len_k = 7;
    attention_case.head_dim = 32;
    attention_case.dtype = GetParam().dtype;
    attention_case.layout = GetParam().layout;
    attention_case.row_padding = GetParam().row_padding;
    return problem_of(attention_case);
  }
};

std::string describe(const OutputShape& shape) {
  return std::string(layout_name(shape.layout)) + "_pad" + std::to_string(shape.row_padding) + "_" +
         std::string(dtype_name(shape.dtype));
}
std::string shape_name(const ::testing::TestParamInfo<OutputShape>& info) {
  return describe(info.param);
}
void PrintTo(const OutputShape& shape, std::ostream* out) {
  *out << describe(shape);
}

INSTANTIATE_TEST_SUITE_P(Layouts, GuardedOutputShape,
                         ::testing::Values(OutputShape{Layout::bshd, 0, Dtype::fp16},
                                           OutputShape{Layout::bshd, 8, Dtype::bf16},
                                           OutputShape{Layout::bhsd, 0, Dtype::bf16},
                                           OutputShape{Layout::bhsd, 8, Dtype::fp16}),
                         shape_name);

// The same fixture over padded layouts only, for the row-padding checks.
class GuardedOutputPaddedShape : public GuardedOutputShape {};

INSTANTIATE_TEST_SUITE_P(PaddedLayouts, GuardedOutputPaddedShape,
                         ::testing::Values(OutputShape{Layout::bshd, 8, Dtype::bf16},
                                           OutputShape{Layout::bshd, 3, Dtype::fp16},
                                           OutputShape{Layout::bhsd, 8, Dtype::fp16}),
                         shape_name);

constexpr std::uint16_t kWritten = 0x3C00u;  // 1.0 in fp16, 1.875 in bf16: anything but poison

// Writes kWritten to every element of the output, through the problem's strides.
void write_every_element(const AttentionProblem& problem, GuardedOutput& output) {
  const TensorStrides& strides = problem.o_strides;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t s = 0; s < problem.seq_len_q; ++s) {
      for (std::int64_t h = 0; h < problem.heads; ++h) {
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          output.data()[b * strides.batch + s * strides.seq + h * strides.head + d] = kWritten;
        }
      }
    }
  }
}

TEST_P(GuardedOutputShape, FreshBufferReportsNoStrayWrite) {
  const GuardedOutput output(problem());
  EXPECT_EQ(output.find_stray_write(), std::nullopt);
}

TEST_P(GuardedOutputShape, FreshBufferHoldsThePoisonInEveryElement) {
  const AttentionProblem shape = problem();
  const GuardedOutput output(shape);
  const std::uint16_t poison = traits_of(shape.dtype).poison_bits;
  std::int64_t not_poison = 0;
  for (std::int64_t position = 0; position < output.span(); ++position) {
    not_poison += output.data()[position] != poison ? 1 : 0;
  }
  EXPECT_EQ(not_poison, 0);
}

TEST_P(GuardedOutputShape, SpanEndsRightAfterTheLastElement) {
  const AttentionProblem shape = problem();
  const GuardedOutput output(shape);
  const TensorStrides& strides = shape.o_strides;
  const std::int64_t last_element = (shape.batch - 1) * strides.batch +
                                    (shape.seq_len_q - 1) * strides.seq +
                                    (shape.heads - 1) * strides.head + shape.head_dim - 1;
  EXPECT_EQ(output.span(), last_element + 1);
}

TEST_P(GuardedOutputShape, WritingEveryElementReportsNoStrayWrite) {
  const AttentionProblem shape = problem();
  GuardedOutput output(shape);
  write_every_element(shape, output);
  EXPECT_EQ(output.find_stray_write(), std::nullopt);
}

TEST_P(GuardedOutputShape, WriteOneElementBeforeTheFirstIsReportedAsBefore) {
  const AttentionProblem shape = problem();
  GuardedOutput output(shape);
  write_every_element(shape, output);
  output.data()[-1] = kWritten;
  const std::optional<std::string> stray = output.find_stray_write();
  ASSERT_TRUE(stray.has_value());
  EXPECT_THAT(*stray, HasSubstr("before"));
  EXPECT_THAT(*stray, HasSubstr("guard element 1 before element [0,0,0,0]"));
}

TEST_P(GuardedOutputShape, WriteAtTheFarEndOfTheLeadingGuardIsReported) {
  const AttentionProblem shape = problem();
  GuardedOutput output(shape);
  output.data()[-GuardedOutput::kGuardElements] = kWritten;
  const std::optional<std::string> stray = output.find_stray_write();
  ASSERT_TRUE(stray.has_value());
  EXPECT_THAT(*stray, HasSubstr("before"));
  EXPECT_THAT(*stray, HasSubstr(std::to_string(GuardedOutput::kGuardElements)));
}

TEST_P(GuardedOutputShape, WriteOnePastTheEndIsReportedAsPastTheEnd) {
  const AttentionProblem shape = problem();
  GuardedOutput output(shape);
  write_every_element(shape, output);
  output.data()[output.span()] = kWritten;
  const std::optional<std::string> stray = output.find_stray_write();
  ASSERT_TRUE(stray.has_value());
  EXPECT_THAT(*stray, HasSubstr("past the end"));
  EXPECT_THAT(*stray, HasSubstr("guard element 0 after the last element"));
}

TEST_P(GuardedOutputShape, WriteAtTheFarEndOfTheTrailingGuardIsReported) {
  const AttentionProblem shape = problem();
  GuardedOutput output(shape);
  output.data()[output.span() + GuardedOutput::kGuardElements - 1] = kWritten;
  const std::optional<std::string> stray = output.find_stray_write();
  ASSERT_TRUE(stray.has_value());
  EXPECT_THAT(*stray, HasSubstr("past the end"));
}

TEST_P(GuardedOutputShape, WriteBeyondTheTrailingGuardShortOfTheFenceIsReported) {
  // Past the margin, the buffer's end is rounded up to the fence's alignment: a store there does
  // not fault, and is found afterwards. (A store further out faults: core/fenced_buffer.h.)
  const AttentionProblem shape = problem();
  GuardedOutput output(shape);
  const std::int64_t past_margin = output.span() + GuardedOutput::kGuardElements;
  const auto buffer_end = reinterpret_cast<std::uintptr_t>(output.data() + past_margin);
  if (buffer_end % kFenceAlignment == 0) GTEST_SKIP() << "no slack: the buffer ends at the fence";
  output.data()[past_margin] = kWritten;
  const std::optional<std::string> stray = output.find_stray_write();
  ASSERT_TRUE(stray.has_value());
  EXPECT_THAT(*stray, HasSubstr("beyond its guard margin: byte 0 after the buffer"));
}

TEST_P(GuardedOutputPaddedShape, WriteIntoRowPaddingIsReportedWithItsOffset) {
  const AttentionProblem shape = problem();
  // The last padding element after head row [b=1, s=2, h=3], in the middle of the span.
  const TensorStrides& strides = shape.o_strides;
  const std::int64_t padding_offset = 1 * strides.batch + 2 * strides.seq + 3 * strides.head +
                                      shape.head_dim + GetParam().row_padding - 1;
  ASSERT_LT(padding_offset, GuardedOutput(shape).span());
  GuardedOutput output(shape);
  write_every_element(shape, output);
  ASSERT_EQ(output.data()[padding_offset], traits_of(shape.dtype).poison_bits)
      << "the chosen offset is an element, not padding";
  output.data()[padding_offset] = kWritten;
  const std::optional<std::string> stray = output.find_stray_write();
  ASSERT_TRUE(stray.has_value());
  EXPECT_THAT(*stray, HasSubstr("row padding"));
  EXPECT_THAT(*stray, HasSubstr("offset " + std::to_string(padding_offset) + " "));
}

TEST_P(GuardedOutputPaddedShape, WriteIntoTheFirstPaddingElementOfTheFirstRowIsReported) {
  const AttentionProblem shape = problem();
  GuardedOutput output(shape);
  output.data()[shape.head_dim] = kWritten;  // right after element [0, 0, 0, head_dim - 1]
  const std::optional<std::string> stray = output.find_stray_write();
  ASSERT_TRUE(stray.has_value());
  EXPECT_THAT(*stray, HasSubstr("row padding"));
  EXPECT_THAT(*stray, HasSubstr("offset " + std::to_string(shape.head_dim) + " "));
}

}  // namespace
}  // namespace attnfuzz
