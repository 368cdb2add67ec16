// SPDX-License-Identifier: BSD-3-Clause
// The matrix reader's contract check (matrix/matrix_parse_check.h): the fuzzing corpus
// (corpus/matrix_parser/ and the shipped matrices of corpus/matrix/) keeps it, and the check is
// honest: fake readers that plant each kind of misbehaviour are reported, located messages of every
// form are not, and a reader that drops locations or lets a bad case through fails on the corpus.
#include "matrix/matrix_parse_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "core/harness_error.h"
#include "matrix/matrix_file.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kSourceDir = ATTNFUZZ_SOURCE_DIR;

// The fuzzer's corpus: its own inputs and the shipped matrices it starts from.
std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  for (const char* folder : {"corpus/matrix_parser", "corpus/matrix"}) {
    for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / folder)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool accepted_by_the_reader(const std::string& bytes) {
  try {
    parse_matrix_text_among_built_ins(bytes, std::string(kCheckedMatrixSource));
    return true;
  } catch (const HarnessError&) {
    return false;
  }
}

// A reader that ignores its input and rejects it with `message`.
MatrixTextParser rejecting_with(const std::string& message) {
  return [message](std::string_view, const std::string&) -> CaseMatrix {
    throw HarnessError(message);
  };
}

// A reader that ignores its input and accepts one good case, then lets `plant` spoil the matrix.
MatrixTextParser accepting(const std::function<void(CaseMatrix&)>& plant) {
  return [plant](std::string_view, const std::string& source) {
    AttentionCase good;
    good.id = "m/0";
    good.batch = 2;
    good.heads = 6;
    good.kv_heads = 2;
    CaseMatrix matrix{"m", source, {good}};
    plant(matrix);
    return matrix;
  };
}

// ---- the shipped corpus ----

TEST(MatrixParseCheck, ShippedCorpusKeepsTheContract) {
  const auto files = corpus_files();
  ASSERT_GE(files.size(), 50u);
  std::size_t accepted = 0;
  for (const auto& file : files) {
    const std::string bytes = read_file(file);
    EXPECT_EQ(find_matrix_parse_misbehaviour(bytes), std::nullopt) << file;
    accepted += accepted_by_the_reader(bytes) ? 1 : 0;
  }
  // Both sides of the reader: matrices it takes, and inputs it must refuse with a location.
  EXPECT_GE(accepted, 5u);
  EXPECT_GE(files.size() - accepted, 30u);
}

TEST(MatrixParseCheck, DictionaryNamesEveryValueOfTheGrammar) {
  const std::string dictionary = read_file(kSourceDir / "corpus/matrix.dict");
  std::vector<std::string> names;
  for (const auto& traits : kDtypeTraits) names.emplace_back(traits.name);
  for (const auto& info : kDataDistributions) names.emplace_back(info.name);
  for (const auto& layout : kLayoutNames) names.emplace_back(layout);
  for (const auto& info : kSpecialValues) names.emplace_back(info.name);
  for (const auto& name : kInputStorageNames) names.emplace_back(name);
  for (const auto& info : kDescales) names.emplace_back(info.name);
  for (const std::string& name : names) EXPECT_THAT(dictionary, HasSubstr(name)) << name;
  // Every key of a case, quoted: the schema's fields, shorthands and aliases (case/case_schema.h).
  const std::vector<std::string> keys = case_keys();
  for (const std::string& key : keys) {
    EXPECT_THAT(dictionary, HasSubstr("\\\"" + key + "\\\"")) << key;  // \"key\"
  }
}

// A reader that loses every location is caught on the corpus: the replay has teeth.
TEST(MatrixParseCheck, CorpusCatchesAReaderThatDropsLocations) {
  const MatrixTextParser unlocated = [](std::string_view text, const std::string& source) {
    try {
      return parse_matrix_text_among_built_ins(text, source);
    } catch (const HarnessError&) {
      throw HarnessError(source + ": invalid matrix");
    }
  };
  for (const auto& file : corpus_files()) {
    const std::string bytes = read_file(file);
    if (accepted_by_the_reader(bytes)) continue;
    const auto misbehaviour = find_matrix_parse_misbehaviour(bytes, unlocated);
    ASSERT_TRUE(misbehaviour.has_value()) << file;
    EXPECT_THAT(*misbehaviour, HasSubstr("names no field")) << file;
  }
}

