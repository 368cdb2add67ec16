// SPDX-License-Identifier: BSD-3-Clause
// Matrix files: JSON that expands into a list of cases (the format is in matrix_file.h).
//
// Layers. Every case starts from AttentionCase{}, then the file's "defaults", then its own keys
// (from "matrix" or one entry of "cases"). Within one object keys apply in kCaseKeys order, so
// seq_len applies before seq_len_q and seq_len_k. kv_heads, unless some layer sets it, equals
// heads.
//
// Expansion order. An object whose values include arrays expands into the cartesian product of
// those arrays. Keys iterate in kCaseKeys order (not the order they appear in the file, so
// reformatting a file never renumbers its cases) and the LAST key varies fastest:
//   {"batch": [16, 32], "seq_len": [448, 512]}  ->  (16, 448), (16, 512), (32, 448), (32, 512)
// A file's own cases are the "matrix" product first, then each entry of "cases" in order, numbered
// "<name>/0", "<name>/1", ...; included matrices' cases come before them and keep their own ids.
//
// Includes. On disk an include resolves relative to the including file; among built-ins, by file
// name. An include cycle, or a case id met twice (one matrix included twice, or two matrices with
// one name), is an error.
//
// Errors throw HarnessError, one line: "<file>: case <id> (<case pointer>), field <pointer>:
// <what>", with " (included from <file> at /include/<i>, ...)" appended inside an included file;
// a problem of the whole case drops ", field <pointer>", one of the file's shape says "top level"
// and unparsable text "malformed JSON at byte <n>". Control characters a file's keys, names or
// values carry into a message are escaped (\n, \u001b), so the message stays one line.
#include "matrix/matrix_file.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/json_diagnostics.h"
#include "core/json_parse.h"
#include "core/number_text.h"
#include "core/physical_memory.h"
#include "core/text.h"
#include "matrix/embedded_files.h"

