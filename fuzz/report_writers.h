// Renderings of a run: the JSON report, JUnit XML, and the human-readable table. File writers are
// atomic (temporary file, flush, rename): a reader never sees half a report. Renderers read the
// counts from report.summary: call summarize() first.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/run_report.h"

namespace attnfuzz {

// One case as JSON, keeping the field names of the earlier harness (config.batch_size,
// config.num_heads, config.seq_len, config.head_dim, config.dtype; correctness.passed,
// correctness.max_abs_error, correctness.mean_abs_error, correctness.correlation; kernel_name,
// timestamp) plus status, reason, error_ratio and the failing element.
nlohmann::json case_to_json(const CaseResult& result);
nlohmann::json run_to_json(const RunReport& report);

std::string run_to_junit_xml(const RunReport& report);

// GitHub-flavoured Markdown sized for $GITHUB_STEP_SUMMARY: a summary line, a table of failures
// with the command that replays each (`replay_of` renders it), and skipped cases counted by
// reason.
std::string run_to_markdown(const RunReport& report,
                            const std::function<std::string(const CaseResult&)>& replay_of);

void write_table_header(std::ostream& out);
void write_table_row(std::ostream& out, const CaseResult& result);
void write_table_summary(std::ostream& out, const RunReport& report);

// Writes `contents` to `path` atomically; throws HarnessError naming the path on failure.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

}  // namespace attnfuzz
