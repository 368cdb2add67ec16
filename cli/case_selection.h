// SPDX-License-Identifier: BSD-3-Clause
// Which cases a run runs and where each came from: the built-in matrix, --configs or --replay's
// case files, narrowed by --case and --shard; the command that replays one of them; and the modes
// that only name or save those cases (--list-cases, --save-cases, --describe).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "case/attention_case.h"
#include "matrix/matrix_file.h"
#include "options/harness_options.h"
#include "run/case_result.h"
#include "run/case_runner.h"

namespace attnfuzz {

// The matrices a run reads when --configs and --replay name none.
inline constexpr std::string_view kDefaultMatrix = "pr.json";
inline constexpr std::string_view kDefaultBenchMatrix = "bench.json";

// The cases of a run and where each came from.
struct RunPlan {
  CaseMatrix matrix;
  std::map<std::string, std::filesystem::path> file_of_case;  // replay: the file holding each id
};

// --replay PATH: the cases of one file, or of every regular file in a folder (sorted by name).
RunPlan replay_plan(const std::filesystem::path& path);

// The plan the flags name: --replay's files, --configs' matrix, or the built-in default (the bench
// matrix with --bench).
RunPlan plan_of(const HarnessOptions& options);

// The matrix's cases that one of the --case patterns matches, in the matrix's order (all of them
// when there is no pattern); a pattern that matches no case is a HarnessError.
std::vector<AttentionCase> select_cases(const CaseMatrix& matrix,
                                        const std::vector<std::string>& patterns);

// The cases of the plan this run runs: those --case names (default: all), then --shard's part.
std::vector<AttentionCase> cases_to_run(const HarnessOptions& options, const RunPlan& plan);

// The command that reruns one result's case alone, as this run ran it.
std::string replay_command(const HarnessOptions& options, const RunSettings& settings,
                           const RunPlan& plan, const CaseResult& result);

// --save-cases DIR: the cases as binary case files, named after their ids; a case over the binary
// form's work cap is saved fitted under it (case/work_cap.h), and says so. Returns the exit code;
// throws HarnessError when no case could be saved.
int save_cases(const std::vector<AttentionCase>& cases, const std::filesystem::path& folder);

// --list-cases: what a run with these flags would run, a case a line: its id and its shape.
int list_cases(const HarnessOptions& options);

// --describe FILE: the file's cases as one matrix document (what --configs reads, what json.load
// parses), named after the file.
int describe(const std::filesystem::path& path);

}  // namespace attnfuzz
