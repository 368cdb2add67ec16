// SPDX-License-Identifier: BSD-3-Clause
// JUnit XML: parsed back with tinyxml2, the counts, the per-case elements and their messages are
// what a CI dashboard needs, and awkward characters in a reason survive the round trip.
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <tinyxml2.h>

#include "report/report_writers.h"

namespace attnfuzz {
namespace {

using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

CaseResult case_result(const std::string& id, CaseStatus status, const std::string& reason) {
  CaseResult result;
  result.attention_case.id = id;
  result.attention_case.batch = 2;
  result.attention_case.seq_len_q = 17;
  result.attention_case.seq_len_k = 33;
  result.kernel_name = "cpu_flash";
  result.status = status;
  result.reason = reason;
  result.ran = status != CaseStatus::skip;
  result.timing.total_seconds = 0.25;
  return result;
}

RunReport sample_run() {
  RunReport report;
  report.environment.git_commit = "abc1234";
  report.environment.backend = "cpu";
  report.environment.cuda = "built without CUDA";
  report.environment.blas = "OpenBLAS 0.3.21";
  report.environment.host_cpu = "Some CPU";
  report.environment.numerics = {{"accumulation", "fp32"}, {"tf32", "off"}};

  CaseResult failing = case_result("smoke/1", CaseStatus::fail, "element [0,0,3,7] beyond bound");
  failing.comparison.error_ratio = 12.5;
  failing.comparison.max_abs_error = 0.0625;
  failing.comparison.failing_elements = 3;
  failing.comparison.elements = 4096;
  failing.comparison.first_failure =
      ElementReport{0, 0, 3, 7, 0.5, 0.5625, 0.005, ElementFault::beyond_bound};

  report.results = {case_result("smoke/0", CaseStatus::pass, ""), failing,
                    case_result("smoke/2", CaseStatus::skip, "no CUDA device")};
  report.summary.matrix_name = "smoke";
  report.summary.wall_seconds = 1.5;
  summarize(report);
  return report;
}

// What the CLI renders with run/replay_command.h; here a recognizable stand-in.
std::string replay_of(const CaseResult& result) {
  return "fuzz_attention --case " + result.attention_case.id;
}

std::string junit(const RunReport& report) {
  return run_to_junit_xml(report, replay_of);
}

// Parses the XML; fails the test if it is not well formed.
void parse(const std::string& xml, XMLDocument& document) {
  ASSERT_EQ(document.Parse(xml.c_str()), tinyxml2::XML_SUCCESS) << xml;
}

const XMLElement* testcase_by_id(const XMLElement* suite, const std::string& id) {
  for (const XMLElement* testcase = suite->FirstChildElement("testcase"); testcase != nullptr;
       testcase = testcase->NextSiblingElement("testcase")) {
    const std::string name = testcase->Attribute("name");
    if (name.rfind(id + " ", 0) == 0) return testcase;
  }
  return nullptr;
}

TEST(ReportJunit, TestsuitesAndTestsuiteCarryTheCounts) {
  XMLDocument document;
  parse(junit(sample_run()), document);
  const XMLElement* suites = document.FirstChildElement("testsuites");
  ASSERT_NE(suites, nullptr);
  EXPECT_STREQ(suites->Attribute("name"), "attnfuzz");
  EXPECT_EQ(suites->IntAttribute("tests"), 3);
  EXPECT_EQ(suites->IntAttribute("failures"), 1);
  EXPECT_EQ(suites->IntAttribute("skipped"), 1);
  EXPECT_DOUBLE_EQ(suites->DoubleAttribute("time"), 1.5);

  const XMLElement* suite = suites->FirstChildElement("testsuite");
  ASSERT_NE(suite, nullptr);
  EXPECT_STREQ(suite->Attribute("name"), "smoke");
  EXPECT_EQ(suite->IntAttribute("tests"), 3);
  EXPECT_EQ(suite->IntAttribute("failures"), 1);
  EXPECT_EQ(suite->IntAttribute("skipped"), 1);
}

TEST(ReportJunit, EachCaseIsATestcaseNamedByIdAndShape) {
  const RunReport report = sample_run();
  XMLDocument document;
  parse(junit(report), document);
  const XMLElement* suite =
      document.FirstChildElement("testsuites")->FirstChildElement("testsuite");
  int testcases = 0;
  for (const XMLElement* testcase = suite->FirstChildElement("testcase"); testcase != nullptr;
       testcase = testcase->NextSiblingElement("testcase")) {
    const CaseResult& result = report.results[testcases++];
    EXPECT_STREQ(testcase->Attribute("classname"), "cpu_flash");
    EXPECT_EQ(std::string(testcase->Attribute("name")),
              result.attention_case.id + " " + describe_case(result.attention_case));
    EXPECT_DOUBLE_EQ(testcase->DoubleAttribute("time"), 0.25);
  }
  EXPECT_EQ(testcases, 3);
}

TEST(ReportJunit, PassingCaseHasNeitherFailureNorSkipped) {
  XMLDocument document;
  parse(junit(sample_run()), document);
  const XMLElement* testcase = testcase_by_id(
      document.FirstChildElement("testsuites")->FirstChildElement("testsuite"), "smoke/0");
  ASSERT_NE(testcase, nullptr);
  EXPECT_EQ(testcase->FirstChildElement(), nullptr);
}

TEST(ReportJunit, FailingCaseHasFailureWithReasonFaultAndKeyFigures) {
  XMLDocument document;
  parse(junit(sample_run()), document);
  const XMLElement* testcase = testcase_by_id(
      document.FirstChildElement("testsuites")->FirstChildElement("testsuite"), "smoke/1");
  ASSERT_NE(testcase, nullptr);
  const XMLElement* failure = testcase->FirstChildElement("failure");
  ASSERT_NE(failure, nullptr);
  EXPECT_STREQ(failure->Attribute("message"), "element [0,0,3,7] beyond bound");
  EXPECT_EQ(std::string(failure->Attribute("type")),
            std::string(element_fault_name(ElementFault::beyond_bound)));
  ASSERT_NE(failure->GetText(), nullptr);
  const std::string body = failure->GetText();
  EXPECT_NE(body.find("error_ratio=12.5"), std::string::npos) << body;
  EXPECT_NE(body.find("max_abs_error=0.0625"), std::string::npos) << body;
  EXPECT_NE(body.find("row=3 dim=7"), std::string::npos) << body;
  EXPECT_NE(body.find("actual=0.5625"), std::string::npos) << body;
  EXPECT_NE(body.find("replay: fuzz_attention --case smoke/1\n"), std::string::npos) << body;
  EXPECT_EQ(testcase->FirstChildElement("system-out"), nullptr) << "no worker output to show";
}

TEST(ReportJunit, CrashedCaseCarriesTheWorkersLastOutputAndHowLongItRan) {
  RunReport report = sample_run();
  CaseResult& crashed = report.results[1];
  crashed.ran = false;
  crashed.reason = "crashed: the worker was killed by signal 11 while running the case";
  crashed.output_tail = "kernel: launching tile 7\nkernel: <oops> & more";
  crashed.timing.total_seconds = 3.5;
  XMLDocument document;
  parse(junit(report), document);
  const XMLElement* testcase = testcase_by_id(
      document.FirstChildElement("testsuites")->FirstChildElement("testsuite"), "smoke/1");
  ASSERT_NE(testcase, nullptr);
  EXPECT_DOUBLE_EQ(testcase->DoubleAttribute("time"), 3.5);
  const std::string body = testcase->FirstChildElement("failure")->GetText();
  EXPECT_NE(body.find("replay: fuzz_attention --case smoke/1"), std::string::npos) << body;
  EXPECT_NE(body.find("worker output (its end):\n" + crashed.output_tail), std::string::npos)
      << body;
  const XMLElement* system_out = testcase->FirstChildElement("system-out");
  ASSERT_NE(system_out, nullptr);
  EXPECT_EQ(std::string(system_out->GetText()), crashed.output_tail);
}

TEST(ReportJunit, FailureWithoutAFailingElementHasTypeError) {
  RunReport report = sample_run();
  report.results[1].ran = false;
  report.results[1].reason = "kernel threw: out of memory";
  XMLDocument document;
  parse(junit(report), document);
  const XMLElement* failure =
      testcase_by_id(document.FirstChildElement("testsuites")->FirstChildElement("testsuite"),
                     "smoke/1")
          ->FirstChildElement("failure");
  ASSERT_NE(failure, nullptr);
  EXPECT_STREQ(failure->Attribute("type"), "error");
  EXPECT_STREQ(failure->Attribute("message"), "kernel threw: out of memory");
}

TEST(ReportJunit, SkippedCaseHasSkippedWithReason) {
  XMLDocument document;
  parse(junit(sample_run()), document);
  const XMLElement* testcase = testcase_by_id(
      document.FirstChildElement("testsuites")->FirstChildElement("testsuite"), "smoke/2");
  ASSERT_NE(testcase, nullptr);
  EXPECT_EQ(testcase->FirstChildElement("failure"), nullptr);
  const XMLElement* skipped = testcase->FirstChildElement("skipped");
  ASSERT_NE(skipped, nullptr);
  EXPECT_STREQ(skipped->Attribute("message"), "no CUDA device");
}

TEST(ReportJunit, SuitePropertiesDescribeTheEnvironment) {
  XMLDocument document;
  parse(junit(sample_run()), document);
  const XMLElement* properties = document.FirstChildElement("testsuites")
                                     ->FirstChildElement("testsuite")
                                     ->FirstChildElement("properties");
  ASSERT_NE(properties, nullptr);
  std::map<std::string, std::string> values;
  for (const XMLElement* property = properties->FirstChildElement("property"); property != nullptr;
       property = property->NextSiblingElement("property")) {
    values[property->Attribute("name")] = property->Attribute("value");
  }
  EXPECT_EQ(values["git_commit"], "abc1234");
  EXPECT_EQ(values["backend"], "cpu");
  EXPECT_EQ(values["cuda"], "built without CUDA");
  EXPECT_EQ(values["blas"], "OpenBLAS 0.3.21");
  EXPECT_EQ(values["host_cpu"], "Some CPU");
  EXPECT_EQ(values["accumulation"], "fp32");
  EXPECT_EQ(values["tf32"], "off");
}

TEST(ReportJunit, ReasonWithMarkupCharactersIsEscapedAndRoundTrips) {
  const std::string reason = "max|err| < 1e-3 & \"bound\" > 'atol' </failure>";
  RunReport report = sample_run();
  report.results[1].reason = reason;
  report.results[2].reason = reason;
  const std::string xml = junit(report);
  EXPECT_EQ(xml.find("</failure>\""), std::string::npos);
  EXPECT_EQ(xml.find("< 1e-3 & \""), std::string::npos);

  XMLDocument document;
  parse(xml, document);
  const XMLElement* suite =
      document.FirstChildElement("testsuites")->FirstChildElement("testsuite");
  EXPECT_EQ(
      std::string(
          testcase_by_id(suite, "smoke/1")->FirstChildElement("failure")->Attribute("message")),
      reason);
  EXPECT_EQ(
      std::string(
          testcase_by_id(suite, "smoke/2")->FirstChildElement("skipped")->Attribute("message")),
      reason);
}

TEST(ReportJunit, ControlCharactersInAReasonDoNotBreakTheDocument) {
  RunReport report = sample_run();
  report.results[1].reason = std::string("kernel said \x01\x1b[31mboom");
  XMLDocument document;
  parse(junit(report), document);
  const XMLElement* failure =
      testcase_by_id(document.FirstChildElement("testsuites")->FirstChildElement("testsuite"),
                     "smoke/1")
          ->FirstChildElement("failure");
  ASSERT_NE(failure, nullptr);
  EXPECT_STREQ(failure->Attribute("message"), "kernel said ??[31mboom");
}

TEST(ReportJunit, EmptyRunIsStillAWellFormedDocument) {
  RunReport report;
  report.summary.matrix_name = "empty";
  summarize(report);
  XMLDocument document;
  parse(junit(report), document);
  const XMLElement* suite =
      document.FirstChildElement("testsuites")->FirstChildElement("testsuite");
  ASSERT_NE(suite, nullptr);
  EXPECT_EQ(suite->IntAttribute("tests"), 0);
  EXPECT_EQ(suite->FirstChildElement("testcase"), nullptr);
}

}  // namespace
}  // namespace attnfuzz
