// SPDX-License-Identifier: BSD-3-Clause
// The HTML report: the page parses as XML, the heatmap has one cell per grid point with failing
// and skipped cells marked, failures and skips are listed, the environment is shown, every piece of
// report text is escaped, and nothing is loaded from anywhere.
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tinyxml2.h>

#include "report/heatmap_place.h"
#include "report/report_writers.h"
#include "support/case_alternatives.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

CaseResult result_of(const std::string& id, std::int64_t seq_len, std::int64_t batch,
                     std::int64_t heads, CaseStatus status, double error_ratio) {
  CaseResult result;
  result.attention_case.id = id;
  result.attention_case.seq_len_q = seq_len;
  result.attention_case.seq_len_k = seq_len;
  result.attention_case.batch = batch;
  result.attention_case.heads = heads;
  result.attention_case.kv_heads = heads;
  result.kernel_name = "cpu_flash";
  result.status = status;
  result.ran = status != CaseStatus::skip;
  result.comparison.error_ratio = error_ratio;
  result.comparison.elements = 4096;
  if (status == CaseStatus::fail) {
    result.reason = "element (b=0, h=0, i=3, d=7): beyond bound";
    result.comparison.failing_elements = 12;
  }
  if (status == CaseStatus::skip) result.reason = "no tile for head_dim 80";
  return result;
}

// Grid points (kernel, dtype, H, Sq, Sk, B): s/0 and s/1 share one (another seed), s/4 is bf16 at
// the same shape as s/0, so eight cases make seven cells.
RunReport sample_run() {
  RunReport report;
  report.summary.matrix_name = "sample";
  report.summary.matrix_source = "corpus/matrix/sample.json";
  report.summary.wall_seconds = 12.5;
  report.environment.harness_version = "0.1.0";
  report.environment.git_commit = "abc1234";
  report.environment.compiler = "GNU 12.2.0";
  report.environment.host_cpu = "Some CPU";
  report.environment.threads = 2;
  report.environment.blas = "OpenBLAS 0.3.21";
  report.environment.backend = "cpu";
  report.environment.cuda = "built without CUDA";
  report.environment.numerics = {{"kernel_accumulation", "fp32 for QK^T and PV"}};

  CaseResult other_seed = result_of("s/1", 448, 16, 4, CaseStatus::pass, 0.3);
  other_seed.attention_case.seed = 7;
  CaseResult bf16 = result_of("s/4", 448, 16, 4, CaseStatus::pass, 0.2);
  bf16.attention_case.dtype = Dtype::bf16;
  CaseResult cross = result_of("s/7", 113, 1, 2, CaseStatus::pass, 0.05);
  cross.attention_case.seq_len_k = 203;
  report.results = {result_of("s/0", 448, 16, 4, CaseStatus::pass, 0.1),
                    other_seed,
                    result_of("s/2", 512, 16, 4, CaseStatus::fail, 35900.0),
                    result_of("s/3", 448, 32, 4, CaseStatus::pass, 0.25),
                    bf16,
                    result_of("s/5", 448, 16, 8, CaseStatus::skip, 0.0),
                    result_of("s/6", 640, 48, 16, CaseStatus::pass, 0.0),
                    cross};
  summarize(report);
  return report;
}

// What the CLI renders with run/replay_command.h; here a recognizable stand-in.
std::string replay_of(const CaseResult& result) {
  return "fuzz_attention --case '" + result.attention_case.id + "'";
}

std::string html_of(const RunReport& report) {
  return run_to_html(report, replay_of);
}

// Parses the page; fails the test if it is not well-formed XML.
void parse(const std::string& html, XMLDocument& document) {
  ASSERT_EQ(document.Parse(html.c_str()), tinyxml2::XML_SUCCESS) << document.ErrorStr() << "\n"
                                                                 << html;
}

bool has_class(const XMLElement& element, const std::string& name) {
  const char* classes = element.Attribute("class");
  if (classes == nullptr) return false;
  const std::string padded = " " + std::string(classes) + " ";
  return padded.find(" " + name + " ") != std::string::npos;
}

void collect(const XMLElement* element, const std::string& class_name,
             std::vector<const XMLElement*>& found) {
  for (; element != nullptr; element = element->NextSiblingElement()) {
    if (has_class(*element, class_name)) found.push_back(element);
    collect(element->FirstChildElement(), class_name, found);
  }
}

std::vector<const XMLElement*> elements_with_class(const XMLDocument& document,
                                                   const std::string& class_name) {
  std::vector<const XMLElement*> found;
  collect(document.FirstChildElement(), class_name, found);
  return found;
}

