// SPDX-License-Identifier: BSD-3-Clause
// The property search reaches every axis the fixed matrices reach: each case is sorted into value
// classes, one table row per axis (a tail tile, a row that sees a single key under grouped heads, a
// scale off the fp16 grid, each variant's forms), and every class a shipped correctness matrix
// holds must be drawn by search_cases() at least once in kFloor draws. A matrix that gains an axis
// or a value class the generator lacks fails here, naming the class, until the generator draws it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/problem_features.h"
#include "fuzz/case_generator.h"
#include "matrix/matrix_file.h"

namespace attnfuzz {
namespace {

constexpr int kDraws = 20000;
// Each class the matrices hold is drawn at least once in this many draws, on average.
constexpr int kFloor = 2000;

std::string length_class(std::int64_t length) {
  const std::int64_t tail = length % 64;
  const std::string remainder = tail == 0    ? "whole tiles"
                                : tail == 1  ? "a one-row tail"
                                : tail == 63 ? "a 63-row tail"
                                             : "another tail";
  const std::string size = length == 1      ? "1"
                           : length <= 64   ? "2..64"
                           : length <= 256  ? "65..256"
                           : length <= 1024 ? "257..1024"
                           : length <= 4096 ? "1025..4096"
                                            : "4097+";
  return size + ", " + remainder;
}

std::string grouping(const AttentionCase& c) {
  if (c.heads == c.kv_heads) return "MHA";
  return c.kv_heads == 1 ? "MQA" : "GQA";
}

// The fewest keys a row of the first sequence sees: 0 (a fully masked row), 1, or more.
std::string fewest_visible_keys(const AttentionCase& c) {
  const AttentionProblem problem = problem_of(c);
  std::int64_t fewest = problem.seq_len_k_of(0);
  for (std::int64_t i = 0; i < std::min<std::int64_t>(problem.seq_len_q_of(0), 4096); ++i) {
    const KeyRange keys = problem.visible_keys_of(0, i);
    fewest = std::min(fewest, keys.empty() ? 0 : keys.end - keys.first);
  }
  return fewest == 0   ? "a row sees no key"
         : fewest == 1 ? "a row sees one key"
                       : "rows see 2+ keys";
}

// Whether `value` is exactly a value of `dtype`.
bool on_grid(double value, Dtype dtype) {
  return static_cast<double>(round_to_dtype(static_cast<float>(value), dtype)) == value;
}

std::string scale_class(const AttentionCase& c) {
  const double scale =
      c.softmax_scale == 0.0 ? 1.0 / std::sqrt(static_cast<double>(c.head_dim)) : c.softmax_scale;
  std::string text = c.softmax_scale == 0.0 ? "default" : "set";
  text += on_grid(scale, Dtype::fp16) ? ", on the fp16 grid" : ", off the fp16 grid";
  text += on_grid(scale, Dtype::bf16) ? ", on the bf16 grid" : ", off the bf16 grid";
  return text;
}

bool has_empty_sequence(const std::vector<std::int64_t>& lengths) {
  return std::find(lengths.begin(), lengths.end(), 0) != lengths.end();
}

std::string varlen_form(const AttentionCase& c) {
  const bool q = !c.seq_lens_q.empty(), k = !c.seq_lens_k.empty();
  std::string text = q && k ? "q and k" : q ? "q" : k ? "k" : "none";
  if (has_empty_sequence(c.seq_lens_q) || has_empty_sequence(c.seq_lens_k)) {
    text += ", an empty sequence";
  }
  return text;
}

std::string page_form(const AttentionCase& c) {
  if (c.page_size == 0) return "none";
  return c.seq_len_k % c.page_size == 0 ? "pages that divide the keys" : "a partial last page";
}

std::string window_form(const AttentionCase& c) {
  const bool left = c.window_left >= 0, right = c.window_right >= 0;
  std::string text = left && right ? "two-sided" : left ? "left" : right ? "right" : "none";
  if (c.window_left == 0 || c.window_right == 0) text += ", a zero-width side";
  return text + (c.causal ? ", causal" : "");
}

// ROW(axis, the class of a case on it)
struct ReachAxis {
  const char* axis;
  std::string (*class_of)(const AttentionCase&);
};

const ReachAxis kReachAxes[] = {
    {"dtype", [](const AttentionCase& c) { return std::string(dtype_name(c.dtype)); }},
    {"layout", [](const AttentionCase& c) { return std::string(layout_name(c.layout)); }},
    {"placement", [](const AttentionCase& c) { return std::string(placement_name(c.placement)); }},
    {"row_padding",
     [](const AttentionCase& c) { return std::string(c.row_padding > 0 ? "padded" : "none"); }},
    {"data", [](const AttentionCase& c) { return std::string(distribution_name(c.data)); }},
    {"injected value",
     [](const AttentionCase& c) {
       return std::string(kSpecialValues[static_cast<int>(c.injection.value)].name);
     }},
    {"head_dim", [](const AttentionCase& c) { return std::to_string(c.head_dim); }},
    {"batch", [](const AttentionCase& c) { return std::string(c.batch == 1 ? "1" : "2+"); }},
    {"grouped heads", grouping},
    {"seq_len_q", [](const AttentionCase& c) { return length_class(c.seq_len_q); }},
    {"seq_len_k", [](const AttentionCase& c) { return length_class(c.seq_len_k); }},
    {"seq_len_q against seq_len_k",
     [](const AttentionCase& c) {
       return std::string(c.seq_len_q == c.seq_len_k  ? "equal"
                          : c.seq_len_q < c.seq_len_k ? "fewer queries"
                                                      : "more queries");
     }},
    {"causal", [](const AttentionCase& c) { return std::string(c.causal ? "causal" : "full"); }},
    {"fewest visible keys, by grouping",
     [](const AttentionCase& c) { return fewest_visible_keys(c) + ", " + grouping(c); }},
    {"softmax_scale", scale_class},
    {"varlen", varlen_form},
    {"paged K/V", page_form},
    {"sliding window", window_form},
    {"softcap", [](const AttentionCase& c) { return std::string(c.softcap > 0 ? "on" : "off"); }},
    {"alibi", [](const AttentionCase& c) { return std::string(c.alibi ? "on" : "off"); }},
    {"return_lse", [](const AttentionCase& c) { return std::string(c.return_lse ? "on" : "off"); }},
    {"backward", [](const AttentionCase& c) { return std::string(c.backward ? "on" : "off"); }},
    {"Q's storage",
     [](const AttentionCase& c) { return std::string(input_storage_name(c.q_storage)); }},
    {"K's storage",
     [](const AttentionCase& c) { return std::string(input_storage_name(c.k_storage)); }},
    {"V's storage",
     [](const AttentionCase& c) { return std::string(input_storage_name(c.v_storage)); }},
    {"descale, with fp8 inputs",
     [](const AttentionCase& c) {
       const bool fp8 = c.q_storage != InputStorage::same || c.k_storage != InputStorage::same ||
                        c.v_storage != InputStorage::same;
       return std::string(fp8 ? descale_name(c.descale) : "no fp8 input");
     }},
    {"past a grid y/z launch limit (65535 blocks)",
     [](const AttentionCase& c) {
       return std::string(c.seq_len_q > kMaxGridYZ         ? "query rows"
                          : c.batch > kMaxGridYZ           ? "batches"
                          : c.batch * c.heads > kMaxGridYZ ? "(batch, head) pairs"
                                                           : "none");
     }},
};

using Classes = std::map<std::string, std::map<std::string, int>>;  // axis -> class -> count

void sort_into(Classes& classes, const AttentionCase& attention_case) {
  for (const ReachAxis& axis : kReachAxes) ++classes[axis.axis][axis.class_of(attention_case)];
}

TEST(GeneratorReach, TheSearchDrawsEveryValueClassTheCorrectnessMatricesHold) {
  Classes in_matrices;
  std::map<std::string, std::string> example;  // "axis: class" -> a case id holding it
  for (const char* matrix :
       {"pr.json", "inference.json", "training.json", "sanitize.json", "backward.json"}) {
    for (const AttentionCase& attention_case : load_built_in_matrix(matrix).cases) {
      sort_into(in_matrices, attention_case);
      for (const ReachAxis& axis : kReachAxes) {
        example.emplace(std::string(axis.axis) + ": " + axis.class_of(attention_case),
                        attention_case.id);
      }
    }
  }
  Classes drawn;
  const rc::Gen<AttentionCase> generator = search_cases();
  for (int index = 0; index < kDraws; ++index) {
    sort_into(drawn,
              generator(rc::Random(20261128u + static_cast<std::uint64_t>(index)), 100).value());
  }
  for (const auto& [axis, classes] : in_matrices) {
    for (const auto& [value_class, count] : classes) {
      const int times = drawn[axis][value_class];
      EXPECT_GE(times, kDraws / kFloor)
          << axis << ": " << value_class << " (as in " << example[axis + ": " + value_class]
          << ") is drawn " << times << " times in " << kDraws;
    }
  }
}

}  // namespace
}  // namespace attnfuzz
