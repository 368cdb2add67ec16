// SPDX-License-Identifier: BSD-3-Clause
// The matrix reader's contract on arbitrary bytes (see matrix_parse_check.h): a located, one-line
// HarnessError, or a matrix of runnable cases.
#include "matrix/matrix_parse_check.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <typeinfo>
#include <vector>

#include "core/harness_error.h"
#include "core/json_text.h"
#include "matrix/embedded_files.h"

namespace attnfuzz {
namespace {

// ---- rejections ----

bool starts_with_digits_then(std::string_view text, std::string_view after) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  return digits > 0 && text.substr(digits).starts_with(after);
}

// Whether `text` starts with one of the pointers a case can sit at ("/matrix", "/cases/<i>")
// closed by ')' and followed by the end of the location (": ") or its field (", field /").
bool starts_with_case_pointer(std::string_view text) {
  std::string_view rest;
  if (text.starts_with("/matrix)")) {
    rest = text.substr(std::string_view("/matrix)").size());
  } else if (text.starts_with("/cases/")) {
    rest = text.substr(std::string_view("/cases/").size());
    std::size_t digits = 0;
    while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) {
      ++digits;
    }
    if (digits == 0 || digits == rest.size() || rest[digits] != ')') return false;
    rest = rest.substr(digits + 1);
  } else {
    return false;
  }
  return rest.starts_with(": ") || rest.starts_with(", field /");
}

// Whether `location` (what follows "<file>: ") starts with a place a reader can find:
//   field /<pointer>: ...
//   case <id> (/matrix|/cases/<i>)[, field /<pointer>]: ...
//   malformed JSON at byte <n>: ...
//   top level: ...
bool names_a_location(std::string_view location) {
  if (location.starts_with("field /") || location.starts_with("top level: ")) return true;
  constexpr std::string_view kMalformed = "malformed JSON at byte ";
  if (location.starts_with(kMalformed)) {
    return starts_with_digits_then(location.substr(kMalformed.size()), ": ");
  }
  if (!location.starts_with("case ")) return false;
  // The id is a matrix's name and may hold anything, " (/" included: try every opening.
  for (std::size_t open = location.find(" (/"); open != std::string_view::npos;
       open = location.find(" (/", open + 1)) {
    if (starts_with_case_pointer(location.substr(open + 2))) return true;
  }
  return false;
}

std::optional<std::string> check_rejection(const std::string& message, const std::string& source) {
  if (message.empty()) return "rejected with an empty message";
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return "rejected with a message that is not one printable line: " + json_quoted(message);
    }
  }
  const std::string own_prefix = source + ": ";
  std::vector<std::size_t> location_starts;
  if (message.starts_with(own_prefix)) location_starts.push_back(own_prefix.size());
  // A problem inside an included file starts with that file's name and says how it was reached.
  if (message.find("(included from " + source + " at /include/") != std::string::npos) {
    for (std::size_t colon = message.find(": "); colon != std::string::npos;
         colon = message.find(": ", colon + 1)) {
      location_starts.push_back(colon + 2);
    }
  }
  if (location_starts.empty()) {
    return "rejected with a message that does not start with the file's name " +
           json_quoted(source) + ": " + json_quoted(message);
  }
  for (const std::size_t start : location_starts) {
    if (names_a_location(std::string_view(message).substr(start))) return std::nullopt;
  }
  return "rejected with a message that names no field (JSON pointer), byte or top level: " +
         json_quoted(message);
}

// ---- accepted matrices ----

// Whether `id` is "<non-empty name>/<decimal index>".
bool is_case_id(const std::string& id) {
  const std::size_t slash = id.rfind('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == id.size()) return false;
  for (std::size_t i = slash + 1; i < id.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(id[i]))) return false;
  }
  return true;
}

bool product_fits_int64(std::initializer_list<std::int64_t> factors) {
  std::int64_t total = 1;
  for (const std::int64_t factor : factors) {
    if (__builtin_mul_overflow(total, factor, &total)) return false;
  }
  return true;
}

// What makes `attention_case` a case the harness cannot run, or nullopt.
std::optional<std::string> problem_with_case(const AttentionCase& attention_case) {
  if (!is_case_id(attention_case.id)) return "an id that is not <name>/<index>";
  std::optional<std::string> outside;  // the first field outside its limits
  for_each_case_field([&](auto field) {
    using Field = decltype(field);
    if (outside) return;
    if (auto why = Field::Codec::outside_limits(attention_case.*Field::member)) {
      outside = std::string(Field::key) + " " + *why;
    }
  });
  if (outside) return outside;
  if (attention_case.heads % attention_case.kv_heads != 0) {
    return "heads " + std::to_string(attention_case.heads) + " not a multiple of kv_heads " +
           std::to_string(attention_case.kv_heads);
  }
  if (const auto inconsistency = find_inconsistency(attention_case)) return inconsistency->message;
  std::int64_t row = 0, key_row = 0;
  const std::optional<PlacementBounds> bounds =
      placement_bounds(attention_case.placement, attention_case.heads, attention_case.kv_heads);
  if (!bounds ||
      __builtin_add_overflow(attention_case.head_dim, attention_case.row_padding, &row) ||
      __builtin_add_overflow(row, bounds->key_extra_padding, &key_row) ||
      !product_fits_int64(
          {attention_case.batch, attention_case.seq_len_q, bounds->query_heads, row}) ||
      !product_fits_int64(
          {attention_case.batch, attention_case.seq_len_k, bounds->key_heads, key_row})) {
    return "element counts that overflow int64";
  }
  return std::nullopt;
}

std::optional<std::string> check_accepted(const CaseMatrix& matrix, const std::string& source) {
  if (matrix.name.empty()) return "accepted a matrix with an empty name";
  if (matrix.source != source) {
    return "accepted a matrix whose source is " + json_quoted(matrix.source) + ", not " +
           json_quoted(source);
  }
  if (matrix.cases.empty()) return "accepted a matrix with no cases";
  std::set<std::string> ids;
  for (const AttentionCase& attention_case : matrix.cases) {
    if (!ids.insert(attention_case.id).second)
      return "accepted the case id " + json_quoted(attention_case.id) + " twice";
    if (const auto problem = problem_with_case(attention_case)) {
      return "accepted case " + json_quoted(attention_case.id) + " with " + *problem + ": " +
             describe_case(attention_case);
    }
  }
  return std::nullopt;
}

}  // namespace

CaseMatrix parse_matrix_text_among_built_ins(std::string_view text, const std::string& source) {
  const auto resolve_among_built_ins = [](const std::string& name) {
    for (const EmbeddedFile& file : embedded_matrix_files()) {
      if (file.name == name) return std::string(file.text);
    }
    throw HarnessError("no built-in matrix " + json_quoted(name) +
                       " (includes resolve among built-in matrices only)");
  };
  return parse_matrix_text(text, source, resolve_among_built_ins, kCheckedMaxMatrixCases);
}

std::optional<std::string> find_matrix_parse_misbehaviour(std::string_view bytes,
                                                          const MatrixTextParser& parser) {
  const std::string source(kCheckedMatrixSource);
  try {
    return check_accepted(parser(bytes, source), source);
  } catch (const HarnessError& error) {
    return check_rejection(error.what(), source);
  } catch (const std::exception& error) {
    return std::string("threw ") + typeid(error).name() +
           " instead of HarnessError: " + json_quoted(error.what());
  } catch (...) {
    return "threw something that is not a std::exception";
  }
}

}  // namespace attnfuzz