std::string text_of(const XMLElement* element) {
  std::string text;
  for (const tinyxml2::XMLNode* node = element->FirstChild(); node != nullptr;
       node = node->NextSibling()) {
    if (node->ToText() != nullptr) text += node->Value();
    if (node->ToElement() != nullptr) text += text_of(node->ToElement());
  }
  return text;
}

// The tooltip of a heatmap cell: its <title>.
std::string tooltip_of(const XMLElement* cell) {
  const XMLElement* title = cell->FirstChildElement("title");
  return title == nullptr ? std::string() : text_of(title);
}

// What a heatmap cell shows: its label, without the tooltip.
std::string label_of(const XMLElement* cell) {
  std::string label;
  for (const XMLElement* text = cell->FirstChildElement("text"); text != nullptr;
       text = text->NextSiblingElement("text")) {
    label += text_of(text) + " ";
  }
  return label;
}

const XMLElement* cell_holding(const XMLDocument& document, const std::string& case_id) {
  for (const XMLElement* cell : elements_with_class(document, "cell")) {
    if (tooltip_of(cell).find(case_id + "  ") != std::string::npos) return cell;
  }
  return nullptr;
}

TEST(ReportHtml, ThePageIsWellFormedXmlWithTheVerdict) {
  XMLDocument document;
  parse(html_of(sample_run()), document);
  const XMLElement* html = document.FirstChildElement("html");
  ASSERT_NE(html, nullptr);
  ASSERT_NE(html->FirstChildElement("head"), nullptr);
  ASSERT_NE(html->FirstChildElement("body"), nullptr);
  const std::vector<const XMLElement*> verdicts = elements_with_class(document, "verdict");
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_THAT(text_of(verdicts[0]), HasSubstr("FAIL"));
  EXPECT_THAT(text_of(verdicts[0]), HasSubstr("6 passed, 1 failed, 1 skipped of 8"));
  EXPECT_THAT(text_of(verdicts[0]), HasSubstr("exit code 1"));
}

TEST(ReportHtml, TheHeatmapHasOneCellPerGridPointWithTheCaseCount) {
  XMLDocument document;
  parse(html_of(sample_run()), document);
  const std::vector<const XMLElement*> cells = elements_with_class(document, "cell");
  EXPECT_EQ(cells.size(), 7u);
  int cases = 0;
  for (const XMLElement* cell : cells) cases += cell->IntAttribute("data-cases");
  EXPECT_EQ(cases, 8);

  const XMLElement* shared = cell_holding(document, "s/0");
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared, cell_holding(document, "s/1"));
  EXPECT_EQ(shared->IntAttribute("data-cases"), 2);
  EXPECT_NE(shared, cell_holding(document, "s/4"));  // bf16: a panel of its own
  // The cell shows the worse of its two cases.
  EXPECT_EQ(label_of(shared), "0.3 ×2 ");
}

TEST(ReportHtml, AFailingCellIsMarkedAndItsCaseIsInTheFailureTable) {
  XMLDocument document;
  parse(html_of(sample_run()), document);
  const XMLElement* failing = cell_holding(document, "s/2");
  ASSERT_NE(failing, nullptr);
  EXPECT_TRUE(has_class(*failing, "cell-fail"));
  EXPECT_STREQ(failing->Attribute("data-status"), "fail");
  EXPECT_EQ(label_of(failing), "✕ 3.6e4 ");  // readable without colour
  EXPECT_THAT(tooltip_of(failing), HasSubstr("error_ratio 3.59e+04"));
  const XMLElement* outline = failing->FirstChildElement("rect");
  ASSERT_NE(outline, nullptr);
  EXPECT_STREQ(outline->Attribute("stroke-width"), "3");

  const XMLElement* passing = cell_holding(document, "s/3");
  ASSERT_NE(passing, nullptr);
  EXPECT_TRUE(has_class(*passing, "cell-pass"));
  EXPECT_EQ(label_of(passing), "0.25 ");
  const XMLElement* skipped = cell_holding(document, "s/5");
  ASSERT_NE(skipped, nullptr);
  EXPECT_TRUE(has_class(*skipped, "cell-skip"));
  EXPECT_EQ(label_of(skipped), "skip ");

  const std::vector<const XMLElement*> failures = elements_with_class(document, "failure");
  ASSERT_EQ(failures.size(), 1u);
  const std::string row = text_of(failures[0]);
  EXPECT_THAT(row, HasSubstr("s/2"));
  EXPECT_THAT(row, HasSubstr("3.59e+04"));
  EXPECT_THAT(row, HasSubstr("12 of 4096"));
  EXPECT_THAT(row, HasSubstr("element (b=0, h=0, i=3, d=7): beyond bound"));
}

