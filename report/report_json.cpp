// SPDX-License-Identifier: BSD-3-Clause
// The JSON report. Field names of the earlier harness are kept (config.batch_size, config.seq_len,
// correctness.passed, kernel_name, ...) so dashboards reading old reports read new ones.
// Each case's record is case_to_json's (run/case_result_json.h).
#include "report/report_writers.h"
#include "run/case_result_json.h"

namespace attnfuzz {

using nlohmann::json;

namespace {

// A --bench run's section: how it measured, on what, against which baseline, with what verdicts.
json bench_to_json(const BenchReport& bench) {
  return {
      {"settings",
       {
           {"rounds", bench.settings.rounds},
           {"seconds_per_case", bench.settings.seconds_per_case},
           {"target_ci_width", bench.settings.target_ci_width},
           {"min_repetitions", bench.settings.min_repetitions},
           {"max_repetitions", bench.settings.max_repetitions},
           {"warmup_seconds", bench.settings.warmup_seconds},
           {"min_warmup_runs", bench.settings.min_warmup_runs},
           {"max_slowdown", bench.max_slowdown},
       }},
      {"identity", bench_identity_to_json(bench.identity)},
      {"machine_before", bench.machine_before},
      {"machine_after", bench.machine_after},
      {"warnings", bench.warnings},
      {"baseline", bench.baseline_path.empty()
                       ? json(nullptr)
                       : json{{"path", bench.baseline_path},
                              {"identity_mismatches", bench.identity_mismatches},
                              {"regressions", bench.regressions},
                              {"improvements", bench.improvements},
                              {"unchanged", bench.unchanged},
                              {"not_in_baseline", bench.not_in_baseline},
                              {"suspects", bench.suspects},
                              {"fail_on_suspect", bench.fail_on_suspect},
                              {"missing_cases", bench.missing_cases}}},
      {"reference", bench.reference.empty() ? json(nullptr)
                                            : json{{"kernel", bench.reference},
                                                   {"regressions", bench.regressions},
                                                   {"improvements", bench.improvements},
                                                   {"unchanged", bench.unchanged},
                                                   {"not_compared", bench.not_in_baseline}}},
      {"timed", bench.timed},
  };
}

}  // namespace

json run_to_json(const RunReport& report) {
  const RunSummary& summary = report.summary;
  const RunEnvironment& environment = report.environment;

  json numerics = json::object();
  for (const auto& [key, value] : environment.numerics) numerics[key] = value;

  json results = json::array();
  for (const CaseResult& result : report.results) results.push_back(case_to_json(result));

  json document = {
      {"schema_version", kReportSchemaVersion},
      {"summary",
       {
           {"matrix_name", summary.matrix_name},
           {"matrix_source", summary.matrix_source},
           {"total", summary.total},
           {"passed", summary.passed},
           {"failed", summary.failed},
           {"skipped", summary.skipped},
           {"known", summary.known},
           {"exit_code", summary.exit_code},
           {"wall_seconds", number_or_null(summary.wall_seconds)},
           {"started_at", summary.started_at},
       }},
      {"environment",
       {
           {"harness_version", environment.harness_version},
           {"git_commit", environment.git_commit},
           {"compiler", environment.compiler},
           {"build_type", environment.build_type},
           {"host_cpu", environment.host_cpu},
           {"threads", environment.threads},
           {"blas", environment.blas},
           {"backend", environment.backend},
           {"cuda", environment.cuda},
           {"numerics", numerics},
       }},
      {"results", results},
  };
  if (report.bench) document["bench"] = bench_to_json(*report.bench);
  return document;
}

}  // namespace attnfuzz