// A reader that lets a zero batch through is caught on the corpus too.
TEST(MatrixParseCheck, CorpusCatchesAReaderThatAcceptsAZeroBatch) {
  const MatrixTextParser forgiving = [](std::string_view text, const std::string& source) {
    try {
      return parse_matrix_text_among_built_ins(text, source);
    } catch (const HarnessError& error) {
      if (std::string(error.what()).find("batch: must be a positive integer, got 0") ==
          std::string::npos) {
        throw;
      }
      AttentionCase zero_batch;
      zero_batch.id = "m/0";
      zero_batch.batch = 0;
      return CaseMatrix{"m", source, {zero_batch}};
    }
  };
  std::size_t caught = 0;
  for (const auto& file : corpus_files()) {
    if (find_matrix_parse_misbehaviour(read_file(file), forgiving)) ++caught;
  }
  EXPECT_GE(caught, 1u);
}

// ---- rejections ----

TEST(MatrixParseCheck, ReportsAnExceptionOtherThanHarnessError) {
  const MatrixTextParser throwing = [](std::string_view, const std::string&) -> CaseMatrix {
    throw std::out_of_range("vector::at");
  };
  const auto misbehaviour = find_matrix_parse_misbehaviour("{}", throwing);
  ASSERT_TRUE(misbehaviour.has_value());
  EXPECT_THAT(*misbehaviour, HasSubstr("instead of HarnessError"));
  EXPECT_THAT(*misbehaviour, HasSubstr("vector::at"));
}

TEST(MatrixParseCheck, ReportsAThrownNonException) {
  const MatrixTextParser throwing = [](std::string_view, const std::string&) -> CaseMatrix {
    throw 42;
  };
  EXPECT_THAT(find_matrix_parse_misbehaviour("{}", throwing).value_or(""),
              HasSubstr("not a std::exception"));
}

// A reader's rejection message and what the check must say of it: the words its report holds, or
// nullptr where the message keeps the contract.
struct RejectionMessage {
  const char* name;
  std::string message;
  const char* report;
};

std::string checked(const std::string& rest) {
  return std::string(kCheckedMatrixSource) + rest;
}

const RejectionMessage kRejectionMessages[] = {
    // Messages that name no location.
    {"NoLocation", checked(": invalid matrix"), "names no field"},
    {"OnlyTheMatrix", checked(": matrix \"m\": expands to no cases"), "names no field"},
    {"JsonErrorWithoutByte", checked(": malformed JSON: number overflow parsing '1e999'"),
     "names no field"},
    {"EmptyByte", checked(": malformed JSON at byte : x"), "names no field"},
    {"FieldWithoutPointer", checked(": case m/0 (/cases/0), field (default): overflows int64"),
     "names no field"},
    {"CaseWithoutPointer", checked(": case m/0: bad"), "names no field"},
    {"PointerOutsideCases", checked(": case m/0 (/cases/x): bad"), "names no field"},
    {"FieldNotAPointer", checked(": field name: bad"), "names no field"},
    {"TopLevelWithoutColon", checked(": top level"), "names no field"},
    // Messages that do not start with the file's name.
    {"NoFileName", "field /name: bad", ""},
    {"OtherFileName", "other.json: field /name: bad", ""},
    {"FileNameWithoutSeparator", "input.jsonfield /name: bad", ""},
    {"Empty", "", ""},
    // Messages of more than one printable line.
    {"Newline", "input.json: field /name: bad\nname", "not one printable line"},
    {"Tab", "input.json: field /a\tb: unknown", "not one printable line"},
    {"Escape", "input.json: top level: \x1b[31mred", "not one printable line"},
    // Every located form keeps the contract.
    {"Field", "input.json: field /name: expected a non-empty string, got number 3", nullptr},
    {"Include", "input.json: field /include/0: no built-in matrix \"x\"", nullptr},
    {"CaseAndField",
     "input.json: case m/0 (/matrix), field /matrix/seq_len/1: must be a positive integer",
     nullptr},
    {"CaseAndDefaultsField",
     "input.json: case m/12 (/cases/3), field /defaults/kv_heads: heads 6 is not a multiple",
     nullptr},
    {"Case", "input.json: case m/0 (/cases/0): needs about 2.0 GiB", nullptr},
    {"NestedCase",
     "input.json: case odd (/x) name/0 (/cases/0): its arrays multiply to more than 100000",
     nullptr},
    {"JsonByte", "input.json: malformed JSON at byte 17: parse error", nullptr},
    {"TopLevel", "input.json: top level: expected a JSON object, got array", nullptr},
    {"Included",
     "edges.json: case edges/0 (/cases/0), field /cases/0/heads: bad (included from input.json at "
     "/include/0)",
     nullptr},
};