TEST(ReportHtml, ACellMixingRunAndSkippedCasesShowsTheWorstRunOneWithASkipCorner) {
  RunReport report = sample_run();
  CaseResult skipped = result_of("s/8", 448, 32, 4, CaseStatus::skip, 0.0);
  report.results.push_back(skipped);
  CaseResult crashed = result_of("s/9", 640, 48, 16, CaseStatus::fail, 0.0);
  crashed.ran = false;  // the kernel threw: a failure with no figures
  crashed.reason = "kernel threw: out of memory";
  report.results.push_back(crashed);
  summarize(report);
  XMLDocument document;
  parse(html_of(report), document);

  const XMLElement* mixed = cell_holding(document, "s/8");
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(mixed, cell_holding(document, "s/3"));
  EXPECT_TRUE(has_class(*mixed, "cell-pass"));
  EXPECT_EQ(label_of(mixed), "0.25 ×2 ");
  const XMLElement* corner = mixed->FirstChildElement("path");
  ASSERT_NE(corner, nullptr);
  EXPECT_TRUE(has_class(*corner, "some-skipped"));
  EXPECT_EQ(cell_holding(document, "s/0")->FirstChildElement("path"), nullptr);

  const XMLElement* with_crash = cell_holding(document, "s/9");
  ASSERT_NE(with_crash, nullptr);
  EXPECT_TRUE(has_class(*with_crash, "cell-fail"));
  EXPECT_EQ(label_of(with_crash), "✕ error ×2 ");
  EXPECT_THAT(tooltip_of(with_crash), HasSubstr("kernel threw: out of memory"));
}

std::vector<std::string> texts_with_class(const XMLDocument& document, const std::string& name) {
  std::vector<std::string> texts;
  for (const XMLElement* element : elements_with_class(document, name)) {
    texts.push_back(text_of(element));
  }
  return texts;
}

TEST(ReportHtml, CasesDifferingInAnAxisTheRunVariesNeverShareACellAndPanelsNameTheValues) {
  RunReport report = sample_run();
  CaseResult causal = result_of("s/8", 448, 16, 4, CaseStatus::pass, 0.4);
  causal.attention_case.causal = true;
  CaseResult wide = result_of("s/9", 448, 16, 4, CaseStatus::pass, 0.5);
  wide.attention_case.head_dim = 128;
  CaseResult other_data = result_of("s/10", 448, 16, 4, CaseStatus::pass, 0.6);
  other_data.attention_case.data = DataDistribution::large_scores;
  CaseResult other_layout = result_of("s/11", 448, 16, 4, CaseStatus::pass, 0.7);
  other_layout.attention_case.layout = Layout::bhsd;
  for (const CaseResult& result : {causal, wide, other_data, other_layout}) {
    report.results.push_back(result);
  }
  summarize(report);
  XMLDocument document;
  parse(html_of(report), document);
  std::set<const XMLElement*> cells;
  for (const char* id : {"s/0", "s/8", "s/9", "s/10", "s/11"}) {
    const XMLElement* cell = cell_holding(document, id);
    ASSERT_NE(cell, nullptr) << id;
    EXPECT_TRUE(cells.insert(cell).second) << id << " shares a cell with another axis value";
  }
  const std::vector<std::string> titles = texts_with_class(document, "panel-title");
  const std::set<std::string> distinct(titles.begin(), titles.end());
  for (const char* title :
       {"D=64 · not causal", "D=64 · causal", "D=128 · not causal",
        "D=64 · not causal · data large_scores", "D=64 · not causal · layout bhsd"}) {
    EXPECT_TRUE(distinct.count(title)) << title;
  }
  EXPECT_THAT(tooltip_of(cell_holding(document, "s/8")), HasSubstr("D=64 · causal"));
}

