// SPDX-License-Identifier: BSD-3-Clause
// Matrix files: expansion, layering, ids, includes, every error class, and the shipped corpus.
#include "matrix/matrix_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/harness_error.h"
#include "kernels/cuda_launch_limits.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

// ---- helpers ----

// Parses `text` as "test.json"; includes resolve among `files` by name.
CaseMatrix parse(const std::string& text, const std::map<std::string, std::string>& files = {}) {
  return parse_matrix_text(text, "test.json", [&files](const std::string& name) {
    const auto found = files.find(name);
    if (found == files.end()) throw HarnessError("no file " + name);
    return found->second;
  });
}

// The message of the HarnessError that `load` throws, or "" when it throws none.
std::string error_from(const std::function<void()>& load) {
  try {
    load();
  } catch (const HarnessError& error) {
    return error.what();
  }
  return "";
}

// The message of the HarnessError that parsing `text` throws, or "" when it throws none.
std::string error_of(const std::string& text,
                     const std::map<std::string, std::string>& files = {}) {
  return error_from([&] { parse(text, files); });
}

// A matrix with one case holding `case_json`'s keys.
std::string one_case(const std::string& case_json) {
  return R"({"name": "m", "cases": [)" + case_json + "]}";
}

// Every field of the schema and the id (AttentionCase's defaulted ==), in the same order.
bool same_cases(const std::vector<AttentionCase>& a, const std::vector<AttentionCase>& b) {
  return a == b;
}

// Matrix files in a folder of the test's own (TemporaryFolder).
class MatrixFileOnDisk : public TemporaryFolder {};

const std::vector<AttentionCase>& edges_cases() {
  static const std::vector<AttentionCase> cases = load_built_in_matrix("edges.json").cases;
  return cases;
}

// ---- expansion ----

TEST(MatrixFile, SeedMatrixExpandsToTwentySevenCases) {
  const CaseMatrix matrix = load_built_in_matrix("seed27.json");
  EXPECT_EQ(matrix.name, "seed27");
  EXPECT_EQ(matrix.source, "built-in:seed27.json");
  ASSERT_EQ(matrix.cases.size(), 27u);
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> shapes;
  for (const AttentionCase& c : matrix.cases) {
    shapes.insert({c.batch, c.heads, c.seq_len_q});
    EXPECT_EQ(c.seq_len_k, c.seq_len_q);
    EXPECT_EQ(c.kv_heads, c.heads);
    EXPECT_EQ(c.head_dim, 64);
    EXPECT_EQ(c.dtype, Dtype::fp16);
    EXPECT_FALSE(c.causal);
    EXPECT_EQ(c.data, DataDistribution::normal);
    EXPECT_EQ(c.seed, 1u);
    EXPECT_EQ(c.layout, Layout::bshd);
    EXPECT_EQ(c.row_padding, 0);
  }
  for (const std::int64_t batch : {16, 32, 48}) {
    for (const std::int64_t heads : {4, 8, 16}) {
      for (const std::int64_t seq_len : {448, 512, 640}) {
        EXPECT_EQ(shapes.count({batch, heads, seq_len}), 1u)
            << "B=" << batch << " H=" << heads << " S=" << seq_len;
      }
    }
  }
}

TEST(MatrixFile, ProductVariesTheLastKeyOfTheKeyTableFastest) {
  // Table order is batch, heads, ..., seq_len: seq_len turns fastest whatever the file's order.
  const CaseMatrix matrix = load_built_in_matrix("seed27.json");
  ASSERT_EQ(matrix.cases.size(), 27u);
  const auto shape = [&](std::size_t i) {
    const AttentionCase& c = matrix.cases[i];
    return std::vector<std::int64_t>{c.batch, c.heads, c.seq_len_q};
  };
  EXPECT_EQ(shape(0), (std::vector<std::int64_t>{16, 4, 448}));
  EXPECT_EQ(shape(1), (std::vector<std::int64_t>{16, 4, 512}));
  EXPECT_EQ(shape(2), (std::vector<std::int64_t>{16, 4, 640}));
  EXPECT_EQ(shape(3), (std::vector<std::int64_t>{16, 8, 448}));
  EXPECT_EQ(shape(9), (std::vector<std::int64_t>{32, 4, 448}));
  EXPECT_EQ(shape(26), (std::vector<std::int64_t>{48, 16, 640}));
}