class MatrixParseCheckOfRejection : public ::testing::TestWithParam<RejectionMessage> {};

TEST_P(MatrixParseCheckOfRejection, ReportsOnlyMessagesThatBreakTheContract) {
  const RejectionMessage& row = GetParam();
  const auto misbehaviour = find_matrix_parse_misbehaviour("{}", rejecting_with(row.message));
  if (row.report == nullptr) {
    EXPECT_EQ(misbehaviour, std::nullopt);
  } else {
    ASSERT_TRUE(misbehaviour.has_value());
    EXPECT_THAT(*misbehaviour, HasSubstr(row.report));
  }
}

INSTANTIATE_TEST_SUITE_P(MatrixParseCheck, MatrixParseCheckOfRejection,
                         ::testing::ValuesIn(kRejectionMessages),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- accepted matrices ----

TEST(MatrixParseCheck, AcceptsAGoodMatrix) {
  EXPECT_EQ(find_matrix_parse_misbehaviour("{}", accepting([](CaseMatrix&) {})), std::nullopt);
}

struct PlantedCase {
  const char* what;  // what the report must say
  std::function<void(CaseMatrix&)> plant;
};

// Spoils the matrix's first case.
std::function<void(CaseMatrix&)> first(const std::function<void(AttentionCase&)>& spoil) {
  return [spoil](CaseMatrix& matrix) { spoil(matrix.cases.front()); };
}

const PlantedCase kPlantedCases[] = {
    {"empty name", [](CaseMatrix& m) { m.name.clear(); }},
    {"source", [](CaseMatrix& m) { m.source = "elsewhere.json"; }},
    {"no cases", [](CaseMatrix& m) { m.cases.clear(); }},
    {"twice", [](CaseMatrix& m) { m.cases.push_back(m.cases.front()); }},
    {"not <name>/<index>", first([](AttentionCase& c) { c.id.clear(); })},
    {"not <name>/<index>", first([](AttentionCase& c) { c.id = "m/x"; })},
    {"not <name>/<index>", first([](AttentionCase& c) { c.id = "/0"; })},
    {"batch 0", first([](AttentionCase& c) { c.batch = 0; })},
    {"heads -6", first([](AttentionCase& c) { c.heads = -6; })},
    {"kv_heads 0", first([](AttentionCase& c) { c.kv_heads = 0; })},
    {"seq_len_q 0", first([](AttentionCase& c) { c.seq_len_q = 0; })},
    {"seq_len_k -1", first([](AttentionCase& c) { c.seq_len_k = -1; })},
    {"head_dim 0", first([](AttentionCase& c) { c.head_dim = 0; })},
    {"row_padding -1", first([](AttentionCase& c) { c.row_padding = -1; })},
    {"not a multiple", first([](AttentionCase& c) { c.kv_heads = 4; })},
    {"overflow", first([](AttentionCase& c) { c.seq_len_q = std::int64_t{1} << 60; })},
    {"overflow",
     first([](AttentionCase& c) { c.row_padding = std::numeric_limits<std::int64_t>::max(); })},
    {"softmax_scale", first([](AttentionCase& c) { c.softmax_scale = -1.0; })},
    {"softmax_scale", first([](AttentionCase& c) { c.softmax_scale = std::nan(""); })},
    {"softmax_scale",
     first([](AttentionCase& c) { c.softmax_scale = std::numeric_limits<double>::infinity(); })},
    {"injection", first([](AttentionCase& c) {
       c.injection = {SpecialValue::large, TensorRole::value, 0};
     })},
};

class MatrixParseCheckOfAcceptance : public ::testing::TestWithParam<PlantedCase> {};

TEST_P(MatrixParseCheckOfAcceptance, ReportsAnAcceptedMatrixThatBreaksAnInvariant) {
  const auto misbehaviour = find_matrix_parse_misbehaviour("{}", accepting(GetParam().plant));
  ASSERT_TRUE(misbehaviour.has_value());
  EXPECT_THAT(*misbehaviour, HasSubstr(GetParam().what));
}

INSTANTIATE_TEST_SUITE_P(MatrixParseCheck, MatrixParseCheckOfAcceptance,
                         ::testing::ValuesIn(kPlantedCases));

// ---- the real reader ----

TEST(MatrixParseCheck, IncludesResolveAmongBuiltInsOnly) {
  const std::string source(kCheckedMatrixSource);
  EXPECT_EQ(
      parse_matrix_text_among_built_ins(R"({"name": "t", "include": ["seed27.json"]})", source)
          .cases.size(),
      27u);
  // A real file on disk, by its full path, is still not read.
  const std::string on_disk = (kSourceDir / "corpus/matrix/seed27.json").string();
  try {
    parse_matrix_text_among_built_ins(R"({"name": "t", "include": [")" + on_disk + R"("]})",
                                      source);
    FAIL() << "an include outside the built-ins resolved";
  } catch (const HarnessError& error) {
    EXPECT_THAT(error.what(), HasSubstr("field /include/0: no built-in matrix"));
  }
}

// The check parses under kCheckedMaxMatrixCases; the reader's own limit keeps the contract too.
TEST(MatrixParseCheck, ReaderAtItsOwnCaseLimitKeepsTheContract) {
  const MatrixTextParser at_full_limit = [](std::string_view text, const std::string& source) {
    return parse_matrix_text(text, source, [](const std::string& name) -> std::string {
      throw HarnessError("no file " + name);
    });
  };
  const std::string ten = "[1,2,3,4,5,6,7,8,9,10]";
  // 2,000 cases: over the check's limit, within the reader's.
  const std::string within = R"({"name": "m", "matrix": {"batch": [1, 2], "seq_len_q": )" + ten +
                             R"(, "seq_len_k": )" + ten + R"(, "seed": )" + ten + "}}";
  EXPECT_EQ(at_full_limit(within, "input.json").cases.size(), 2000u);
  EXPECT_EQ(find_matrix_parse_misbehaviour(within, at_full_limit), std::nullopt);
  // 1,000,000 cases from 180 bytes: refused before expanding, naming where.
  const std::string beyond = R"({"name": "m", "matrix": {"batch": )" + ten + R"(, "heads": )" +
                             ten + R"(, "seq_len_q": )" + ten + R"(, "seq_len_k": )" + ten +
                             R"(, "head_dim": )" + ten + R"(, "seed": )" + ten + "}}";
  EXPECT_EQ(find_matrix_parse_misbehaviour(beyond, at_full_limit), std::nullopt);
  try {
    at_full_limit(beyond, "input.json");
    FAIL() << "a matrix of a million cases was accepted";
  } catch (const HarnessError& error) {
    EXPECT_THAT(error.what(), HasSubstr("input.json: case m/0 (/matrix): its arrays multiply to "
                                        "more than 100000 cases"));
  }
}

const std::string kHostileInputs[] = {
    "",
    "\xff\xfe",
    std::string(R"({"name": "m", "cases": [{}]})") + '\0',
    R"({"name": "a\nb", "cases": [{"batch": 0}]})",
    R"({"name": "m", "cases": [{"\u001b[31m": 1}]})",
    R"({"name": "m", "cases": [{"softmax_scale": 1e999}]})",
    R"({"name": "m", "cases": [{"batch": 1099511627776, "seq_len": 1048576}]})",
    R"({"name": "m", "cases": []})",
    R"({"name": "m", "matrix": {"batch": [1,2,3,4,5,6,7,8,9,10], "heads": [1,2,3,4,5,6,7,8,9,10],
          "seq_len_q": [1,2,3,4,5,6,7,8,9,10], "seq_len_k": [1,2,3,4,5,6,7,8,9,10],
          "head_dim": [1,2,3,4,5,6,7,8,9,10], "seed": [1,2,3,4,5,6,7,8,9,10]}})",
};

class MatrixParseCheckOfRealReader : public ::testing::TestWithParam<std::string> {};

TEST_P(MatrixParseCheckOfRealReader, KeepsTheContractOnAHostileInput) {
  EXPECT_EQ(find_matrix_parse_misbehaviour(GetParam()), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(MatrixParseCheck, MatrixParseCheckOfRealReader,
                         ::testing::ValuesIn(kHostileInputs));

}  // namespace
}  // namespace attnfuzz