TEST(ReportHtml, CasesDifferingInAnyFieldButTheSeedNeverShareACell) {
  // Each field of the schema, changed alone (tests/support/case_alternatives.h): the two cases
  // sit in cells of their own, and where the field splits panels, a title names the new value.
  for (const std::string& key : field_keys()) {
    CaseField field{};
    for_each_case_field([&](auto each) {
      if (decltype(each)::key == key) field = decltype(each)::case_field;
    });
    RunReport report = sample_run();
    report.results.clear();
    CaseResult base = result_of("base", 8, 2, 4, CaseStatus::pass, 0.25);
    base.attention_case = base_case();
    base.attention_case.id = "base";
    CaseResult changed = base;
    changed.attention_case = with_alternative(key);
    changed.attention_case.id = "changed";
    // A case that names a kernel runs on it: the result says so, and groups by it.
    if (key == "kernel") changed.kernel_name = changed.attention_case.kernel;
    report.results = {base, changed};
    summarize(report);
    XMLDocument document;
    parse(html_of(report), document);
    const XMLElement* base_cell = cell_holding(document, "base");
    const XMLElement* changed_cell = cell_holding(document, "changed");
    ASSERT_NE(base_cell, nullptr) << key;
    ASSERT_NE(changed_cell, nullptr) << key;
    if (heatmap_place(field) == HeatmapPlace::same_cell) {
      EXPECT_EQ(base_cell, changed_cell) << key;
      continue;
    }
    EXPECT_NE(base_cell, changed_cell) << key << " changed, yet the cases share a cell";
    if (heatmap_place(field) != HeatmapPlace::panel_axis) continue;
    const std::vector<std::string> titles = texts_with_class(document, "panel-title");
    const std::set<std::string> distinct(titles.begin(), titles.end());
    EXPECT_EQ(distinct.size(), 2u) << key << ": the two panels' titles must differ";
    if (key == "softcap") {  // a number as a case's JSON writes it, and a variant switched off
      EXPECT_TRUE(distinct.contains("softcap 20")) << *distinct.begin();
      EXPECT_TRUE(distinct.contains("softcap off")) << *distinct.begin();
    }
  }
}

TEST(ReportHtml, APanelOfOnlyUsualValuesStillNamesThem) {
  RunReport report = sample_run();
  CaseResult other_data = result_of("s/8", 448, 16, 4, CaseStatus::pass, 0.6);
  other_data.attention_case.data = DataDistribution::uniform;
  report.results.push_back(other_data);
  summarize(report);
  XMLDocument document;
  parse(html_of(report), document);
  const std::vector<std::string> titles = texts_with_class(document, "panel-title");
  EXPECT_EQ(std::set<std::string>(titles.begin(), titles.end()),
            (std::set<std::string>{"data normal", "data uniform"}));
}

TEST(ReportHtml, AxesTheRunDoesNotVarySplitNothing) {
  XMLDocument document;
  parse(html_of(sample_run()), document);
  const std::vector<std::string> titles = texts_with_class(document, "panel-title");
  ASSERT_EQ(titles.size(), 2u) << "one panel for each of fp16 and bf16";
  EXPECT_EQ(titles[0], "every case");
}

TEST(ReportHtml, ColumnsAreHeadsThenBatchSoOneBatchSizeStillMakesAGrid) {
  RunReport report;
  for (const std::int64_t heads : {1, 2, 6}) {
    for (const std::int64_t seq_len : {97, 113}) {
      report.results.push_back(result_of("e/" + std::to_string(report.results.size()), seq_len, 1,
                                         heads, CaseStatus::pass, 0.1));
    }
  }
  report.results.back().attention_case.kv_heads = 2;  // grouped-query: a column of its own
  summarize(report);
  XMLDocument document;
  parse(html_of(report), document);
  ASSERT_EQ(elements_with_class(document, "panel").size(), 1u);
  EXPECT_EQ(texts_with_class(document, "heads-label"),
            (std::vector<std::string>{"H=1", "H=2", "H=6 kv=2", "H=6"}));
  EXPECT_EQ(texts_with_class(document, "column-label"),
            (std::vector<std::string>{"B=1", "B=1", "B=1", "B=1"}));
  EXPECT_EQ(texts_with_class(document, "row-label"), (std::vector<std::string>{"97", "113"}));
}

TEST(ReportHtml, AFailingCellLinksToItsRowWhichHasTheReplayCommand) {
  XMLDocument document;
  parse(html_of(sample_run()), document);
  const XMLElement* failing = cell_holding(document, "s/2");
  ASSERT_NE(failing, nullptr);
  const XMLElement* link = failing->Parent()->ToElement();
  ASSERT_NE(link, nullptr);
  ASSERT_STREQ(link->Name(), "a");
  const std::string target = link->Attribute("href");
  ASSERT_EQ(target.front(), '#');
  const std::vector<const XMLElement*> rows = elements_with_class(document, "failure");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::string(rows[0]->Attribute("id")), target.substr(1));
  EXPECT_THAT(text_of(rows[0]), HasSubstr("fuzz_attention --case 's/2'"));
  EXPECT_STRNE(cell_holding(document, "s/3")->Parent()->ToElement()->Name(), "a")
      << "a passing cell links nowhere";
}

