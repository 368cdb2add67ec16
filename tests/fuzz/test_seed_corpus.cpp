// SPDX-License-Identifier: BSD-3-Clause
// The shipped seed corpus: every file is a case that runs as saved. libFuzzer starts from these;
// a seed that decoded to nothing, or only after fitting, would leave the fuzzer to rediscover by
// mutation what the corpus claims to hold.
#include <gtest/gtest.h>

#include <filesystem>
#include <span>

#include "case/case_codec.h"
#include "case/work_cap.h"
#include "core/file_io.h"
#include "core/problem_features.h"
#include "run/case_runner.h"

namespace attnfuzz {
namespace {

TEST(SeedCorpus, EverySeedDecodesUnderTheWorkCapAsSavedAndRunsOnCpuFlash) {
  RunSettings settings;
  settings.backend = Backend::cpu;
  const CaseRunner runner(settings);
  int seeds = 0, passed = 0, long_rows = 0, backward_seeds = 0;
  std::uint32_t features_seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(ATTNFUZZ_SOURCE_DIR) / "corpus" / "seeds")) {
    const std::string bytes = read_file(entry.path());
    std::string why;
    bool fitted = true;
    const std::optional<AttentionCase> seed =
        decode_case(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                    &why, &fitted);
    ASSERT_TRUE(seed.has_value()) << entry.path() << ": " << why;
    EXPECT_FALSE(fitted) << entry.path() << " is over the work cap as saved";
    EXPECT_LE(case_work(*seed), kCaseWorkCap) << entry.path();
    const CaseResult result = runner.run(*seed);
    // A head dim no built-in kernel has is a plugin's seed: skipped here as unsupported.
    EXPECT_TRUE(result.status == CaseStatus::pass ||
                (result.status == CaseStatus::skip && result.skip_cause == SkipCause::unsupported))
        << entry.path() << ": " << describe_case(*seed) << ": " << result.reason;
    ++seeds;
    if (result.status == CaseStatus::pass) ++passed;
    if (seed->seq_len_k > 1024) ++long_rows;
    features_seen |= features_of(problem_of(*seed));
    backward_seeds += seed->backward ? 1 : 0;
  }
  EXPECT_GE(seeds, 150);
  EXPECT_GE(passed, seeds * 9 / 10);
  EXPECT_GE(long_rows, 10);  // the long rows of edges.json, fitted but long
  // The cases of variants.json: every variant has seeds for the fuzzer to mutate from.
  EXPECT_EQ(features_seen, kAllProblemFeatures);
  // The cases of backward.json: the fuzzer starts from the backward pass too.
  EXPECT_GE(backward_seeds, 10);
}

}  // namespace
}  // namespace attnfuzz
