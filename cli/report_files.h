// SPDX-License-Identifier: BSD-3-Clause
// The report files of a matrix run (--json, --junit, --markdown, --html): checked to be writable
// before the first case, so that a typo in a path costs a second, not the whole run; written
// atomically after the last; and the exit code that says whether they were.
#pragma once

#include <string>
#include <vector>

#include "options/harness_options.h"
#include "report/report_writers.h"

namespace attnfuzz {

// The flags of the report files that `options` asks for, in the order the files are written.
std::vector<std::string> report_flags_given(const HarnessOptions& options);

// Before the first case: every report the run will write can be written, and at most one goes to
// standard output ("-"); when one does, the run's own lines (std::cout) go to stderr from here on,
// so that stdout carries the report alone (e.g. `--json - | jq`). Throws HarnessError.
void check_outputs(const HarnessOptions& options);

// Each report file asked for, written atomically. A report that cannot be written is named on
// stderr and the others are still written; returns false when any failed.
bool write_report_files(const HarnessOptions& options, const RunReport& report,
                        const ReplayOf& replay_of);

// The exit code of a run whose reports were written or not: a failing case's 1 comes first (a
// report that could not be written must not hide a broken kernel), then 3 for the lost report,
// then the run's own 2 or 0.
int exit_code_of(const RunReport& report, bool reports_written);

}  // namespace attnfuzz
