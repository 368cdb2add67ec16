// SPDX-License-Identifier: BSD-3-Clause
// JUnit XML for CI dashboards: one <testsuite> per matrix, one <testcase> per case. tinyxml2 builds
// the document, so quoting and escaping of reasons and names are the library's job, not ours.
#include <string>
#include <string_view>

#include <tinyxml2.h>

#include "core/number_text.h"
#include "core/text.h"
#include "report/report_writers.h"

namespace attnfuzz {
namespace {

// XML 1.0 cannot hold most control characters, escaped or not, nor bytes that are not UTF-8, and
// tinyxml2 passes both through; a reason quoting a kernel's raw message could carry either.
std::string xml_safe(std::string_view text) {
  return printable_text(text, KeptControls::tab_newline_and_return);
}

std::string element_text(const ElementReport& element) {
  return "[b=" + std::to_string(element.batch) + " h=" + std::to_string(element.head) +
         " row=" + std::to_string(element.row) + " dim=" + std::to_string(element.dim) +
         "] expected=" + significant_digits(element.expected, 6) +
         " actual=" + significant_digits(element.actual, 6) +
         " allowed=" + significant_digits(element.allowed, 6) + " (" +
         std::string(element_fault_name(element.fault)) + ")";
}

// The figures someone triaging a failure wants first.
std::string failure_figures(const CaseResult& result) {
  if (!result.ran) return result.reason + "\n";
  const Comparison& comparison = result.comparison;
  std::string body = "error_ratio=" + significant_digits(comparison.error_ratio, 6) +
                     " (bound_ratio=" + significant_digits(comparison.bound_ratio, 6) +
                     ", fa_rule_ratio=" + significant_digits(comparison.fa_rule_ratio, 6) + ")\n";
  body += "max_abs_error=" + significant_digits(comparison.max_abs_error, 6) +
          " plain_max_abs_error=" + significant_digits(comparison.plain_max_abs_error, 6) + "\n";
  body += "failing_elements=" + std::to_string(comparison.failing_elements) + " of " +
          std::to_string(comparison.elements) + "\n";
  if (comparison.first_failure) {
    body += "first failure: " + element_text(*comparison.first_failure) + "\n";
  }
  return body;
}

// The body of a <failure>: the figures, the command that reruns the case, and what a crashed or
// hung worker printed last (a dashboard often shows only this element).
std::string failure_body(const CaseResult& result, const ReplayOf& replay_of) {
  std::string body = failure_figures(result);
  body += "replay: " + replay_of(result) + "\n";
  if (!result.output_tail.empty()) body += "worker output (its end):\n" + result.output_tail + "\n";
  return body;
}

void add_property(tinyxml2::XMLElement* properties, const std::string& name,
                  const std::string& value) {
  tinyxml2::XMLElement* property = properties->InsertNewChildElement("property");
  property->SetAttribute("name", xml_safe(name).c_str());
  property->SetAttribute("value", xml_safe(value).c_str());
}

void add_properties(tinyxml2::XMLElement* suite, const RunEnvironment& environment) {
  tinyxml2::XMLElement* properties = suite->InsertNewChildElement("properties");
  add_property(properties, "harness_version", environment.harness_version);
  add_property(properties, "git_commit", environment.git_commit);
  add_property(properties, "backend", environment.backend);
  add_property(properties, "cuda", environment.cuda);
  add_property(properties, "blas", environment.blas);
  add_property(properties, "host_cpu", environment.host_cpu);
  add_property(properties, "threads", std::to_string(environment.threads));
  for (const auto& [key, value] : environment.numerics) add_property(properties, key, value);
}

// A known case (--known-failures) in one line: the listing's reason, its issue and entry, then how
// the case failed.
std::string known_failure_text(const CaseResult& result) {
  return "known failure: " + result.known_failure->reason + " (" + result.known_failure->issue +
         "; " + result.known_failure->entry + "); it fails: " + result.reason;
}

void add_testcase(tinyxml2::XMLElement* suite, const CaseResult& result,
                  const ReplayOf& replay_of) {
  tinyxml2::XMLElement* testcase = suite->InsertNewChildElement("testcase");
  const std::string name = result.attention_case.id + " " + describe_case(result.attention_case);
  testcase->SetAttribute("classname", xml_safe(result.kernel_name).c_str());
  testcase->SetAttribute("name", xml_safe(name).c_str());
  testcase->SetAttribute("time", fixed_decimals(result.timing.total_seconds, 6).c_str());

  if (result.status == CaseStatus::fail) {
    const std::optional<ElementReport>& first_failure = result.comparison.first_failure;
    const std::string type = result.ran && first_failure
                                 ? std::string(element_fault_name(first_failure->fault))
                                 : std::string("error");
    tinyxml2::XMLElement* failure = testcase->InsertNewChildElement("failure");
    failure->SetAttribute("message", xml_safe(result.reason).c_str());
    failure->SetAttribute("type", type.c_str());
    failure->SetText(xml_safe(failure_body(result, replay_of)).c_str());
  } else if (result.status == CaseStatus::skip) {
    testcase->InsertNewChildElement("skipped")->SetAttribute("message",
                                                             xml_safe(result.reason).c_str());
  } else if (result.status == CaseStatus::known) {
    // JUnit has no "expected failure"; a skip with the listing's words is what CI tools show.
    testcase->InsertNewChildElement("skipped")->SetAttribute(
        "message", xml_safe(known_failure_text(result)).c_str());
  }
  if (!result.output_tail.empty()) {
    testcase->InsertNewChildElement("system-out")->SetText(xml_safe(result.output_tail).c_str());
  }
}

void set_counts(tinyxml2::XMLElement* element, const RunSummary& summary) {
  element->SetAttribute("tests", summary.total);
  element->SetAttribute("failures", summary.failed);
  element->SetAttribute("errors", 0);
  element->SetAttribute("skipped", summary.skipped + summary.known);
  element->SetAttribute("time", fixed_decimals(summary.wall_seconds, 6).c_str());
}

}  // namespace

std::string run_to_junit_xml(const RunReport& report, const ReplayOf& replay_of) {
  tinyxml2::XMLDocument document;
  document.InsertEndChild(document.NewDeclaration());

  tinyxml2::XMLElement* suites = document.NewElement("testsuites");
  document.InsertEndChild(suites);
  suites->SetAttribute("name", "attnfuzz");
  set_counts(suites, report.summary);

  tinyxml2::XMLElement* suite = suites->InsertNewChildElement("testsuite");
  suite->SetAttribute("name", xml_safe(report.summary.matrix_name).c_str());
  set_counts(suite, report.summary);
  if (!report.summary.started_at.empty()) {
    suite->SetAttribute("timestamp", report.summary.started_at.c_str());
  }
  add_properties(suite, report.environment);
  for (const CaseResult& result : report.results) add_testcase(suite, result, replay_of);

  tinyxml2::XMLPrinter printer;
  document.Print(&printer);
  return printer.CStr();
}

}  // namespace attnfuzz
