// SPDX-License-Identifier: BSD-3-Clause
// A case's result as JSON and back. The writer keeps the earlier harness's field names; the reader
// is strict (every field it needs, of the right type) because what it reads comes from files and
// processes that may have been cut off mid-write.
#include "run/case_result_json.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "case/case_codec.h"

namespace attnfuzz {

using nlohmann::json;

json number_or_null(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

namespace {

// The numeric fields of the records, each written and read back through one list, so that the
// writer and the reader cannot disagree on a name.
template <typename Record, typename Value>
struct Field {
  const char* name;
  Value Record::*member;
};
constexpr Field<ElementReport, std::int64_t> kElementIndices[] = {
    {"batch", &ElementReport::batch},
    {"head", &ElementReport::head},
    {"row", &ElementReport::row},
    {"dim", &ElementReport::dim},
};
constexpr Field<ElementReport, double> kElementFigures[] = {
    {"expected", &ElementReport::expected},
    {"actual", &ElementReport::actual},
    {"allowed", &ElementReport::allowed},
};
constexpr Field<Comparison, double> kComparisonFigures[] = {
    {"max_abs_error", &Comparison::max_abs_error},
    {"mean_abs_error", &Comparison::mean_abs_error},
    {"max_rel_error", &Comparison::max_rel_error},
    {"correlation", &Comparison::correlation},
    {"error_ratio", &Comparison::error_ratio},
    {"bound_ratio", &Comparison::bound_ratio},
    {"fa_rule_ratio", &Comparison::fa_rule_ratio},
    {"plain_max_abs_error", &Comparison::plain_max_abs_error},
    {"fa_rule_atol", &Comparison::fa_rule_atol},
};
constexpr Field<Comparison, std::int64_t> kComparisonCounts[] = {
    {"elements", &Comparison::elements},
    {"failing_elements", &Comparison::failing_elements},
    {"inconclusive_rows", &Comparison::inconclusive_rows},
};
// The log-sum-exp output's check, written only for a case that returns it.
constexpr Field<Comparison, double> kLogSumExpFigures[] = {
    {"bound_ratio", &Comparison::lse_bound_ratio},
    {"max_abs_error", &Comparison::lse_max_abs_error},
};
constexpr Field<Comparison, std::int64_t> kLogSumExpCounts[] = {
    {"rows", &Comparison::lse_rows},
    {"failing_rows", &Comparison::lse_failing_rows},
};
// The backward pass's judgement, written only for a case that ran it.
constexpr Field<GradientComparison, double> kBackwardFigures[] = {
    {"bound_ratio", &GradientComparison::bound_ratio},
};
// Written always, read where present: records of earlier versions have none (a stream resumed
// across the change, a baseline).
constexpr Field<GradientComparison, double> kBackwardLaterFigures[] = {
    {"fa_rule_ratio", &GradientComparison::fa_rule_ratio},
};
constexpr Field<GradientComparison, std::int64_t> kBackwardCounts[] = {
    {"elements", &GradientComparison::elements},
    {"failing_elements", &GradientComparison::failing_elements},
};
// Each gradient's largest error, by its key.
struct GradientErrorKey {
  GradientTensor tensor;
  const char* key;
};
constexpr GradientErrorKey kGradientErrorKeys[] = {{GradientTensor::dq, "max_abs_error_q"},
                                                   {GradientTensor::dk, "max_abs_error_k"},
                                                   {GradientTensor::dv, "max_abs_error_v"}};
constexpr Field<RoundingBias, double> kBiasFigures[] = {
    {"outward_z", &RoundingBias::outward_z}, {"outward_steps", &RoundingBias::outward_steps},
    {"upward_z", &RoundingBias::upward_z},   {"upward_steps", &RoundingBias::upward_steps},
    {"ratio", &RoundingBias::ratio},
};
constexpr Field<RoundingBias, double> kPlainBiasFigures[] = {
    {"plain_outward_steps", &RoundingBias::plain_outward_steps},
    {"plain_upward_steps", &RoundingBias::plain_upward_steps},
};
constexpr Field<RoundingBias, std::int64_t> kBiasCounts[] = {
    {"rows", &RoundingBias::rows},
};

// Writes each field of `fields` from `record` into `object`; non-finite numbers as null.
template <typename Record, typename Value, std::size_t count>
void write_fields(json& object, const Record& record, const Field<Record, Value> (&fields)[count]) {
  for (const auto& field : fields) {
    if constexpr (std::is_floating_point_v<Value>) {
      object[field.name] = number_or_null(record.*field.member);
    } else {
      object[field.name] = record.*field.member;
    }
  }
}

json element_to_json(const ElementReport& element) {
  json object = {{"fault", std::string(element_fault_name(element.fault))}};
  write_fields(object, element, kElementIndices);
  write_fields(object, element, kElementFigures);
  return object;
}

// A report's config: the case's keys (a valid one-case matrix entry) with the scale it ran with,
// plus the earlier harness's names that the schema keeps as ALIAS and SHORTHAND rows
// (batch_size, num_heads, seq_len), which the matrix reader accepts: an alias holds its field's
// value, a shorthand its first field's (the fields' own keys, applied after it, set the rest).
json config_to_json(const AttentionCase& attention_case) {
  AttentionCase as_run = attention_case;
  as_run.softmax_scale = effective_softmax_scale(attention_case);
  json config = case_keys_to_json(as_run);
  if (!std::isfinite(as_run.softmax_scale)) config["softmax_scale"] = nullptr;
#define ATTNFUZZ_CONFIG_KEY_OF(key, member) \
  config[key] = CaseFieldTraits<CaseField::member>::Codec::write(attention_case.member);
#define ATTNFUZZ_CONFIG_SHORTHAND(key, first, second) ATTNFUZZ_CONFIG_KEY_OF(key, first)
  ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_CONFIG_SHORTHAND, ATTNFUZZ_CONFIG_KEY_OF)
#undef ATTNFUZZ_CONFIG_SHORTHAND
#undef ATTNFUZZ_CONFIG_KEY_OF
  config["inject"] = format_injection(attention_case.injection);  // "none" too, unlike the keys
  return config;
}

json correctness_to_json(const CaseResult& result) {
  const Comparison& comparison = result.comparison;
  json correctness = {
      {"passed", result.status == CaseStatus::pass},
      {"first_failure",
       comparison.first_failure ? element_to_json(*comparison.first_failure) : json(nullptr)},
      {"worst_element", element_to_json(comparison.worst_element)},
  };
  write_fields(correctness, comparison, kComparisonFigures);
  write_fields(correctness, comparison, kComparisonCounts);
  json bias = json::object();
  write_fields(bias, comparison.bias, kBiasFigures);
  write_fields(bias, comparison.bias, kBiasCounts);
  write_fields(bias, comparison.bias, kPlainBiasFigures);
  correctness["bias"] = bias;
  if (comparison.lse_rows > 0) {
    json log_sum_exp = json::object();
    write_fields(log_sum_exp, comparison, kLogSumExpFigures);
    write_fields(log_sum_exp, comparison, kLogSumExpCounts);
    log_sum_exp["first_failure"] =
        comparison.lse_first_failure.empty() ? json(nullptr) : json(comparison.lse_first_failure);
    correctness["log_sum_exp"] = log_sum_exp;
  }
  if (result.backward) {
    const GradientComparison& backward = *result.backward;
    json object = {
        {"inconclusive", backward.inconclusive},
        {"inconclusive_reason", backward.inconclusive ? json(backward.reason) : json(nullptr)},
        {"first_failure", backward.failed ? json(backward.reason) : json(nullptr)}};
    write_fields(object, backward, kBackwardFigures);
    write_fields(object, backward, kBackwardLaterFigures);
    write_fields(object, backward, kBackwardCounts);
    for (const GradientErrorKey& each : kGradientErrorKeys) {
      object[each.key] = number_or_null(backward.max_abs_error[static_cast<int>(each.tensor)]);
    }
    correctness["backward"] = object;
  }
  return correctness;
}

// ---- reading back ----

[[noreturn]] void malformed(const std::string& pointer, const std::string& problem) {
  throw std::runtime_error("result record, field " + pointer + ": " + problem);
}

// The pointer is a view so that calls with a literal bind no temporary (GCC 13 would warn of a
// dangling reference to it in `const json& x = member(record, "", ...)`).
const json& member(const json& object, std::string_view pointer, const char* name) {
  if (!object.is_object()) malformed(std::string(pointer), "expected an object");
  const auto found = object.find(name);
  if (found == object.end()) malformed(std::string(pointer) + "/" + name, "missing");
  return *found;
}

std::string text_at(const json& object, const std::string& pointer, const char* name) {
  const json& value = member(object, pointer, name);
  if (!value.is_string()) malformed(pointer + "/" + name, "expected a string");
  return value.get<std::string>();
}

// A number written by number_or_null: null reads back as NaN.
double number_at(const json& object, const std::string& pointer, const char* name) {
  const json& value = member(object, pointer, name);
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!value.is_number()) malformed(pointer + "/" + name, "expected a number or null");
  return value.get<double>();
}

std::int64_t integer_at(const json& object, const std::string& pointer, const char* name) {
  const json& value = member(object, pointer, name);
  if (!value.is_number_integer()) malformed(pointer + "/" + name, "expected an integer");
  return value.get<std::int64_t>();
}

// Reads each field of `fields` from `object` (at JSON pointer `pointer`) into `record`.
template <typename Record, typename Value, std::size_t count>
void read_fields(Record& record, const json& object, const std::string& pointer,
                 const Field<Record, Value> (&fields)[count]) {
  for (const auto& field : fields) {
    if constexpr (std::is_floating_point_v<Value>) {
      record.*field.member = number_at(object, pointer, field.name);
    } else {
      record.*field.member = integer_at(object, pointer, field.name);
    }
  }
}

ElementReport element_from_json(const json& record, const std::string& pointer) {
  ElementReport element;
  read_fields(element, record, pointer, kElementIndices);
  read_fields(element, record, pointer, kElementFigures);
  const std::string fault = text_at(record, pointer, "fault");
  for (ElementFault each : {ElementFault::none, ElementFault::unwritten, ElementFault::nonfinite,
                            ElementFault::beyond_bound}) {
    if (element_fault_name(each) == fault) {
      element.fault = each;
      return element;
    }
  }
  malformed(pointer + "/fault", "unknown fault \"" + fault + "\"");
}

GradientComparison backward_from_json(const json& object) {
  const std::string at = "/correctness/backward";
  GradientComparison backward;
  read_fields(backward, object, at, kBackwardFigures);
  read_fields(backward, object, at, kBackwardCounts);
  for (const auto& field : kBackwardLaterFigures) {
    if (object.contains(field.name)) backward.*field.member = number_at(object, at, field.name);
  }
  for (const GradientErrorKey& each : kGradientErrorKeys) {
    backward.max_abs_error[static_cast<int>(each.tensor)] = number_at(object, at, each.key);
  }
  const json& inconclusive = member(object, at, "inconclusive");
  if (!inconclusive.is_boolean()) malformed(at + "/inconclusive", "expected a boolean");
  backward.inconclusive = inconclusive.get<bool>();
  if (const json& first = member(object, at, "first_failure"); first.is_string()) {
    backward.failed = true;
    backward.reason = first.get<std::string>();
  }
  // Absent from the reports of earlier versions; where present, a line exactly when inconclusive.
  if (const auto why = object.find("inconclusive_reason"); why != object.end()) {
    if (backward.inconclusive ? !why->is_string() : !why->is_null()) {
      malformed(at + "/inconclusive_reason",
                backward.inconclusive ? "expected a string" : "expected null");
    }
    if (backward.inconclusive) backward.reason = why->get<std::string>();
  }
  backward.passed = !backward.failed && !backward.inconclusive;
  return backward;
}

Comparison comparison_from_json(const json& record, bool passed) {
  const std::string at = "/correctness";
  const json& correctness = member(record, "", "correctness");
  Comparison comparison;
  comparison.passed = passed;
  read_fields(comparison, correctness, at, kComparisonFigures);
  read_fields(comparison, correctness, at, kComparisonCounts);
  if (const json& first = member(correctness, at, "first_failure"); !first.is_null()) {
    comparison.first_failure = element_from_json(first, at + "/first_failure");
  }
  comparison.worst_element =
      element_from_json(member(correctness, at, "worst_element"), at + "/worst_element");
  if (correctness.contains("log_sum_exp")) {
    const json& log_sum_exp = member(correctness, at, "log_sum_exp");
    read_fields(comparison, log_sum_exp, at + "/log_sum_exp", kLogSumExpFigures);
    read_fields(comparison, log_sum_exp, at + "/log_sum_exp", kLogSumExpCounts);
    if (const json& first = member(log_sum_exp, at + "/log_sum_exp", "first_failure");
        first.is_string()) {
      comparison.lse_first_failure = first.get<std::string>();
    }
  }
  const json& bias = member(correctness, at, "bias");
  read_fields(comparison.bias, bias, at + "/bias", kBiasFigures);
  read_fields(comparison.bias, bias, at + "/bias", kBiasCounts);
  // Reports written before the plain reference's lean was recorded have none: 0.
  for (const auto& field : kPlainBiasFigures) {
    if (bias.contains(field.name)) {
      comparison.bias.*field.member = number_at(bias, at + "/bias", field.name);
    }
  }
  comparison.bias.leans = comparison.bias.ratio > 1.0;
  comparison.failed = !passed && (comparison.failing_elements > 0 ||
                                  comparison.fa_rule_ratio > 1.0 || comparison.bias.leans);
  comparison.inconclusive = !passed && !comparison.failed;
  return comparison;
}

json timing_to_json(const CaseTiming& timing) {
  json object = json::object();
  for (const CaseTimingStep& step : kCaseTimingSteps) {
    object[std::string(step.name)] = number_or_null(timing.*step.member);
  }
  return object;
}

// A report written before a step was timed lacks it: 0 s, as for a step that did not run.
CaseTiming timing_from_json(const json& object) {
  CaseTiming timing;
  for (const CaseTimingStep& step : kCaseTimingSteps) {
    const std::string name(step.name);
    if (step.always_reported || object.contains(name)) {
      timing.*step.member = number_at(object, "/timing", name.c_str());
    }
  }
  return timing;
}

}  // namespace