TEST(MatrixFile, DefaultsApplyToEveryCase) {
  const CaseMatrix matrix = parse(R"({"name": "m",
      "defaults": {"batch": 3, "heads": 4, "head_dim": 128, "dtype": "bf16", "causal": true,
                   "data": "uniform", "seed": 18446744073709551615, "kernel": "cpu_flash",
                   "layout": "bhsd", "row_padding": 8, "softmax_scale": 0.5, "seq_len": 7},
      "cases": [{}, {"batch": 1}]})");
  ASSERT_EQ(matrix.cases.size(), 2u);
  for (const AttentionCase& c : matrix.cases) {
    EXPECT_EQ(c.heads, 4);
    EXPECT_EQ(c.kv_heads, 4);
    EXPECT_EQ(c.seq_len_q, 7);
    EXPECT_EQ(c.seq_len_k, 7);
    EXPECT_EQ(c.head_dim, 128);
    EXPECT_EQ(c.dtype, Dtype::bf16);
    EXPECT_TRUE(c.causal);
    EXPECT_EQ(c.data, DataDistribution::uniform);
    EXPECT_EQ(c.seed, 18446744073709551615u);
    EXPECT_EQ(c.kernel, "cpu_flash");
    EXPECT_EQ(c.layout, Layout::bhsd);
    EXPECT_EQ(c.row_padding, 8);
    EXPECT_EQ(c.softmax_scale, 0.5);
  }
  EXPECT_EQ(matrix.cases[0].batch, 3);
}

TEST(MatrixFile, CaseKeysOverrideDefaults) {
  const CaseMatrix matrix = parse(R"({"name": "m",
      "defaults": {"batch": 3, "heads": 4, "dtype": "bf16", "causal": true},
      "matrix": {"heads": 2},
      "cases": [{"batch": 1, "dtype": "fp16", "causal": false}]})");
  ASSERT_EQ(matrix.cases.size(), 2u);
  EXPECT_EQ(matrix.cases[0].batch, 3);
  EXPECT_EQ(matrix.cases[0].heads, 2);
  EXPECT_EQ(matrix.cases[1].batch, 1);
  EXPECT_EQ(matrix.cases[1].heads, 4);
  EXPECT_EQ(matrix.cases[1].dtype, Dtype::fp16);
  EXPECT_FALSE(matrix.cases[1].causal);
}

TEST(MatrixFile, SeqLenSetsBothQueryAndKeyLengths) {
  const CaseMatrix matrix = parse(one_case(R"({"seq_len": 113})"));
  ASSERT_EQ(matrix.cases.size(), 1u);
  EXPECT_EQ(matrix.cases[0].seq_len_q, 113);
  EXPECT_EQ(matrix.cases[0].seq_len_k, 113);
}

TEST(MatrixFile, SeqLenQAndSeqLenKApplyAfterSeqLenInTheSameObject) {
  const CaseMatrix matrix = parse(one_case(R"({"seq_len_k": 203, "seq_len": 113})"));
  ASSERT_EQ(matrix.cases.size(), 1u);
  EXPECT_EQ(matrix.cases[0].seq_len_q, 113);
  EXPECT_EQ(matrix.cases[0].seq_len_k, 203);
}

TEST(MatrixFile, CaseSeqLenOverridesDefaultSeqLenQAndSeqLenK) {
  const CaseMatrix matrix = parse(R"({"name": "m",
      "defaults": {"seq_len_q": 5, "seq_len_k": 6}, "cases": [{"seq_len": 9}]})");
  ASSERT_EQ(matrix.cases.size(), 1u);
  EXPECT_EQ(matrix.cases[0].seq_len_q, 9);
  EXPECT_EQ(matrix.cases[0].seq_len_k, 9);
}

TEST(MatrixFile, KvHeadsDefaultsToHeads) {
  const CaseMatrix matrix = parse(R"({"name": "m", "cases": [{"heads": 6}, {"heads": 6,
      "kv_heads": 2}]})");
  ASSERT_EQ(matrix.cases.size(), 2u);
  EXPECT_EQ(matrix.cases[0].kv_heads, 6);
  EXPECT_EQ(matrix.cases[1].kv_heads, 2);
}

TEST(MatrixFile, ArrayValuesInACaseExpandAsAProduct) {
  const CaseMatrix matrix =
      parse(one_case(R"({"seq_len_q": [1, 2, 3], "dtype": ["fp16", "bf16"], "causal": true})"));
  ASSERT_EQ(matrix.cases.size(), 6u);
  std::set<std::pair<std::int64_t, Dtype>> combinations;
  for (const AttentionCase& c : matrix.cases) {
    EXPECT_TRUE(c.causal);
    combinations.insert({c.seq_len_q, c.dtype});
  }
  EXPECT_EQ(combinations.size(), 6u);
  // seq_len_q comes before dtype in the key table, so dtype turns fastest.
  EXPECT_EQ(matrix.cases[0].seq_len_q, 1);
  EXPECT_EQ(matrix.cases[0].dtype, Dtype::fp16);
  EXPECT_EQ(matrix.cases[1].seq_len_q, 1);
  EXPECT_EQ(matrix.cases[1].dtype, Dtype::bf16);
  EXPECT_EQ(matrix.cases[2].seq_len_q, 2);
}