TEST(ReportHtml, RowsAreLabelledSqOrSqToSkWhenTheyDiffer) {
  XMLDocument document;
  parse(html_of(sample_run()), document);
  std::set<std::string> row_labels;
  for (const XMLElement* label : elements_with_class(document, "row-label")) {
    row_labels.insert(text_of(label));
  }
  EXPECT_TRUE(row_labels.count("448"));
  EXPECT_TRUE(row_labels.count("113→203"));
}

TEST(ReportHtml, SkipsAreCountedByReason) {
  RunReport report = sample_run();
  report.results.push_back(result_of("s/8", 448, 16, 8, CaseStatus::skip, 0.0));
  summarize(report);
  XMLDocument document;
  parse(html_of(report), document);
  const std::vector<const XMLElement*> tables = elements_with_class(document, "skips");
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_THAT(text_of(tables[0]), HasSubstr("2no tile for head_dim 80"));
}

TEST(ReportHtml, TheEnvironmentAndNumericsAreShown) {
  XMLDocument document;
  parse(html_of(sample_run()), document);
  const std::vector<const XMLElement*> tables = elements_with_class(document, "environment");
  std::string environment;
  for (const XMLElement* table : tables) environment += text_of(table);
  for (const char* expected :
       {"abc1234", "GNU 12.2.0", "Some CPU", "OpenBLAS 0.3.21", "built without CUDA",
        "kernel_accumulation", "fp32 for QK^T and PV"}) {
    EXPECT_THAT(environment, HasSubstr(expected));
  }
}

TEST(ReportHtml, ReportTextIsEscapedEverywhere) {
  const std::string hostile = "<script>alert(\"x\")</script> & 'q' \x01";
  RunReport report = sample_run();
  report.results[2].reason = hostile;                // failing: table and tooltip
  report.results[5].reason = hostile;                // skipped: skip table
  report.results[0].attention_case.id = "s/<0>&\"";  // a cell's tooltip
  report.results[0].kernel_name = "k<b>";            // a group heading
  report.environment.blas = hostile;
  report.environment.numerics.emplace_back("<tf32>", hostile);
  report.summary.matrix_name = hostile;
  const std::string html = html_of(report);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<0>")));
  EXPECT_THAT(html, Not(HasSubstr("<b>")));
  EXPECT_THAT(html, Not(HasSubstr("<tf32>")));
  EXPECT_THAT(html, Not(HasSubstr("\x01")));
  EXPECT_THAT(html,
              HasSubstr("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"));

  XMLDocument document;
  parse(html, document);
  const std::vector<const XMLElement*> failures = elements_with_class(document, "failure");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_THAT(text_of(failures[0]), HasSubstr("<script>alert(\"x\")</script> & 'q' ?"));
  EXPECT_NE(cell_holding(document, "s/<0>&\""), nullptr);
}

TEST(ReportHtml, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  RunReport report = sample_run();
  // A stray continuation byte, a lead byte cut short, an overlong '/', and valid "→" kept as is.
  report.results[2].reason = "bad \x80 cut \xE2\x86 overlong \xC0\xAF kept →";
  const std::string html = html_of(report);
  EXPECT_THAT(html, HasSubstr("bad \uFFFD cut \uFFFD\uFFFD overlong \uFFFD\uFFFD kept →"));
  EXPECT_THAT(html, Not(HasSubstr("\x80 cut")));
}

TEST(ReportHtml, NothingIsLoadedFromElsewhere) {
  const std::string html = html_of(sample_run());
  for (const char* reference :
       {"http:", "https:", "src=", "<script", "<link", "@import", "url(h", "href=\"/", "//"}) {
    EXPECT_THAT(html, Not(HasSubstr(reference))) << reference;
  }
}

TEST(ReportHtml, APassingRunSaysSoAndHasNoFailureRows) {
  RunReport report = sample_run();
  report.results.erase(report.results.begin() + 2);
  summarize(report);
  XMLDocument document;
  parse(html_of(report), document);
  EXPECT_THAT(text_of(elements_with_class(document, "verdict").at(0)), HasSubstr("PASS"));
  EXPECT_TRUE(elements_with_class(document, "failure").empty());
  EXPECT_TRUE(elements_with_class(document, "cell-fail").empty());
}

TEST(ReportHtml, AnEmptyRunIsStillAPage) {
  RunReport report;
  report.summary.matrix_name = "empty";
  summarize(report);
  XMLDocument document;
  parse(html_of(report), document);
  EXPECT_THAT(text_of(elements_with_class(document, "verdict").at(0)), HasSubstr("SKIP"));
  EXPECT_TRUE(elements_with_class(document, "cell").empty());
}

}  // namespace
}  // namespace attnfuzz
