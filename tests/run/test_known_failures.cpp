// SPDX-License-Identifier: BSD-3-Clause
// --known-failures: a listed case that fails as listed is known; one that passes fails naming the
// entry to remove; a failure of another kind stays a failure; skips stay skips; the case id and
// kernel patterns and the case keys all narrow an entry; a malformed list is refused naming the
// file and the field.
#include "run/known_failures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/harness_error.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

CaseResult result_of(const std::string& id, CaseStatus status, const std::string& reason = "") {
  CaseResult result;
  result.attention_case.id = id;
  result.attention_case.dtype = Dtype::bf16;
  result.attention_case.causal = true;
  result.kernel_name = "torch_sdpa-sdpa_flash";
  result.status = status;
  result.reason = reason;
  return result;
}

constexpr const char* kNanRows = R"({"known_failures": [
  {"case": "pr/1*", "kernel": "*-sdpa_flash", "where": {"dtype": "bf16"},
   "failure": "is NaN", "reason": "NaN for rows that see no key", "issue": "https://x/1"}]})";

std::string harness_error_of(const std::string& text) {
  try {
    KnownFailures::parse(text, "known.json");
  } catch (const HarnessError& error) {
    return error.what();
  }
  ADD_FAILURE() << "accepted " << text;
  return "";
}

TEST(KnownFailures, AListedCaseThatFailsAsListedIsKnownAndKeepsHowItFailed) {
  CaseResult result = result_of("pr/12", CaseStatus::fail, "element (b=0) is NaN but 0");
  KnownFailures::parse(kNanRows, "known.json").judge(result);
  EXPECT_EQ(result.status, CaseStatus::known);
  EXPECT_EQ(result.reason, "element (b=0) is NaN but 0");
  ASSERT_TRUE(result.known_failure.has_value());
  EXPECT_EQ(result.known_failure->reason, "NaN for rows that see no key");
  EXPECT_EQ(result.known_failure->issue, "https://x/1");
  EXPECT_EQ(result.known_failure->entry, "known.json#/known_failures/0");
}

TEST(KnownFailures, AListedCaseThatPassesFailsNamingTheEntryToRemove) {
  CaseResult result = result_of("pr/12", CaseStatus::pass);
  KnownFailures::parse(kNanRows, "known.json").judge(result);
  EXPECT_EQ(result.status, CaseStatus::fail);
  EXPECT_THAT(result.reason, HasSubstr("passes, but known.json#/known_failures/0 lists it"));
  EXPECT_THAT(result.reason, HasSubstr("https://x/1"));
  EXPECT_FALSE(result.known_failure.has_value());
}

TEST(KnownFailures, AFailureOfAnotherKindStaysAFailureAndSaysWhatTheEntryExpected) {
  CaseResult result = result_of("pr/12", CaseStatus::fail, "error 0.5 > allowed 0.01");
  KnownFailures::parse(kNanRows, "known.json").judge(result);
  EXPECT_EQ(result.status, CaseStatus::fail);
  EXPECT_THAT(result.reason,
              HasSubstr("error 0.5 > allowed 0.01 (not the known failure of "
                        "known.json#/known_failures/0, which fails with \"is NaN\")"));
}

TEST(KnownFailures, ACaseTheEntryDoesNotListIsLeftAlone) {
  const KnownFailures known = KnownFailures::parse(kNanRows, "known.json");
  CaseResult other_id = result_of("pr/2", CaseStatus::fail, "is NaN");
  known.judge(other_id);
  EXPECT_EQ(other_id.status, CaseStatus::fail);
  CaseResult other_kernel = result_of("pr/12", CaseStatus::fail, "is NaN");
  other_kernel.kernel_name = "torch_sdpa-sdpa_math";
  known.judge(other_kernel);
  EXPECT_EQ(other_kernel.status, CaseStatus::fail);
  CaseResult other_dtype = result_of("pr/12", CaseStatus::pass);
  other_dtype.attention_case.dtype = Dtype::fp16;
  known.judge(other_dtype);
  EXPECT_EQ(other_dtype.status, CaseStatus::pass);
}

TEST(KnownFailures, ASkippedCaseStaysSkippedAndNoListJudgesNothing) {
  CaseResult skipped = result_of("pr/12", CaseStatus::skip, "unsupported");
  KnownFailures::parse(kNanRows, "known.json").judge(skipped);
  EXPECT_EQ(skipped.status, CaseStatus::skip);
  CaseResult failed = result_of("pr/12", CaseStatus::fail, "is NaN");
  KnownFailures().judge(failed);
  EXPECT_EQ(failed.status, CaseStatus::fail);
}

TEST(KnownFailures, TheFirstEntryWhoseFailureMatchesGivesTheNote) {
  const KnownFailures known = KnownFailures::parse(R"({"known_failures": [
    {"failure": "hung", "reason": "hangs", "issue": "i/1"},
    {"reason": "anything", "issue": "i/2"}]})",
                                                   "k.json");
  CaseResult result = result_of("pr/1", CaseStatus::fail, "is NaN");
  known.judge(result);
  EXPECT_EQ(result.status, CaseStatus::known);
  EXPECT_EQ(result.known_failure->issue, "i/2");
}

TEST(KnownFailures, AMalformedListIsRefusedNamingTheFileAndTheField) {
  EXPECT_THAT(harness_error_of("[]"), HasSubstr("known.json: top level: expected a JSON object"));
  EXPECT_THAT(harness_error_of("{"), HasSubstr("known.json: malformed JSON at byte"));
  EXPECT_THAT(harness_error_of(R"({"known": []})"),
              HasSubstr("known.json: /known: unknown top-level key"));
  EXPECT_THAT(harness_error_of(R"({"known_failures": {}})"),
              HasSubstr("known.json: /known_failures: expected an array"));
  EXPECT_THAT(harness_error_of(R"({"known_failures": [{"reason": "r"}]})"),
              HasSubstr("known.json: /known_failures/0/issue: missing"));
  EXPECT_THAT(harness_error_of(R"({"known_failures": [{"reason": "", "issue": "i"}]})"),
              HasSubstr("known.json: /known_failures/0/reason: expected a non-empty string"));
  EXPECT_THAT(harness_error_of(R"({"known_failures": [{"reason": "r", "issue": "i", "id": "x"}]})"),
              HasSubstr("known.json: /known_failures/0/id: unknown key \"id\""));
  EXPECT_THAT(
      harness_error_of(
          R"({"known_failures": [{"reason": "r", "issue": "i", "where": {"dtype": "fp8"}}]})"),
      HasSubstr("known.json: /known_failures/0/where/dtype: "));
  EXPECT_THAT(
      harness_error_of(R"({"known_failures": [{"reason": "r", "reason": "s", "issue": "i"}]})"),
      HasSubstr("given twice"));
}

}  // namespace
}  // namespace attnfuzz