TEST(MatrixFile, CaseIdsCountTheMatrixProductFirstThenCases) {
  const CaseMatrix matrix = parse(R"({"name": "m",
      "matrix": {"batch": [1, 2]},
      "cases": [{"heads": 3}, {"heads": [4, 5]}]})");
  ASSERT_EQ(matrix.cases.size(), 5u);
  const std::vector<std::string> expected = {"m/0", "m/1", "m/2", "m/3", "m/4"};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(matrix.cases[i].id, expected[i]);
  EXPECT_EQ(matrix.cases[1].batch, 2);
  EXPECT_EQ(matrix.cases[2].heads, 3);
  EXPECT_EQ(matrix.cases[4].heads, 5);
}

TEST(MatrixFile, IncludedCasesComeFirstInOrderAndKeepTheirIds) {
  const CaseMatrix matrix =
      parse(R"({"name": "top", "include": ["a.json", "b.json"], "cases": [{"batch": 7}]})",
            {{"a.json", R"({"name": "a", "cases": [{"batch": 1}, {"batch": 2}]})"},
             {"b.json", R"({"name": "b", "cases": [{"batch": 3}]})"}});
  EXPECT_EQ(matrix.name, "top");
  std::vector<std::string> ids;
  for (const AttentionCase& c : matrix.cases) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a/0", "a/1", "b/0", "top/0"}));
  EXPECT_EQ(matrix.cases[2].batch, 3);
  EXPECT_EQ(matrix.cases[3].batch, 7);
}

TEST(MatrixFile, IncludedMatricesDoNotTakeTheIncludingDefaults) {
  const CaseMatrix matrix = parse(R"({"name": "top", "include": ["a.json"],
      "defaults": {"heads": 8}})",
                                  {{"a.json", R"({"name": "a", "cases": [{}]})"}});
  ASSERT_EQ(matrix.cases.size(), 1u);
  EXPECT_EQ(matrix.cases[0].heads, 1);
}

TEST_F(MatrixFileOnDisk, IncludePathsResolveRelativeToTheIncludingFile) {
  write("top/pr.json", R"({"name": "pr", "include": ["sub/a.json"]})");
  write("top/sub/a.json", R"({"name": "a", "include": ["../../other/b.json"],
      "cases": [{"batch": 1}]})");
  write("other/b.json", R"({"name": "b", "cases": [{"batch": 2}]})");
  const CaseMatrix matrix = load_matrix_file(folder_ / "top" / "pr.json");
  EXPECT_EQ(matrix.source, (folder_ / "top" / "pr.json").string());
  ASSERT_EQ(matrix.cases.size(), 2u);
  EXPECT_EQ(matrix.cases[0].id, "b/0");
  EXPECT_EQ(matrix.cases[0].batch, 2);
  EXPECT_EQ(matrix.cases[1].id, "a/0");
}

TEST_F(MatrixFileOnDisk, IncludeCycleIsAnError) {
  write("a.json", R"({"name": "a", "include": ["b.json"], "cases": [{}]})");
  write("b.json", R"({"name": "b", "include": ["./a.json"], "cases": [{}]})");
  const std::string message = error_from([&] { load_matrix_file(folder_ / "a.json"); });
  EXPECT_THAT(message, HasSubstr("include cycle"));
  EXPECT_THAT(message, HasSubstr("/include/0"));
  EXPECT_THAT(message, HasSubstr("b.json"));
}

TEST_F(MatrixFileOnDisk, MissingIncludeNamesTheIncludingFileAndThePath) {
  const auto path = write("a.json", R"({"name": "a", "include": ["nope.json"]})");
  const std::string message = error_from([&] { load_matrix_file(path); });
  EXPECT_THAT(message, HasSubstr(path.string()));
  EXPECT_THAT(message, HasSubstr("/include/0"));
  EXPECT_THAT(message, HasSubstr("nope.json"));
  EXPECT_THAT(message, HasSubstr("No such file or directory"));
}

TEST_F(MatrixFileOnDisk, ErrorInAnIncludedFileNamesThatFileAndWhereItWasIncluded) {
  write("top.json", R"({"name": "top", "include": ["bad.json"]})");
  write("bad.json", R"({"name": "bad", "cases": [{"heads": "six"}]})");
  const std::string message = error_from([&] { load_matrix_file(folder_ / "top.json"); });
  EXPECT_THAT(message, HasSubstr("bad.json: case bad/0 (/cases/0), field /cases/0/heads"));
  EXPECT_THAT(message, HasSubstr("included from"));
}

TEST_F(MatrixFileOnDisk, UnreadableFileNamesThePathAndTheReason) {
  const std::filesystem::path missing = folder_ / "missing.json";
  const std::string message = error_from([&] { load_matrix_file(missing); });
  EXPECT_THAT(message, HasSubstr(missing.string()));
  EXPECT_THAT(message, HasSubstr("No such file or directory"));
}

