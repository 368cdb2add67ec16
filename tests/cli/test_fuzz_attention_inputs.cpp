// SPDX-License-Identifier: BSD-3-Clause
// A kernel's inputs are evidence, end to end through the real binary: plugins that zero their
// inputs, rewrite the block table, zero the ALiBi slopes, empty cu_seqlens, scale Q in place after
// computing or write past K's end (tests/plugins/input_writing_attention.c) each fail the variants'
// matrix and the property search, naming the input they changed, where a harness that judged
// kernels by the buffers it handed them passed the first four. Plugins that write far past O or
// the log-sum-exp fail alike, naming the buffer their store faulted in (or whose margin it hit).
// ATTNFUZZ_TEST_FUZZ_ATTENTION=<an older fuzz_attention> runs these against another build.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "support/fuzz_attention_binary.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

struct InputWritingPlugin {
  const char* name;
  const char* path;
  const char* reason;  // what the failing cases' reasons say
};

void PrintTo(const InputWritingPlugin& plugin, std::ostream* out) {
  *out << plugin.name;
}

const std::string kVariantsMatrix =
    std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/variants.json";

class InputWritingKernel : public FuzzAttention,
                           public ::testing::WithParamInterface<InputWritingPlugin> {};

TEST_P(InputWritingKernel, FailsTheVariantsMatrixNamingTheBufferItWrote) {
  const RunResult result = run("--configs " + quoted(kVariantsMatrix) + " --quiet --kernel-lib " +
                               quoted(GetParam().path));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  // After what the comparison with the oracle found, if anything: the output is still judged
  // against the inputs as they were.
  EXPECT_THAT(result.out, HasSubstr(GetParam().reason)) << result.out;
}

TEST_P(InputWritingKernel, FailsThePropertySearchNamingTheBufferItWrote) {
  const RunResult result =
      run("--properties --budget 30 --property matches_oracle --kernel-lib " +
          quoted(GetParam().path) + " --regressions " + quoted(path("regressions").string()));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL matches_oracle")) << result.out;
  EXPECT_THAT(result.out, HasSubstr(GetParam().reason)) << result.out;
}

INSTANTIATE_TEST_SUITE_P(
    EachMisuse, InputWritingKernel,
    ::testing::Values(
        InputWritingPlugin{"zero_inputs", ATTNFUZZ_INPUT_ZERO_INPUTS_PLUGIN,
                           "the kernel changed its input Q"},
        InputWritingPlugin{"rewrite_block_table", ATTNFUZZ_INPUT_REWRITE_BLOCK_TABLE_PLUGIN,
                           "the kernel changed its input block_table"},
        InputWritingPlugin{"zero_slopes", ATTNFUZZ_INPUT_ZERO_SLOPES_PLUGIN,
                           "the kernel changed its input alibi_slopes"},
        InputWritingPlugin{"empty_cu_seqlens", ATTNFUZZ_INPUT_EMPTY_CU_SEQLENS_PLUGIN,
                           "the kernel changed its input cu_seqlens_"},
        InputWritingPlugin{"scale_q_after", ATTNFUZZ_INPUT_SCALE_Q_AFTER_PLUGIN,
                           "the kernel changed its input Q"},
        InputWritingPlugin{"write_past_k", ATTNFUZZ_INPUT_WRITE_PAST_K_PLUGIN,
                           "the kernel changed its input K"},
        // A dense case's store faults at the fence; a packed one's lands in the wider margin.
        InputWritingPlugin{"write_past_o", ATTNFUZZ_INPUT_WRITE_PAST_O_PLUGIN, "of the output"},
        InputWritingPlugin{"write_past_lse", ATTNFUZZ_INPUT_WRITE_PAST_LSE_PLUGIN,
                           "of the log-sum-exp output"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(FuzzAttention, APluginThatWritesIntoItsFp8KFailsNamingTheByte) {
  // Version 4 hands fp8 inputs as bytes, a copy of the harness's: a write into it is found too.
  const RunResult result =
      run("--configs " + quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/fp8.json") +
          " --quiet --kernel-lib " + quoted(ATTNFUZZ_INPUT_ZERO_FP8_K_PLUGIN));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("the plugin changed the input K, byte ")) << result.out;
  const RunResult past_end =
      run("--configs " + quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/fp8.json") +
          " --quiet --kernel-lib " + quoted(ATTNFUZZ_INPUT_WRITE_PAST_FP8_K_PLUGIN));
  EXPECT_EQ(past_end.exit_code, 1) << past_end.out << past_end.err;
  EXPECT_THAT(past_end.out, ::testing::ContainsRegex("the plugin changed the input K, byte [0-9]+ "
                                                     "\\(past the tensor's [0-9]+ elements, in "
                                                     "its guard tail\\)"))
      << past_end.out;
}

TEST_F(FuzzAttention, AWritePastAnInputsEndIsNamedAsAWriteIntoItsGuardTail) {
  const RunResult result = run("--configs " + quoted(kVariantsMatrix) + " --quiet --kernel-lib " +
                               quoted(ATTNFUZZ_INPUT_WRITE_PAST_K_PLUGIN));
  EXPECT_THAT(result.out, HasSubstr("in its guard tail")) << result.out;
}

}  // namespace
}  // namespace attnfuzz
