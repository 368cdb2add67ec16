// SPDX-License-Identifier: BSD-3-Clause
// The libFuzzer engine end to end through its binary: it finds every planted bug from a clean
// start (the shipped seeds and dictionary, an empty working corpus), its crash file replays
// through fuzz_attention with exit 1, and -minimize_crash shrinks it. The correct kernel runs
// clean. Skipped when the build had no clang.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "kernels/kernel_registry.h"
#include "kernels/planted_bug.h"
#include "support/file_text.h"
#include "support/printers.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

#ifdef ATTNFUZZ_LIBFUZZER_BINARY
constexpr const char* kFuzzer = ATTNFUZZ_LIBFUZZER_BINARY;
#else
constexpr const char* kFuzzer = "";
#endif

struct Command {
  int exit_code = -1;
  std::string output;
};

Command run(const std::string& command, const std::filesystem::path& log) {
  const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  Command result;
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  result.output = read_file(log);
  return result;
}

// A folder of its own per test (TemporaryFolder) for the working corpus, crash files and logs.
class LibFuzzerTarget : public TemporaryFolder {
 protected:
  void SetUp() override {
    if (std::string(kFuzzer).empty() || !std::filesystem::exists(kFuzzer)) {
      GTEST_SKIP() << "the libFuzzer binary was not built (no clang)";
    }
    TemporaryFolder::SetUp();
    std::filesystem::create_directories(folder_ / "corpus");
  }

  std::string fuzz_command(const std::string& flags) const {
    const std::string source = ATTNFUZZ_SOURCE_DIR;
    return std::string(kFuzzer) + " " + flags + " -dict=" + source + "/corpus/attention.dict " +
           "-artifact_prefix=" + folder_.string() + "/ " + (folder_ / "corpus").string() + " " +
           source + "/corpus/seeds";
  }
  std::filesystem::path crash_file(const std::string& prefix = "crash-") const {
    for (const auto& entry : std::filesystem::directory_iterator(folder_)) {
      if (entry.path().filename().string().rfind(prefix, 0) == 0) return entry.path();
    }
    return {};
  }
};

TEST_F(LibFuzzerTarget, RunsTheCorrectKernelWithoutACrash) {
  const Command result = run(fuzz_command("-runs=400"), folder_ / "log");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(crash_file().empty());
}

// The number after "attnfuzz: stat::<name>: " in the target's output, or -1.
long long stat_of(const std::string& output, const std::string& name) {
  const std::string label = "attnfuzz: stat::" + name + ": ";
  const std::size_t at = output.find(label);
  if (at == std::string::npos) return -1;
  return std::stoll(output.substr(at + label.size()));
}

TEST_F(LibFuzzerTarget, EveryMutationItRunsIsACase) {
  // The custom mutator writes each mutation back as the case it decodes to: past the seeds, no
  // run is spent on bytes that are not a case (the one allowed: the empty input libFuzzer runs
  // first).
  const Command result = run(fuzz_command("-runs=900"), folder_ / "log");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_GE(stat_of(result.output, "inputs"), 900) << result.output;
  EXPECT_LE(stat_of(result.output, "inputs_not_cases"), 1) << result.output;
  EXPECT_GT(stat_of(result.output, "mutations"), 300) << result.output;
  EXPECT_GT(stat_of(result.output, "mutations_rewritten"), 0) << result.output;
}

class LibFuzzerPlant : public LibFuzzerTarget,
                       public ::testing::WithParamInterface<PlantedBugInfo> {};