// ---- documents that parse ----

TEST(MatrixFile, TheSameKeyInDifferentObjectsIsFine) {
  const CaseMatrix matrix =
      parse(R"({"name": "m", "defaults": {"batch": 2}, "cases": [{"batch": 1}, {"batch": 3}]})");
  ASSERT_EQ(matrix.cases.size(), 2u);
  EXPECT_EQ(matrix.cases[1].batch, 3);
}

TEST(MatrixFile, NameWithAnEscapedNonAsciiLetterIsFine) {
  EXPECT_EQ(error_of(R"({"name": "caf\u00e9 matrix", "cases": [{}]})"), "");
}

TEST(MatrixFile, InjectSetsTheCasesSpecialValueInjection) {
  const CaseMatrix matrix = parse(R"({"name": "m", "defaults": {"inject": "q:subnormal:2"},
      "cases": [{}, {"inject": "v:large:4"}, {"inject": ["none", "k:negative_zero:1"]}]})");
  ASSERT_EQ(matrix.cases.size(), 4u);
  EXPECT_EQ(matrix.cases[0].injection,
            (SpecialValueInjection{SpecialValue::subnormal, TensorRole::query, 2}));
  EXPECT_EQ(matrix.cases[1].injection,
            (SpecialValueInjection{SpecialValue::large, TensorRole::value, 4}));
  EXPECT_EQ(matrix.cases[2].injection, SpecialValueInjection{});
  EXPECT_EQ(matrix.cases[3].injection,
            (SpecialValueInjection{SpecialValue::negative_zero, TensorRole::key, 1}));
  // Without the key, nothing is injected.
  EXPECT_EQ(parse(one_case("{}")).cases[0].injection, SpecialValueInjection{});
}

// ---- errors: the document, its includes, its defaults and whole cases ----

// A document the reader rejects, and what the HarnessError's message must hold.
struct MatrixErrorRow {
  const char* name;                               // the test's name
  std::string json;                               // parsed as "test.json"
  std::vector<std::string> fragments;             // each one is in the message
  std::map<std::string, std::string> files = {};  // the files its includes resolve to
};

void PrintTo(const MatrixErrorRow& row, std::ostream* out) {
  *out << row.name << ": " << row.json;
}

const std::vector<MatrixErrorRow> kMatrixErrors = {
    // the document
    {"MalformedJsonNamesTheFileAndTheBytePosition",
     R"({"name": "m", "cases": [}])",
     {"test.json", "malformed JSON at byte 25"}},
    {"NumberBeyondDoubleIsMalformedJson",
     one_case(R"({"softmax_scale": 1e999})"),
     {"test.json: malformed JSON", "1e999"}},
    {"KeyGivenTwiceInTheTopLevelObject",
     R"({"name": "m", "name": "n", "cases": [{}]})",
     {"field /name: key given twice in one object"}},
    {"KeyGivenTwiceInACase",
     R"({"name": "m", "cases": [{}, {"batch": 1, "heads": 2, "batch": 3}]})",
     {"field /cases/1/batch: key given twice"}},
    {"KeyGivenTwiceInAnObjectInsideAMatrixValue",
     R"({"name": "m", "matrix": {"seq_len": [[1], {"a": 1, "a": 2}]}, "cases": [{}]})",
     {"field /matrix/seq_len/1/a: key given twice"}},
    {"TopLevelThatIsNotAnObject", "[1, 2]", {"expected a JSON object, got array"}},
    {"NameWithAControlCharacter",
     R"({"name": "a\u0001b", "cases": [{}]})",
     {"field /name: contains a control character"}},
    {"NameWithATab", R"({"name": "a\tb", "cases": [{}]})", {"contains a control character"}},
    {"MissingName", R"({"cases": [{}]})", {"/name"}},
    {"NameThatIsNotAString", R"({"name": 3, "cases": [{}]})", {"field /name"}},
    {"UnknownTopLevelKey",
     R"({"name": "m", "cases": [{}], "extra": 1})",
     {"field /extra", "unknown top-level key \"extra\""}},
    {"MatrixWithoutCases", R"({"name": "m"})", {"no cases"}},
    {"MatrixWithAnEmptyCaseList", R"({"name": "m", "cases": []})", {"no cases"}},
    {"EmptyArray",
     R"({"name": "m", "matrix": {"batch": []}})",
     {"field /matrix/batch: empty array"}},
    {"CaseThatIsNotAnObject",
     R"({"name": "m", "cases": [{}, 3]})",
     {"case m/1 (/cases/1): expected an object"}},
    // includes
    {"FileIncludingItself",
     R"({"name": "t", "include": ["self.json"]})",
     {"include cycle"},
     {{"self.json", R"({"name": "s", "include": ["self.json"]})"}}},
    {"IncludingOneMatrixTwice",
     R"({"name": "t", "include": ["a.json", "a.json"]})",
     {"/include/1"},
     {{"a.json", R"({"name": "a", "cases": [{}]})"}}},
    // defaults, later cases and the matrix product
    {"ArrayInDefaults",
     R"({"name": "m", "defaults": {"batch": [1, 2]}, "cases": [{}]})",
     {"field /defaults/batch"}},
    {"UnknownDefaultsKeyNamesItsPointer",
     R"({"name": "m", "defaults": {"sequence": 4}, "cases": [{}]})",
     {"field /defaults/sequence"}},
    {"MalformedInjectInDefaults",
     R"({"name": "m", "defaults": {"inject": "x:zero:1"}, "cases": [{}]})",
     {"field /defaults/inject"}},
    {"UnknownCaseKeyNamesItsPointer",
     R"({"name": "m", "cases": [{}, {}, {"headz": 4}]})",
     {"case m/2 (/cases/2), field /cases/2/headz", "unknown key \"headz\""}},
    {"AMisspeltKeyGetsTheNearestKey",
     R"({"name": "m", "defaults": {"windw_left": 4}, "cases": [{"seq_len_kk": 3}]})",
     {"field /defaults/windw_left", "unknown key \"windw_left\"; did you mean \"window_left\"?"}},
    {"AMisspeltCaseKeyGetsTheNearestKey",
     R"({"name": "m", "cases": [{"seq_len_kk": 3}]})",
     {"field /cases/0/seq_len_kk", "did you mean \"seq_len_k\"?", "(case keys: batch, "}},
    {"WrongTypeInsideAnArrayNamesTheElement",
     R"({"name": "m", "matrix": {"seq_len": [1, "x"]}})",
     {"case m/1 (/matrix), field /matrix/seq_len/1"}},
    // the whole case
    {"CombinationErrorNamesTheDefaultItCameFrom",
     R"({"name": "m", "defaults": {"kv_heads": 4}, "cases": [{"heads": 8}, {"heads": 6}]})",
     {"case m/1 (/cases/1), field /defaults/kv_heads"}},
    // values whose consequences overflow, or that a kernel's fp32 cannot hold
    {"SoftcapBeyondFp32",
     one_case(R"({"softcap": 1e300})"),
     {"field /cases/0/softcap", "from 2^-60 to 2^60", "got 1e+300"}},
    {"SoftcapBelowWhatFp32Holds",
     one_case(R"({"softcap": 1e-300})"),
     {"field /cases/0/softcap", "from 2^-60 to 2^60"}},
    {"PageSizeWhosePoolOverflows",
     one_case(R"({"seq_len": 16, "page_size": 9223372036854775807})"),
     {"field /cases/0/page_size", "overflows int64"}},
    {"PagePoolLargerThanPhysicalMemory",
     one_case(R"({"seq_len": 16, "heads": 8, "head_dim": 128, "page_size": 1000000000000})"),
     {"/cases/0/page_size", "page pool of page_size 1000000000000", "GiB", "physical memory"}},
    {"CaseLargerThanPhysicalMemory",
     one_case(R"({"batch": 1024, "heads": 64, "seq_len": 1048576, "head_dim": 128})"),
     {"case m/0 (/cases/0)", "GiB", "physical memory"}},
};

class MatrixFileError : public ::testing::TestWithParam<MatrixErrorRow> {};

TEST_P(MatrixFileError, IsAHarnessErrorWhoseMessageHoldsEveryFragment) {
  const std::string message = error_of(GetParam().json, GetParam().files);
  ASSERT_NE(message, "") << "no error";
  for (const std::string& fragment : GetParam().fragments) {
    EXPECT_THAT(message, HasSubstr(fragment));
  }
}

INSTANTIATE_TEST_SUITE_P(MatrixFile, MatrixFileError, ::testing::ValuesIn(kMatrixErrors),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- errors: one bad field in a matrix's only case ----

// The only case of a matrix (one_case), and what the HarnessError's message must hold: the field's
// pointer, "field /cases/0/<field>", and `fragments`.
struct BadCaseFieldRow {
  const char* name;                         // the test's name
  const char* case_json;                    // the keys of the case
  const char* field;                        // the key the message names
  std::vector<std::string> fragments = {};  // more that is in the message
};

void PrintTo(const BadCaseFieldRow& row, std::ostream* out) {
  *out << row.name << ": " << row.case_json;
}

const std::vector<BadCaseFieldRow> kBadCaseFields = {
    // the wrong type
    {"StringWhereAnIntegerIsExpected",
     R"({"heads": "6"})",
     "heads",
     {"expected a positive integer, got string"}},
    {"BooleanWhereAnIntegerIsExpected", R"({"batch": true})", "batch"},
    {"FractionWhereAnIntegerIsExpected", R"({"head_dim": 3.5})", "head_dim"},
    {"IntegralFractionWhereAnIntegerIsExpected", R"({"head_dim": 64.0})", "head_dim"},
    {"NonBooleanCausal", R"({"causal": 1})", "causal"},
    {"KernelThatIsNotAString", R"({"kernel": 1})", "kernel"},
    {"InjectThatIsNotAString", R"({"inject": 4})", "inject"},
    // out of range
    {"ZeroSize", R"({"seq_len_k": 0})", "seq_len_k", {"must be a positive integer"}},
    {"NegativeSize", R"({"batch": -2})", "batch"},
    {"NegativeRowPadding", R"({"row_padding": -1})", "row_padding"},
    {"NegativeSeed", R"({"seed": -1})", "seed"},
    {"SeedBeyondUint64", R"({"seed": 18446744073709551616})", "seed"},
    {"ZeroSoftmaxScale", R"({"softmax_scale": 0})", "softmax_scale"},
    {"NegativeSoftmaxScale", R"({"softmax_scale": -0.5})", "softmax_scale"},
    // an unknown name
    {"UnknownDtype", R"({"dtype": "fp8"})", "dtype", {"unknown dtype \"fp8\""}},
    {"InputOnlyDtype",
     R"({"dtype": "e4m3"})",
     "dtype",
     {"\"e4m3\" holds only inputs", "expected one of fp16, bf16"}},
    {"UnknownDistribution",
     R"({"data": "gaussian"})",
     "data",
     {"unknown data distribution \"gaussian\""}},
    {"UnknownLayout", R"({"layout": "sbhd"})", "layout", {"unknown layout \"sbhd\""}},
    // a malformed injection
    {"InjectOfAnUnknownKind",
     R"({"inject": "v:huge:4"})",
     "inject",
     {"invalid injection", "<q|k|v>:<kind>:<count>"}},
    {"InjectOfNoElements",
     R"({"inject": "v:large:0"})",
     "inject",
     {"invalid injection", "<q|k|v>:<kind>:<count>"}},
    {"InjectWithoutACount",
     R"({"inject": "v:large"})",
     "inject",
     {"invalid injection", "<q|k|v>:<kind>:<count>"}},
    {"EmptyInject", R"({"inject": ""})", "inject", {"invalid injection", "<q|k|v>:<kind>:<count>"}},
    // fields that cannot go together
    {"HeadsNotAMultipleOfKvHeads",
     R"({"heads": 6, "kv_heads": 4})",
     "kv_heads",
     {"heads 6 is not a multiple of kv_heads 4"}},
    {"KvHeadsAboveHeads", R"({"heads": 2, "kv_heads": 4})", "kv_heads", {"exceeds heads"}},
    {"ElementCountOverflow",
     R"({"batch": 3, "seq_len": 1099511627776, "heads": 2199023255552})",
     "heads",
     {"3 * 1099511627776 * 2199023255552 * 64 overflows int64"}},
    {"ElementCountOverflowBlamesTheLargestFactorNotTheLastOne",
     R"({"batch": 4611686018427387904, "heads": 4, "seq_len": 1})",
     "batch",
     {"overflows int64"}},
};

class BadCaseField : public ::testing::TestWithParam<BadCaseFieldRow> {};

TEST_P(BadCaseField, IsAHarnessErrorNamingTheField) {
  const BadCaseFieldRow& row = GetParam();
  const std::string message = error_of(one_case(row.case_json));
  ASSERT_NE(message, "") << "no error";
  EXPECT_THAT(message, HasSubstr(std::string("field /cases/0/") + row.field));
  for (const std::string& fragment : row.fragments) EXPECT_THAT(message, HasSubstr(fragment));
}

INSTANTIATE_TEST_SUITE_P(MatrixFile, BadCaseField, ::testing::ValuesIn(kBadCaseFields),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- built-ins and the shipped corpus ----

TEST(MatrixFile, BuiltInMatrixNamesListTheShippedFiles) {
  const std::vector<std::string> names = built_in_matrix_names();
  for (const char* name : {"edges.json", "pr.json", "seed27.json", "variants.json"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(MatrixFile, UnknownBuiltInMatrixIsAnError) {
  EXPECT_THAT(error_from([] { load_built_in_matrix("nope.json"); }), HasSubstr("nope.json"));
}

// Edges first: they are small and catch most bugs, so a failing PR run with --fail-fast stops in
// seconds instead of after the seed's large cases. The variants come next, as small as the edges,
// then the backward pass's cases and the fp8 inputs' (under a second each on cpu_flash).
TEST(MatrixFile, BuiltInPrIsEdgesThenVariantsThenBackwardThenFp8ThenSeed27) {
  const CaseMatrix pr = load_built_in_matrix("pr.json");
  EXPECT_EQ(pr.name, "pr");
  EXPECT_EQ(pr.source, "built-in:pr.json");
  std::vector<AttentionCase> expected = edges_cases();
  const std::size_t edges = expected.size();
  const std::vector<AttentionCase> variants = load_built_in_matrix("variants.json").cases;
  for (const AttentionCase& c : variants) expected.push_back(c);
  const std::vector<AttentionCase> backward = load_built_in_matrix("backward.json").cases;
  for (const AttentionCase& c : backward) expected.push_back(c);
  for (const AttentionCase& c : load_built_in_matrix("fp8.json").cases) expected.push_back(c);
  for (const AttentionCase& c : load_built_in_matrix("seed27.json").cases) expected.push_back(c);
  EXPECT_EQ(pr.cases.size(), expected.size());
  EXPECT_TRUE(same_cases(pr.cases, expected));
  EXPECT_EQ(pr.cases.front().id, "edges/0");
  EXPECT_EQ(pr.cases[edges].id, "variants/0");
  EXPECT_EQ(pr.cases[edges + variants.size()].id, "backward/0");
  EXPECT_EQ(pr.cases[edges + variants.size() + backward.size()].id, "fp8/0");
  EXPECT_EQ(pr.cases.back().id.rfind("seed27/", 0), 0u);
}

TEST(MatrixFile, EveryShippedFileLoadsFromDiskAndEqualsItsBuiltInCopy) {
  const std::filesystem::path folder = std::filesystem::path(ATTNFUZZ_SOURCE_DIR) / "corpus/matrix";
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().filename().string();
    on_disk.insert(name);
    SCOPED_TRACE(name);
    const CaseMatrix from_disk = load_matrix_file(entry.path());
    const CaseMatrix built_in = load_built_in_matrix(name);
    EXPECT_EQ(from_disk.name, built_in.name);
    EXPECT_EQ(from_disk.source, entry.path().string());
    EXPECT_TRUE(same_cases(from_disk.cases, built_in.cases));
  }
  const std::vector<std::string> names = built_in_matrix_names();
  EXPECT_EQ(on_disk, std::set<std::string>(names.begin(), names.end()));
}

// ---- edges.json covers the edges ----

TEST(EdgesMatrix, StaysSmall) {
  double work = 0.0;
  for (const AttentionCase& c : edges_cases()) {
    if (c.batch * c.heads > kMaxGridYZ || c.seq_len_q > kMaxGridYZ) {
      // Past a grid launch limit, kept cheap: one query row or one head, a few keys.
      EXPECT_TRUE(c.seq_len_q == 1 || c.heads == 1) << c.id;
      EXPECT_LE(c.seq_len_k, 4) << c.id;
      EXPECT_LE(c.head_dim, 32) << c.id;
    } else {
      EXPECT_LE(c.batch, 2) << c.id;
      EXPECT_LE(c.heads, 14) << c.id;
    }
    work += static_cast<double>(c.batch) * static_cast<double>(c.heads) *
            static_cast<double>(c.seq_len_q) * static_cast<double>(c.seq_len_k) *
            static_cast<double>(c.head_dim);
  }
  EXPECT_LT(work, 3e9);
}

// One row a kind of edge that some case of edges.json must have: a sentence naming it and the
// predicate a case meets when it has it.
struct EdgeCoverage {
  const char* name;
  std::function<bool(const AttentionCase&)> has_edge;
};

std::function<bool(const AttentionCase&)> lengths(std::int64_t seq_len_q, std::int64_t seq_len_k,
                                                  bool causal = false) {
  return [=](const AttentionCase& c) {
    return c.seq_len_q == seq_len_q && c.seq_len_k == seq_len_k && (!causal || c.causal);
  };
}

std::function<bool(const AttentionCase&)> square(std::int64_t seq_len) {
  return lengths(seq_len, seq_len);
}

std::function<bool(const AttentionCase&)> with_head_dim(std::int64_t head_dim) {
  return [=](const AttentionCase& c) { return c.head_dim == head_dim; };
}

const EdgeCoverage kEdgeCoverage[] = {
    {"SeqLen1", square(1)},
    {"SeqLen97", square(97)},
    {"SeqLen113", square(113)},
    {"SeqLen127", square(127)},
    {"SeqLen1023", square(1023)},
    {"SeqLen1025", square(1025)},
    {"FewerQueriesThanKeys113x203", lengths(113, 203)},
    {"MoreQueriesThanKeys203x113", lengths(203, 113)},
    {"OneQueryManyKeys", lengths(1, 1025)},
    {"ManyQueriesOneKey", lengths(1025, 1)},
    {"CausalRowsFullyMasked203x113", lengths(203, 113, /*causal=*/true)},
    {"CausalRowsFullyMasked97x1", lengths(97, 1, /*causal=*/true)},
    {"CausalWithFewerQueriesThanKeys",
     [](const AttentionCase& c) { return c.causal && c.seq_len_q < c.seq_len_k; }},
    {"GroupedQueryAttention",
     [](const AttentionCase& c) { return c.heads == 6 && c.kv_heads == 2; }},
    {"MultiQueryAttention", [](const AttentionCase& c) { return c.heads == 6 && c.kv_heads == 1; }},
    {"HeadDim32", with_head_dim(32)},
    {"HeadDim64", with_head_dim(64)},
    {"HeadDim128", with_head_dim(128)},
    {"UnsupportedHeadDim80", with_head_dim(80)},
    {"BhsdLayout", [](const AttentionCase& c) { return c.layout == Layout::bhsd; }},
    {"RowPadding", [](const AttentionCase& c) { return c.row_padding == 8; }},
    {"Fp16", [](const AttentionCase& c) { return c.dtype == Dtype::fp16; }},
    {"Bf16", [](const AttentionCase& c) { return c.dtype == Dtype::bf16; }},
    // The axes a kernel that ignores or hard-codes something would otherwise pass on.
    {"SoftmaxScaleFarBelowTheDefault",
     [](const AttentionCase& c) {
       return c.softmax_scale > 0.0 &&
              c.softmax_scale * std::sqrt(static_cast<double>(c.head_dim)) < 0.25;
     }},
    {"SoftmaxScaleFarAboveTheDefault",
     [](const AttentionCase& c) {
       return c.softmax_scale * std::sqrt(static_cast<double>(c.head_dim)) > 4.0;
     }},
    {"SingleKeyUnderGqa",
     [](const AttentionCase& c) {
       return c.seq_len_k == 1 && c.kv_heads > 1 && c.heads > c.kv_heads;
     }},
    {"SingleKeyUnderMqa",
     [](const AttentionCase& c) { return c.seq_len_k == 1 && c.kv_heads == 1 && c.heads > 1; }},
    {"FewKeysUnderGqa",
     [](const AttentionCase& c) {
       return c.seq_len_k > 1 && c.seq_len_k < 8 && c.kv_heads > 1 && c.heads > c.kv_heads;
     }},
    {"RowPast4096KeysInBf16OfPeakedScores",
     [](const AttentionCase& c) {
       return c.seq_len_k > 4096 && c.dtype == Dtype::bf16 &&
              c.data == DataDistribution::peaked_softmax;
     }},
    {"HeadDim96", with_head_dim(96)},
    {"HeadDim256", with_head_dim(256)},
    {"UnsupportedHeadDim16", with_head_dim(16)},
    {"UnsupportedHeadDim160", with_head_dim(160)},
    {"UnsupportedHeadDim192", with_head_dim(192)},
    {"SpecialValuesInQ",
     [](const AttentionCase& c) {
       return c.injection.tensor == TensorRole::query && c.injection.value != SpecialValue::none;
     }},
    {"SpecialValuesInK",
     [](const AttentionCase& c) {
       return c.injection.tensor == TensorRole::key && c.injection.value != SpecialValue::none;
     }},
    {"SpecialValuesInV",
     [](const AttentionCase& c) {
       return c.injection.tensor == TensorRole::value && c.injection.value != SpecialValue::none;
     }},
    {"MoreBatchHeadPairsThanGridYOrZHoldsWithFewerOfEach",
     [](const AttentionCase& c) {
       return c.batch * c.heads > kMaxGridYZ && c.batch <= kMaxGridYZ && c.heads <= kMaxGridYZ;
     }},
    {"MoreBatchesThanGridYOrZHolds", [](const AttentionCase& c) { return c.batch > kMaxGridYZ; }},
    {"MoreQueryRowsThanGridYOrZHolds",
     [](const AttentionCase& c) { return c.seq_len_q > kMaxGridYZ; }},
};

class EdgesMatrixCovers : public ::testing::TestWithParam<EdgeCoverage> {};

TEST_P(EdgesMatrixCovers, SomeCaseHasTheEdge) {
  EXPECT_TRUE(std::any_of(edges_cases().begin(), edges_cases().end(), GetParam().has_edge));
}

INSTANTIATE_TEST_SUITE_P(EdgesMatrix, EdgesMatrixCovers, ::testing::ValuesIn(kEdgeCoverage),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EdgesMatrix, CoversEveryDistributionInBothDtypesAtATailShapeCausalAndNot) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
      for (const bool causal : {false, true}) {
        EXPECT_TRUE(std::any_of(edges_cases().begin(), edges_cases().end(),
                                [&](const AttentionCase& c) {
                                  return c.data == info.distribution && c.dtype == dtype &&
                                         c.causal == causal && c.seq_len_q % 64 != 0 &&
                                         c.seq_len_k % 64 != 0;
                                }))
            << info.name << " " << dtype_name(dtype) << (causal ? " causal" : "");
      }
    }
  }
}

}  // namespace
}  // namespace attnfuzz
