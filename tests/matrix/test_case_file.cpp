// SPDX-License-Identifier: BSD-3-Clause
// Saved cases on disk (matrix/case_file.h): a binary file is one case named after the file, a JSON
// file is a matrix, and anything else is a HarnessError naming the file.
#include "matrix/case_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "case/case_codec.h"
#include "core/harness_error.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class CaseFile : public TemporaryFolder {};

TEST_F(CaseFile, ABinaryFileIsOneCaseNamedAfterTheFile) {
  AttentionCase attention_case;
  attention_case.seq_len_q = 113;
  std::string why;
  const std::optional<std::vector<std::uint8_t>> bytes = encode_case(attention_case, &why);
  ASSERT_TRUE(bytes.has_value()) << why;
  const auto path = write("crash-1234", std::string(bytes->begin(), bytes->end()));
  const std::vector<AttentionCase> cases = load_case_file(path);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].id, "crash-1234");
  AttentionCase expected = attention_case;
  expected.id = "crash-1234";
  EXPECT_EQ(cases[0], expected);
}

TEST_F(CaseFile, AJsonFileIsAMatrixWhoseCasesTakeTheirIdsFromTheFileName) {
  AttentionCase attention_case;
  attention_case.causal = true;
  // Named "regression" inside, as every saved regression once was: the file name tells them apart.
  const auto path = write("saved.json", case_to_matrix_text(attention_case, "regression"));
  const std::vector<AttentionCase> cases = load_case_file(path);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].id, "saved.json/0");
  EXPECT_TRUE(cases[0].causal);
}

TEST_F(CaseFile, AnythingElseIsAHarnessErrorNamingTheFile) {
  const auto garbage = write("garbage.bin", "\x01\x02 not a case");
  EXPECT_THAT([&] { load_case_file(garbage); },
              ThrowsMessage<HarnessError>(HasSubstr("garbage.bin")));
  const auto bad_case = write("bad", std::string("AFZ\x07", 4) + std::string(40, '\0'));
  EXPECT_THAT([&] { load_case_file(bad_case); },
              ThrowsMessage<HarnessError>(HasSubstr("version 7")));
  EXPECT_THROW(load_case_file(path("missing")), HarnessError);
}

}  // namespace
}  // namespace attnfuzz