TEST_P(LibFuzzerPlant, FindsItsCrashReplaysItAndMinimizesIt) {
  if (!cpu_flash_kernel().carries(GetParam().bug)) GTEST_SKIP() << "not a cpu_flash plant";
  // The backward's plants too: the binary form carries the case's "backward" flag, so the crash
  // and its minimized form replay through the backward pass.
  if (GetParam().detector != PlantDetector::comparison &&
      GetParam().detector != PlantDetector::backward) {
    GTEST_SKIP() << GetParam().name << " leaves the outputs as they are: not this test's to find";
  }
  const std::string plant = std::string(GetParam().name);
  const Command fuzzing =
      run(fuzz_command("--plant=" + plant + " -max_total_time=60"), folder_ / "fuzz.log");
  ASSERT_NE(fuzzing.output.find("attnfuzz: kernel cpu_flash failed"), std::string::npos)
      << "not found within 60 s:\n"
      << fuzzing.output.substr(0, 2000);
  EXPECT_NE(fuzzing.output.find("replay: fuzz_attention --replay"), std::string::npos);
  const std::filesystem::path crash = crash_file();
  ASSERT_FALSE(crash.empty());

  const Command replay = run(std::string(ATTNFUZZ_FUZZ_ATTENTION) + " --quiet --replay '" +
                                 crash.string() + "' --plant " + plant,
                             folder_ / "replay.log");
  EXPECT_EQ(replay.exit_code, 1) << replay.output;

  const std::filesystem::path minimized = folder_ / "minimized";
  // 200 mutations a step: each step's last, fruitless, try costs what it runs, once per plant.
  run(std::string(kFuzzer) + " --plant=" + plant + " -minimize_crash=1 -runs=200 " +
          "-exact_artifact_path=" + minimized.string() + " " + crash.string(),
      folder_ / "minimize.log");
  ASSERT_TRUE(std::filesystem::exists(minimized));
  EXPECT_LE(std::filesystem::file_size(minimized), std::filesystem::file_size(crash));
  const Command replay_minimized =
      run(std::string(ATTNFUZZ_FUZZ_ATTENTION) + " --quiet --replay '" + minimized.string() +
              "' --plant " + plant,
          folder_ / "replay_minimized.log");
  EXPECT_EQ(replay_minimized.exit_code, 1) << replay_minimized.output;
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, LibFuzzerPlant, ::testing::ValuesIn(kPlantedBugs),
                         [](const auto& info) { return std::string(info.param.name); });

// The bugs of memory and time end a libFuzzer run as libFuzzer ends it for any target: a store
// past the fences as a crash (after the fence's report naming the buffer), a leak at
// -rss_limit_mb, a hang at -timeout; each leaves its artifact.
struct ContainmentArtifact {
  std::string_view plant;
  std::string_view said;      // in the run's output
  std::string_view artifact;  // the artifact file's prefix
};
constexpr ContainmentArtifact kContainmentArtifacts[] = {
    {"output_written_far_past_end", "fenced buffer: the kernel wrote element", "crash-"},
    {"lse_written_far_past_end", "fenced buffer: the kernel wrote element", "crash-"},
    {"workspace_leaked_per_call", "libFuzzer: out-of-memory", "oom-"},
    {"hangs_on_row_without_keys", "libFuzzer: timeout", "timeout-"},
};

class LibFuzzerContainmentPlant : public LibFuzzerTarget,
                                  public ::testing::WithParamInterface<PlantedBugInfo> {};

TEST_P(LibFuzzerContainmentPlant, EndsTheRunWithTheArtifactOfItsKind) {
  if (GetParam().detector != PlantDetector::containment) {
    GTEST_SKIP() << GetParam().name << " is not a bug of memory or time";
  }
  const auto row = std::find_if(
      std::begin(kContainmentArtifacts), std::end(kContainmentArtifacts),
      [&](const ContainmentArtifact& artifact) { return artifact.plant == GetParam().name; });
  ASSERT_NE(row, std::end(kContainmentArtifacts)) << GetParam().name << " has no row";
  const Command fuzzing = run(fuzz_command("--plant=" + std::string(GetParam().name) +
                                           " -max_total_time=60 -timeout=5 -rss_limit_mb=1024"),
                              folder_ / "fuzz.log");
  EXPECT_NE(fuzzing.output.find(row->said), std::string::npos) << fuzzing.output.substr(0, 3000);
  EXPECT_FALSE(crash_file(std::string(row->artifact)).empty()) << fuzzing.output.substr(0, 3000);
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, LibFuzzerContainmentPlant, ::testing::ValuesIn(kPlantedBugs),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnfuzz
