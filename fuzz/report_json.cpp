// The JSON report. Field names of the earlier harness are kept (config.batch_size, config.seq_len,
// correctness.passed, kernel_name, ...) so dashboards reading old reports read new ones.
#include <cmath>

#include "fuzz/report_writers.h"

namespace attnfuzz {
namespace {

using nlohmann::json;

// JSON has no NaN or infinity. nlohmann would write them as null anyway; saying so here keeps the
// rule visible and independent of the library's default.
json number_or_null(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

json element_to_json(const ElementReport& element) {
  return {
      {"batch", element.batch},
      {"head", element.head},
      {"row", element.row},
      {"dim", element.dim},
      {"expected", number_or_null(element.expected)},
      {"actual", number_or_null(element.actual)},
      {"allowed", number_or_null(element.allowed)},
      {"fault", std::string(element_fault_name(element.fault))},
  };
}

json config_to_json(const AttentionCase& attention_case) {
  const double softmax_scale = effective_softmax_scale(attention_case);
  return {
      {"batch_size", attention_case.batch},
      {"num_heads", attention_case.heads},
      {"num_kv_heads", attention_case.kv_heads},
      {"seq_len", attention_case.seq_len_q},
      {"seq_len_q", attention_case.seq_len_q},
      {"seq_len_k", attention_case.seq_len_k},
      {"head_dim", attention_case.head_dim},
      {"dtype", std::string(dtype_name(attention_case.dtype))},
      {"causal", attention_case.causal},
      {"layout", std::string(layout_name(attention_case.layout))},
      {"row_padding", attention_case.row_padding},
      {"softmax_scale", number_or_null(softmax_scale)},
      {"data", std::string(distribution_name(attention_case.data))},
      {"seed", attention_case.seed},
      {"inject", format_injection(attention_case.injection)},
  };
}

json correctness_to_json(const CaseResult& result) {
  const Comparison& comparison = result.comparison;
  return {
      {"passed", result.status == CaseStatus::pass},
      {"max_abs_error", number_or_null(comparison.max_abs_error)},
      {"mean_abs_error", number_or_null(comparison.mean_abs_error)},
      {"max_rel_error", number_or_null(comparison.max_rel_error)},
      {"correlation", number_or_null(comparison.correlation)},
      {"error_ratio", number_or_null(comparison.error_ratio)},
      {"bound_ratio", number_or_null(comparison.bound_ratio)},
      {"fa_rule_ratio", number_or_null(comparison.fa_rule_ratio)},
      {"plain_max_abs_error", number_or_null(comparison.plain_max_abs_error)},
      {"fa_rule_atol", number_or_null(comparison.fa_rule_atol)},
      {"elements", comparison.elements},
      {"failing_elements", comparison.failing_elements},
      {"first_failure",
       comparison.first_failure ? element_to_json(*comparison.first_failure) : json(nullptr)},
      {"worst_element", element_to_json(comparison.worst_element)},
  };
}

}  // namespace

json case_to_json(const CaseResult& result) {
  return {
      {"case_id", result.attention_case.id},
      {"kernel_name", result.kernel_name},
      {"plant", result.plant},
      {"status", std::string(case_status_name(result.status))},
      {"reason", result.reason},
      {"oracle", result.oracle},
      {"config", config_to_json(result.attention_case)},
      // A case that never ran has no error figures: null, not a row of zeros that reads as perfect.
      {"correctness", result.ran ? correctness_to_json(result) : json(nullptr)},
      {"timing",
       {
           {"kernel_seconds", number_or_null(result.kernel_seconds)},
           {"oracle_seconds", number_or_null(result.oracle_seconds)},
           {"total_seconds", number_or_null(result.total_seconds)},
       }},
      {"timestamp", result.timestamp},
  };
}

json run_to_json(const RunReport& report) {
  const RunSummary& summary = report.summary;
  const RunEnvironment& environment = report.environment;

  json numerics = json::object();
  for (const auto& [key, value] : environment.numerics) numerics[key] = value;

  json results = json::array();
  for (const CaseResult& result : report.results) results.push_back(case_to_json(result));

  return {
      {"summary",
       {
           {"matrix_name", summary.matrix_name},
           {"matrix_source", summary.matrix_source},
           {"total", summary.total},
           {"passed", summary.passed},
           {"failed", summary.failed},
           {"skipped", summary.skipped},
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
}

}  // namespace attnfuzz