json case_to_json(const CaseResult& result) {
  json record = {
      {"case_id", result.attention_case.id},
      {"kernel_name", result.kernel_name},
      {"plant", result.plant},
      {"status", std::string(case_status_name(result.status))},
      {"reason", result.reason},
      {"oracle", result.oracle},
      {"config", config_to_json(result.attention_case)},
      // A case that never ran, or whose oracle failed, has no error figures: null, not a row of
      // zeros that reads as perfect.
      {"correctness",
       result.ran && !result.oracle.empty() ? correctness_to_json(result) : json(nullptr)},
      {"timing", timing_to_json(result.timing)},
      {"timestamp", result.timestamp},
  };
  if (result.status == CaseStatus::skip) {
    record["skip_cause"] = std::string(skip_cause_name(result.skip_cause));
  }
  if (!result.output_tail.empty()) record["output_tail"] = result.output_tail;
  if (result.known_failure) {
    record["known_failure"] = {{"reason", result.known_failure->reason},
                               {"issue", result.known_failure->issue},
                               {"entry", result.known_failure->entry}};
  }
  if (result.performance) record["performance"] = performance_to_json(*result.performance);
  return record;
}

CaseResult case_result_from_json(const json& record, const AttentionCase& attention_case) {
  CaseResult result;
  result.attention_case = attention_case;
  const std::string id = text_at(record, "", "case_id");
  if (id != attention_case.id) {
    malformed("/case_id", "the record is of case " + id + ", not " + attention_case.id);
  }
  if (member(record, "", "config") != config_to_json(attention_case)) {
    malformed("/config",
              "case " + id + " was run with another configuration: " + record["config"].dump());
  }
  result.kernel_name = text_at(record, "", "kernel_name");
  result.plant = text_at(record, "", "plant");
  const std::string status = text_at(record, "", "status");
  bool known_status = false;
  for (CaseStatus each : kCaseStatuses) {
    if (case_status_name(each) == status) {
      result.status = each;
      known_status = true;
    }
  }
  if (!known_status) malformed("/status", "unknown status \"" + status + "\"");
  result.reason = text_at(record, "", "reason");
  if (result.status == CaseStatus::skip) {
    const std::string cause = text_at(record, "", "skip_cause");
    for (SkipCause each :
         {SkipCause::unavailable, SkipCause::unsupported, SkipCause::inconclusive}) {
      if (skip_cause_name(each) == cause) result.skip_cause = each;
    }
  }
  if (record.contains("output_tail")) result.output_tail = text_at(record, "", "output_tail");
  if (result.status == CaseStatus::known) {
    const json& note = member(record, "", "known_failure");
    result.known_failure = KnownFailureNote{text_at(note, "/known_failure", "reason"),
                                            text_at(note, "/known_failure", "issue"),
                                            text_at(note, "/known_failure", "entry")};
  }
  result.oracle = text_at(record, "", "oracle");
  if (!member(record, "", "correctness").is_null()) {
    result.ran = true;
    result.comparison = comparison_from_json(record, result.status == CaseStatus::pass);
    const json& correctness = member(record, "", "correctness");
    if (correctness.contains("backward")) {
      result.backward = backward_from_json(member(correctness, "/correctness", "backward"));
    }
  }
  result.timing = timing_from_json(member(record, "", "timing"));
  result.timestamp = text_at(record, "", "timestamp");
  if (const auto performance = record.find("performance");
      performance != record.end() && !performance->is_null()) {
    result.performance = performance_from_json(*performance);
  }
  return result;
}

}  // namespace attnfuzz
