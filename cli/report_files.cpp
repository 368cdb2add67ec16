// SPDX-License-Identifier: BSD-3-Clause
#include "cli/report_files.h"

#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/exit_codes.h"
#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/json_text.h"
#include "core/write_file_atomically.h"

namespace attnfuzz {
namespace {

// A report file the run may write: its flag, the path the flag gave (empty: not asked for), how to
// render it, and whether it is added to what the file holds already rather than replacing it.
struct ReportFile {
  const char* flag;
  const std::string& path;
  std::function<std::string()> render;
  bool appends = false;
};

std::vector<ReportFile> report_files(const HarnessOptions& options, const RunReport& report,
                                     const ReplayOf& replay_of) {
  return {
      {"--json", options.json, [&] { return json_text(run_to_json(report), 2) + "\n"; }},
      {"--junit", options.junit, [&] { return run_to_junit_xml(report, replay_of); }},
      // Appended: $GITHUB_STEP_SUMMARY collects every step's summary, and a second run's report
      // must not erase the first's.
      {"--markdown", options.markdown, [&] { return run_to_markdown(report, replay_of); }, true},
      {"--html", options.html, [&] { return run_to_html(report, replay_of); }},
  };
}

// A report path of "-" is standard output.
constexpr std::string_view kStandardOutput = "-";

// Standard output as it was when the program started, before check_outputs sends std::cout to
// stderr.
std::ostream& report_stdout() {
  static std::ostream stream(std::cout.rdbuf());
  return stream;
}

// The report's text after what the file holds already, for a report that appends.
std::string with_earlier_content(const ReportFile& file, std::string text) {
  if (!file.appends) return text;
  std::error_code error;
  if (!std::filesystem::is_regular_file(file.path, error)) return text;
  std::string earlier = read_file(file.path);
  if (!earlier.empty() && earlier.back() != '\n') earlier += '\n';
  return earlier.empty() ? text : earlier + "\n" + text;
}

}  // namespace

std::vector<std::string> report_flags_given(const HarnessOptions& options) {
  const RunReport nothing_yet;
  std::vector<std::string> given;
  for (const ReportFile& file : report_files(options, nothing_yet, nullptr)) {
    if (!file.path.empty()) given.emplace_back(file.flag);
  }
  return given;
}

void check_outputs(const HarnessOptions& options) {
  const RunReport nothing_yet;
  const char* on_stdout = nullptr;
  for (const ReportFile& file : report_files(options, nothing_yet, nullptr)) {
    if (file.path == kStandardOutput) {
      if (on_stdout != nullptr) {
        throw HarnessError(std::string(on_stdout) + " and " + file.flag +
                           " both name standard output (-): only one report can go there");
      }
      on_stdout = file.flag;
    } else if (!file.path.empty()) {
      check_file_writable(file.path, file.flag);
    }
  }
  if (on_stdout != nullptr) {
    report_stdout();  // keeps the real stdout before it is redirected
    std::cout.rdbuf(std::cerr.rdbuf());
  }
}

bool write_report_files(const HarnessOptions& options, const RunReport& report,
                        const ReplayOf& replay_of) {
  bool all_written = true;
  for (const ReportFile& file : report_files(options, report, replay_of)) {
    if (file.path.empty()) continue;
    try {
      if (file.path == kStandardOutput) {
        report_stdout() << file.render() << std::flush;
      } else {
        write_file_atomically(file.path, with_earlier_content(file, file.render()));
      }
    } catch (const HarnessError& error) {
      std::cerr << "fuzz_attention: error: " << file.flag << ": " << error.what() << "\n";
      all_written = false;
    }
  }
  return all_written;
}

int exit_code_of(const RunReport& report, bool reports_written) {
  if (report.summary.exit_code == kExitFail || reports_written) return report.summary.exit_code;
  return kExitHarnessError;
}

}  // namespace attnfuzz
