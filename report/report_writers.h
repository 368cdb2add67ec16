// SPDX-License-Identifier: BSD-3-Clause
// Renderings of a run: the JSON report, JUnit XML, and the human-readable table. File writers are
// atomic (temporary file, flush, rename): a reader never sees half a report. Renderers read the
// counts from report.summary: call summarize() first.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "core/write_file_atomically.h"
#include "report/run_report.h"
#include "run/case_result_json.h"

namespace attnfuzz {

// The JSON report's format: raised when a field changes meaning or goes away (a field added keeps
// it). 1: the correctness report with `performance` and `bench` for --bench runs.
inline constexpr int kReportSchemaVersion = 1;

// The whole run, under "schema_version"; each case as case_to_json (run/case_result_json.h) writes
// it.
nlohmann::json run_to_json(const RunReport& report);

// The shell command that reruns a failing case (run/replay_command.h renders it for the CLI).
using ReplayOf = std::function<std::string(const CaseResult&)>;

// JUnit XML: a <testcase> per case; a failure's body has the key figures, the replay command and
// the worker's last output, which <system-out> carries as well; a hung or crashed case's time is
// how long it ran before its worker was lost.
std::string run_to_junit_xml(const RunReport& report, const ReplayOf& replay_of);

// GitHub-flavoured Markdown sized for $GITHUB_STEP_SUMMARY: a summary line, a table of failures
// with the command that replays each (`replay_of` renders it), and skipped cases counted by
// reason.
std::string run_to_markdown(const RunReport& report, const ReplayOf& replay_of);

// One self-contained HTML page (inline CSS and SVG; no scripts, nothing fetched): the verdict, an
// error_ratio heatmap per kernel and dtype, a panel per value of each other case field the run
// varies (report/heatmap_place.h: head_dim, causal, data, layout, row padding, the softmax scale,
// injected values and the variants' fields) with seq lens as rows and heads x batch as columns,
// failing cells marked and linked to their row in the failures table, which has each replay
// command; skips by reason and the environment. Well-formed XML as well (XHTML-compatible).
std::string run_to_html(const RunReport& report, const ReplayOf& replay_of);

void write_table_header(std::ostream& out);
void write_table_row(std::ostream& out, const CaseResult& result);
void write_table_summary(std::ostream& out, const RunReport& report);
// --bench: each timed case's statistics and verdict against the baseline (with `only_failures`,
// only of the cases that failed the gate).
void write_performance_table(std::ostream& out, const RunReport& report, bool only_failures);

}  // namespace attnfuzz