namespace attnfuzz {
namespace {

using Json = nlohmann::json;

// Includes nested deeper than this are an error (cycles are caught earlier, by name).
constexpr int kMaxIncludeDepth = 32;

// ---- the case keys ----

// A case being assembled, and the JSON pointer each field's value came from (empty: the built-in
// default), so that a problem found only in a combination names the field to change.
struct CaseDraft {
  AttentionCase value;
  std::array<std::string, kCaseFieldCount> origins;
  std::string& origin(CaseField field) { return origins[static_cast<std::size_t>(field)]; }
};

struct CaseKey {
  std::string_view name;
  // Stores the value read from JSON pointer `at`; throws FieldProblem if it is unusable.
  void (*apply)(CaseDraft& draft, const Json& value, const std::string& at);
  std::string_view alias_of;  // an alias: the key it stands for (both given: they must agree)
};

template <CaseField field>
void apply_field(CaseDraft& draft, const Json& value, const std::string& at) {
  using Traits = CaseFieldTraits<field>;
  draft.value.*Traits::member = Traits::Codec::read(value);
  draft.origin(field) = at;
}

template <CaseField first, CaseField second>
void apply_shorthand(CaseDraft& draft, const Json& value, const std::string& at) {
  apply_field<first>(draft, value, at);
  apply_field<second>(draft, value, at);
}

// Every key a case may hold, from the schema (case/case_schema.h), in its order: the order keys
// apply within one object and the order of product expansion (last fastest).
constexpr CaseKey kCaseKeys[] = {
#define ATTNFUZZ_KEY_OF_FIELD(member, Codec, key, value, use) \
  {key, &apply_field<CaseField::member>, {}},
#define ATTNFUZZ_KEY_OF_SHORTHAND(key, first, second) \
  {key, &apply_shorthand<CaseField::first, CaseField::second>, {}},
#define ATTNFUZZ_KEY_OF_ALIAS(alias, member) \
  {alias, &apply_field<CaseField::member>, CaseFieldTraits<CaseField::member>::key},
    ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_KEY_OF_FIELD, ATTNFUZZ_KEY_OF_SHORTHAND, ATTNFUZZ_KEY_OF_ALIAS)
#undef ATTNFUZZ_KEY_OF_FIELD
#undef ATTNFUZZ_KEY_OF_SHORTHAND
#undef ATTNFUZZ_KEY_OF_ALIAS
};

const CaseKey* find_case_key(std::string_view name) {
  for (const CaseKey& key : kCaseKeys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

// The message for a key no case has: the nearest key when one is close, else every key.
std::string unknown_key_problem(const std::string& name) {
  const std::vector<std::string> keys = case_keys();
  if (const std::optional<std::string> nearest = closest_name(name, keys)) {
    return "unknown key \"" + name + "\"; did you mean \"" + *nearest +
           "\"? (case keys: " + join_names(keys) + ")";
  }
  return "unknown key \"" + name + "\" (case keys: " + join_names(keys) + ")";
}

constexpr std::string_view kTopLevelKeys[] = {"name", "include", "defaults", "matrix", "cases"};

// ---- the parser ----

// An included file's text. `key` identifies the file for cycle detection.
struct ResolvedText {
  std::string source;
  std::string key;
  std::string text;
};
using Resolver =
    std::function<ResolvedText(const std::string& including_source, const std::string& name)>;

class MatrixParser {
 public:
  explicit MatrixParser(Resolver resolver, std::size_t max_cases = kMaxMatrixCases)
      : resolver_(std::move(resolver)), max_cases_(max_cases) {}

  CaseMatrix parse(std::string_view text, const std::string& source, const std::string& key) {
    return parse_file(text, source, key, "");
  }

 private:
  // The file being parsed and how it was reached, for messages.
  struct FileContext {
    std::string source;
    std::string included_from;  // "included from a.json at /include/0, ..." or empty
  };

  [[noreturn]] static void fail(const FileContext& file, const std::string& where,
                                const std::string& problem) {
    std::string message = file.source + ": " + where + ": " + problem;
    if (!file.included_from.empty()) message += " (" + file.included_from + ")";
    throw HarnessError(escape_control_characters(message));
  }

  static std::string field(const std::string& pointer) { return "field " + pointer; }
  static std::string in_case(const std::string& id, const std::string& case_pointer) {
    return "case " + id + " (" + case_pointer + ")";
  }
  static std::string in_case_field(const std::string& id, const std::string& case_pointer,
                                   const std::string& field_pointer) {
    return in_case(id, case_pointer) + ", " + field(field_pointer);
  }

  CaseMatrix parse_file(std::string_view text, const std::string& source, const std::string& key,
                        const std::string& included_from) {
    const FileContext file{source, included_from};
    Json document;
    try {
      document = parse_json(text);
    } catch (const JsonTooDeep& error) {
      fail(file, "top level", error.what());
    } catch (const Json::parse_error& error) {
      fail(file, "malformed JSON at byte " + std::to_string(error.byte), json_problem(error));
    } catch (const Json::exception& error) {  // out_of_range: a number beyond double's range
      fail(file, "malformed JSON at byte " + std::to_string(byte_where_parsing_stops(text)),
           json_problem(error));
    }
    if (const std::optional<std::string> duplicate = first_duplicate_key(text)) {
      fail(file, field(*duplicate), "key given twice in one object (JSON keeps only one value)");
    }
    if (!document.is_object()) {
      fail(file, "top level", "expected a JSON object, got " + std::string(document.type_name()));
    }
    for (const auto& [name, value] : document.items()) {
      if (std::find(std::begin(kTopLevelKeys), std::end(kTopLevelKeys), name) ==
          std::end(kTopLevelKeys)) {
        fail(file, field(child_pointer("", name)),
             "unknown top-level key \"" + name + "\" (expected " + join_names(kTopLevelKeys) + ")");
      }
    }

    CaseMatrix matrix;
    matrix.source = source;
    const auto name = document.find("name");
    if (name == document.end()) fail(file, field("/name"), "missing: a matrix needs a \"name\"");
    if (!name->is_string() || name->get<std::string>().empty()) {
      fail(file, field("/name"), "expected a non-empty string, got " + describe_json_value(*name));
    }
    matrix.name = name->get<std::string>();
    // The name becomes every case's id, which reports print and JUnit XML holds: XML 1.0 has no
    // way to write most control characters, so they are refused here rather than there.
    if (std::any_of(matrix.name.begin(), matrix.name.end(), [](char c) {
          const auto byte = static_cast<unsigned char>(c);
          return byte < 0x20 || byte == 0x7f;
        })) {
      fail(file, field("/name"), "contains a control character: case ids come from the name");
    }

    std::set<std::string> ids;
    if (const auto include = document.find("include"); include != document.end()) {
      append_includes(file, key, *include, matrix, ids);
    }

    CaseDraft defaults;
    if (const auto found = document.find("defaults"); found != document.end()) {
      defaults = read_defaults(file, *found);
    }

    std::size_t own_cases = 0;
    const auto add = [&](const std::string& case_pointer, const Json& object) {
      expand_object(file, matrix.name, case_pointer, object, defaults, own_cases, matrix, ids);
    };
    if (const auto found = document.find("matrix"); found != document.end()) add("/matrix", *found);
    if (const auto cases = document.find("cases"); cases != document.end()) {
      if (!cases->is_array()) {
        fail(file, field("/cases"),
             "expected an array of objects, got " + describe_json_value(*cases));
      }
      for (std::size_t i = 0; i < cases->size(); ++i) add(child_pointer("/cases", i), (*cases)[i]);
    }
    if (matrix.cases.empty()) {
      fail(file, "top level",
           "matrix \"" + matrix.name +
               "\" expands to no cases (give \"matrix\", \"cases\" or \"include\")");
    }
    return matrix;
  }

  void append_includes(const FileContext& file, const std::string& key, const Json& include,
                       CaseMatrix& matrix, std::set<std::string>& ids) {
    if (!include.is_array()) {
      fail(file, field("/include"),
           "expected an array of file names, got " + describe_json_value(include));
    }
    if (chain_.size() >= kMaxIncludeDepth) {
      fail(file, field("/include"),
           "includes nest deeper than " + std::to_string(kMaxIncludeDepth) + " levels");
    }
    chain_.push_back(key);
    for (std::size_t i = 0; i < include.size(); ++i) {
      const std::string at = child_pointer("/include", i);
      if (!include[i].is_string()) {
        fail(file, field(at),
             "expected a file name (string), got " + describe_json_value(include[i]));
      }
      ResolvedText resolved;
      try {
        resolved = resolver_(file.source, include[i].get<std::string>());
      } catch (const HarnessError& error) {
        fail(file, field(at), error.what());
      }
      if (std::find(chain_.begin(), chain_.end(), resolved.key) != chain_.end()) {
        std::string cycle;
        for (auto it = std::find(chain_.begin(), chain_.end(), resolved.key); it != chain_.end();
             ++it) {
          cycle += *it + " -> ";
        }
        fail(file, field(at), "include cycle: " + cycle + resolved.key);
      }
      const std::string from = "included from " + file.source + " at " + at;
      const CaseMatrix included =
          parse_file(resolved.text, resolved.source, resolved.key,
                     file.included_from.empty() ? from : from + ", " + file.included_from);
      if (included.cases.size() > max_cases_ - matrix.cases.size()) {
        fail(file, field(at), too_many_cases(matrix.cases.size() + included.cases.size()));
      }
      for (const AttentionCase& attention_case : included.cases) {
        if (!ids.insert(attention_case.id).second) {
          fail(file, field(at),
               "case id \"" + attention_case.id +
                   "\" appears twice: include each matrix once, and give matrices distinct names");
        }
        matrix.cases.push_back(attention_case);
      }
    }
    chain_.pop_back();
  }

  // Whether `key` is an alias whose key `object` holds as well: then only that key applies, and
  // the two must hold the same value (a report's config carries both, "batch" and "batch_size").
  static bool defers_to_its_key(const CaseKey& key, const Json& object) {
    if (key.alias_of.empty()) return false;
    const auto aliased = object.find(key.alias_of);
    if (aliased == object.end()) return false;
    if (*aliased != object.at(key.name)) {
      throw FieldProblem{"disagrees with \"" + std::string(key.alias_of) + "\" (" +
                         aliased->dump() + "): \"" + std::string(key.name) + "\" is another name " +
                         "for it, and both must hold the same value"};
    }
    return true;
  }

  CaseDraft read_defaults(const FileContext& file, const Json& defaults) {
    if (!defaults.is_object()) {
      fail(file, field("/defaults"), "expected an object, got " + describe_json_value(defaults));
    }
    CaseDraft draft;
    for (const CaseKey& key : kCaseKeys) {
      const auto found = defaults.find(key.name);
      if (found == defaults.end()) continue;
      const std::string at = child_pointer("/defaults", key.name);
      if (found->is_array() || found->is_object()) {
        fail(file, field(at), "defaults hold single values, got " + describe_json_value(*found));
      }
      try {
        if (defers_to_its_key(key, defaults)) continue;
        key.apply(draft, *found, at);
      } catch (const FieldProblem& problem) {
        fail(file, field(at), problem.message);
      }
    }
    for (const auto& [name, value] : defaults.items()) {
      if (find_case_key(name) == nullptr) {
        fail(file, field(child_pointer("/defaults", name)), unknown_key_problem(name));
      }
    }
    return draft;
  }

  // One value of a key in a product, and where it is.
  struct Choice {
    const Json* value;
    std::string at;
  };
  struct Axis {
    const CaseKey* key;
    std::vector<Choice> choices;
  };

  // Expands one "matrix" or "cases" entry at `case_pointer` into the product of its array values.
  void expand_object(const FileContext& file, const std::string& matrix_name,
                     const std::string& case_pointer, const Json& object, const CaseDraft& defaults,
                     std::size_t& own_cases, CaseMatrix& matrix, std::set<std::string>& ids) {
    const std::string first_id = matrix_name + "/" + std::to_string(own_cases);
    if (!object.is_object()) {
      fail(file, in_case(first_id, case_pointer),
           "expected an object of case keys, got " + describe_json_value(object));
    }
    for (const auto& [name, value] : object.items()) {
      if (find_case_key(name) == nullptr) {
        fail(file, in_case_field(first_id, case_pointer, child_pointer(case_pointer, name)),
             unknown_key_problem(name));
      }
    }
    std::vector<Axis> axes;
    for (const CaseKey& key : kCaseKeys) {
      const auto found = object.find(key.name);
      if (found == object.end()) continue;
      Axis axis{&key, {}};
      const std::string at = child_pointer(case_pointer, key.name);
      try {
        if (defers_to_its_key(key, object)) continue;
      } catch (const FieldProblem& problem) {
        fail(file, in_case_field(first_id, case_pointer, at), problem.message);
      }
      if (found->is_array()) {
        if (found->empty()) {
          fail(file, in_case_field(first_id, case_pointer, at), "empty array: expands to no cases");
        }
        for (std::size_t i = 0; i < found->size(); ++i) {
          axis.choices.push_back({&(*found)[i], child_pointer(at, i)});
        }
      } else {
        axis.choices.push_back({&*found, at});
      }
      axes.push_back(std::move(axis));
    }
    // The product's size, counted before expanding it. matrix.cases never holds more than
    // max_cases_, so the subtraction below cannot wrap.
    std::size_t expands_to = 1;
    for (const Axis& axis : axes) {
      if (__builtin_mul_overflow(expands_to, axis.choices.size(), &expands_to) ||
          expands_to > max_cases_) {
        expands_to = std::numeric_limits<std::size_t>::max();
        break;
      }
    }
    if (expands_to > max_cases_) {
      fail(file, in_case(first_id, case_pointer),
           "its arrays multiply to more than " + std::to_string(max_cases_) +
               " cases; a matrix holds at most " + std::to_string(max_cases_));
    }
    if (expands_to > max_cases_ - matrix.cases.size()) {
      fail(file, in_case(first_id, case_pointer), too_many_cases(matrix.cases.size() + expands_to));
    }

    // An odometer over the axes, the last one turning fastest.
    std::vector<std::size_t> position(axes.size(), 0);
    while (true) {
      const std::string id = matrix_name + "/" + std::to_string(own_cases);
      CaseDraft draft = defaults;
      for (std::size_t a = 0; a < axes.size(); ++a) {
        const Choice& choice = axes[a].choices[position[a]];
        try {
          axes[a].key->apply(draft, *choice.value, choice.at);
        } catch (const FieldProblem& problem) {
          fail(file, in_case_field(id, case_pointer, choice.at), problem.message);
        }
      }
      draft.value.id = id;
      finish_case(file, case_pointer, draft);
      if (!ids.insert(id).second) {
        fail(file, in_case(id, case_pointer),
             "case id \"" + id + "\" is also an included matrix's: give matrices distinct names");
      }
      matrix.cases.push_back(std::move(draft.value));
      ++own_cases;

      std::size_t a = axes.size();
      while (a > 0 && ++position[a - 1] == axes[a - 1].choices.size()) position[--a] = 0;
      if (a == 0) break;
    }
  }

  // Checks what only the whole case can tell: head grouping, sizes and memory.
  void finish_case(const FileContext& file, const std::string& case_pointer, CaseDraft& draft) {
    AttentionCase& c = draft.value;
    // kv_heads, unless some layer sets it, equals heads (plain multi-head attention).
    if (draft.origin(CaseField::kv_heads).empty()) {
      c.kv_heads = c.heads;
      draft.origin(CaseField::kv_heads) = draft.origin(CaseField::heads);
    }
    const auto origin = [&](CaseField field) -> const std::string& { return draft.origin(field); };
    // Where a value came from; a built-in default has no place in the file: name the case.
    const auto where = [&](const std::string& origin) {
      return origin.empty() ? in_case(c.id, case_pointer)
                            : in_case_field(c.id, case_pointer, origin);
    };
    if (c.kv_heads > c.heads) {
      fail(file, where(origin(CaseField::kv_heads)),
           "kv_heads " + std::to_string(c.kv_heads) + " exceeds heads " + std::to_string(c.heads));
    }
    if (c.heads % c.kv_heads != 0) {
      fail(file, where(origin(CaseField::kv_heads)),
           "heads " + std::to_string(c.heads) + " is not a multiple of kv_heads " +
               std::to_string(c.kv_heads));
    }
    if (const std::optional<CaseInconsistency> inconsistency = find_inconsistency(c)) {
      fail(file, where(origin(inconsistency->field)), inconsistency->message);
    }

    // Element counts. A product that overflows is blamed on its largest factor, the one out of
    // proportion (the factor at which the running product overflows may be an innocent 4), and the
    // message gives every factor's value.
    const auto product =
        [&](const char* what,
            std::initializer_list<std::pair<std::int64_t, const std::string*>> factors) {
          std::int64_t total = 1;
          bool overflowed = false;
          for (const auto& [factor, origin] : factors) {
            overflowed = overflowed || __builtin_mul_overflow(total, factor, &total);
          }
          if (!overflowed) return total;
          const auto largest = std::max_element(
              factors.begin(), factors.end(),
              [](const auto& left, const auto& right) { return left.first < right.first; });
          std::string values;
          for (const auto& [factor, origin] : factors) {
            values += (values.empty() ? "" : " * ") + std::to_string(factor);
          }
          fail(file, where(*largest->second),
               std::string(what) + " = " + values + " overflows int64");
        };
    std::int64_t row = 0;
    if (__builtin_add_overflow(c.head_dim, c.row_padding, &row)) {
      fail(file, where(origin(CaseField::row_padding)), "head_dim + row_padding overflows int64");
    }
    const std::string& padding_origin = origin(CaseField::row_padding).empty()
                                            ? origin(CaseField::head_dim)
                                            : origin(CaseField::row_padding);
    // The buffers the placement's tensors are views of (a packed QKV row holds H + 2 Hkv heads).
    const std::optional<PlacementBounds> bounds =
        placement_bounds(c.placement, c.heads, c.kv_heads);
    std::int64_t key_row = 0;
    if (!bounds || __builtin_add_overflow(row, bounds->key_extra_padding, &key_row)) {
      fail(file, where(origin(CaseField::placement)),
           "the buffers of placement " + std::string(placement_name(c.placement)) +
               " overflow int64");
    }
    const std::int64_t q_span = product("batch * seq_len_q * heads * (head_dim + row_padding)",
                                        {{c.batch, &origin(CaseField::batch)},
                                         {c.seq_len_q, &origin(CaseField::seq_len_q)},
                                         {bounds->query_heads, &origin(CaseField::heads)},
                                         {row, &padding_origin}});
    // A paged case's K and V are its page pool: batch * pages per sequence + 1 pages of page_size
    // rows, far more than its keys when page_size is far above seq_len_k.
    const std::int64_t k_span =
        c.page_size > 0 ? product("pool pages * page_size * kv_heads * (head_dim + row_padding)",
                                  {{c.batch * pages_for(c.seq_len_k, c.page_size) + 1,
                                    &origin(CaseField::page_size)},
                                   {c.page_size, &origin(CaseField::page_size)},
                                   {bounds->key_heads, &origin(CaseField::kv_heads)},
                                   {key_row, &padding_origin}})
                        : product("batch * seq_len_k * kv_heads * (head_dim + row_padding)",
                                  {{c.batch, &origin(CaseField::batch)},
                                   {c.seq_len_k, &origin(CaseField::seq_len_k)},
                                   {bounds->key_heads, &origin(CaseField::kv_heads)},
                                   {key_row, &padding_origin}});
    const std::int64_t outputs = product("batch * seq_len_q * heads * head_dim",
                                         {{c.batch, &origin(CaseField::batch)},
                                          {c.seq_len_q, &origin(CaseField::seq_len_q)},
                                          {c.heads, &origin(CaseField::heads)},
                                          {c.head_dim, &origin(CaseField::head_dim)}});

    // Memory a case needs at once, in bytes: q and o span q_span elements and k and v span k_span
    // elements, 2 bytes each, and the kernel is handed a copy of q, k and v (run/kernel_inputs.h);
    // the oracle keeps a float64 output and a float64 magnitude per output element (16 bytes) and
    // the plain reference a float32 output (4 bytes); the log-sum-exp is a float per row and head.
    const double lse_floats =
        c.return_lse ? static_cast<double>(outputs) / static_cast<double>(c.head_dim) : 0.0;
    const double bytes = (2.0 * 2.0 + 2.0) * static_cast<double>(q_span) +
                         (2.0 * 2.0 + 2.0 * 2.0) * static_cast<double>(k_span) +
                         (16.0 + 4.0) * static_cast<double>(outputs) + 4.0 * lse_floats;
    const double available = static_cast<double>(physical_memory_bytes().value_or(0));
    if (available > 0.0 && bytes > available) {
      // Mostly page pool: the page size is what to change (a page far longer than the keys).
      const double pool_bytes = (2.0 * 2.0 + 2.0 * 2.0) * static_cast<double>(k_span);
      const bool pool_dominates = c.page_size > 0 && pool_bytes > bytes / 2;
      fail(file, pool_dominates ? where(origin(CaseField::page_size)) : in_case(c.id, case_pointer),
           "needs about " + gibibytes_text(bytes) +
               (pool_dominates ? " (mostly the page pool of page_size " +
                                     std::to_string(c.page_size) + ", for "
                               : " (inputs, output and the oracle's buffers for ") +
               describe_shape(problem_of(c)) + ") but this machine has " +
               gibibytes_text(available) + " of physical memory");
    }
  }

  std::string too_many_cases(std::size_t count) const {
    return "brings the matrix to " + std::to_string(count) + " cases; a matrix holds at most " +
           std::to_string(max_cases_);
  }

  Resolver resolver_;
  std::size_t max_cases_;
  std::vector<std::string> chain_;  // keys of the files being parsed, outermost first
};

std::string cycle_key_of(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  return error ? path.lexically_normal().string() : canonical.string();
}

const EmbeddedFile* find_embedded(const std::string& name) {
  for (const EmbeddedFile& file : embedded_matrix_files()) {
    if (file.name == name) return &file;
  }
  return nullptr;
}

}  // namespace

CaseMatrix load_matrix_file(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  MatrixParser parser([](const std::string& including_source, const std::string& name) {
    const std::filesystem::path included =
        (std::filesystem::path(including_source).parent_path() / name).lexically_normal();
    return ResolvedText{included.string(), cycle_key_of(included), read_file(included)};
  });
  return parser.parse(text, path.string(), cycle_key_of(path));
}

CaseMatrix parse_matrix_text(std::string_view text, const std::string& source,
                             const std::function<std::string(const std::string&)>& resolve_include,
                             std::size_t max_cases) {
  MatrixParser parser(
      [&resolve_include](const std::string&, const std::string& name) {
        return ResolvedText{name, name, resolve_include(name)};
      },
      max_cases);
  return parser.parse(text, source, source);
}

std::vector<std::string> case_keys() {
  std::vector<std::string> keys;
  for (const CaseKey& key : kCaseKeys) keys.emplace_back(key.name);
  return keys;
}

std::vector<std::string> built_in_matrix_names() {
  std::vector<std::string> names;
  for (const EmbeddedFile& file : embedded_matrix_files()) names.emplace_back(file.name);
  std::sort(names.begin(), names.end());
  return names;
}

CaseMatrix load_built_in_matrix(const std::string& name) {
  // Built-ins include each other by file name; any folder part of an include is ignored.
  const auto find = [](const std::string& wanted) -> const EmbeddedFile& {
    const EmbeddedFile* file = find_embedded(wanted);
    if (file == nullptr) file = find_embedded(wanted + ".json");
    if (file == nullptr) {
      throw HarnessError("no built-in matrix \"" + wanted +
                         "\" (built-in: " + join_names(built_in_matrix_names()) + ")");
    }
    return *file;
  };
  const EmbeddedFile& top = find(name);
  const std::string source = "built-in:" + std::string(top.name);
  MatrixParser parser([&find](const std::string&, const std::string& included) {
    const EmbeddedFile& file = find(std::filesystem::path(included).filename().string());
    const std::string included_source = "built-in:" + std::string(file.name);
    return ResolvedText{included_source, included_source, std::string(file.text)};
  });
  return parser.parse(top.text, source, source);
}

}  // namespace attnfuzz
