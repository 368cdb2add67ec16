// SPDX-License-Identifier: BSD-3-Clause
#include "run/known_failures.h"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/json_diagnostics.h"
#include "core/json_parse.h"
#include "core/shell_pattern.h"
#include "core/text.h"

namespace attnfuzz {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kEntryKeys[] = {"case", "kernel", "where", "failure", "reason", "issue"};

[[noreturn]] void fail(const std::string& source, const std::string& pointer,
                       const std::string& problem) {
  throw HarnessError(escape_control_characters(source + ": " + pointer + ": " + problem));
}

enum class Presence { optional, required };

// The string at `key` of `entry`; "" when absent and optional.
std::string text_of(const Json& entry, std::string_view key, Presence presence,
                    const std::string& source, const std::string& pointer) {
  const auto found = entry.find(key);
  const std::string at = child_pointer(pointer, key);
  if (found == entry.end()) {
    if (presence == Presence::required) {
      fail(source, at, "missing: every entry says why it fails and where that is tracked");
    }
    return "";
  }
  if (!found->is_string() || found->get<std::string>().empty()) {
    fail(source, at, "expected a non-empty string, got " + describe_json_value(*found));
  }
  return found->get<std::string>();
}

KnownFailure entry_of(const Json& entry, const std::string& source, const std::string& pointer) {
  if (!entry.is_object()) {
    fail(source, pointer, "expected an object, got " + describe_json_value(entry));
  }
  for (const auto& [name, value] : entry.items()) {
    if (std::find(std::begin(kEntryKeys), std::end(kEntryKeys), name) == std::end(kEntryKeys)) {
      fail(source, child_pointer(pointer, name),
           "unknown key \"" + name + "\" (expected " + join_names(kEntryKeys) + ")");
    }
  }
  KnownFailure known;
  known.case_id = text_of(entry, "case", Presence::optional, source, pointer);
  known.kernel = text_of(entry, "kernel", Presence::optional, source, pointer);
  known.failure = text_of(entry, "failure", Presence::optional, source, pointer);
  known.note.reason = text_of(entry, "reason", Presence::required, source, pointer);
  known.note.issue = text_of(entry, "issue", Presence::required, source, pointer);
  known.note.entry = source + "#" + pointer;
  if (const auto where = entry.find("where"); where != entry.end()) {
    try {
      known.where = CasePattern::from_json(*where);
    } catch (const CasePatternProblem& problem) {
      fail(source, child_pointer(child_pointer(pointer, "where"), problem.key), problem.message);
    }
  }
  return known;
}

// An entry's pattern: empty matches any name.
bool pattern_matches(const std::string& pattern, const std::string& name) {
  return pattern.empty() || matches_shell_pattern(pattern, name);
}

bool lists_case(const KnownFailure& known, const CaseResult& result) {
  return pattern_matches(known.case_id, result.attention_case.id) &&
         pattern_matches(known.kernel, result.kernel_name) &&
         known.where.matches(result.attention_case);
}

}  // namespace

KnownFailures KnownFailures::parse(std::string_view text, const std::string& source) {
  Json document;
  try {
    document = parse_json(text);
  } catch (const JsonTooDeep& error) {
    fail(source, "top level", error.what());
  } catch (const Json::exception& error) {
    fail(source, "malformed JSON at byte " + std::to_string(byte_where_parsing_stops(text)),
         json_problem(error));
  }
  if (const std::optional<std::string> duplicate = first_duplicate_key(text)) {
    fail(source, *duplicate, "key given twice in one object (JSON keeps only one value)");
  }
  if (!document.is_object()) {
    fail(source, "top level", "expected a JSON object, got " + describe_json_value(document));
  }
  for (const auto& [name, value] : document.items()) {
    if (name != "known_failures") {
      fail(source, child_pointer("", name),
           "unknown top-level key \"" + name + "\" (expected known_failures)");
    }
  }
  const auto list = document.find("known_failures");
  if (list == document.end() || !list->is_array()) {
    fail(source, "/known_failures",
         list == document.end() ? std::string("missing: the list of known failures")
                                : "expected an array, got " + describe_json_value(*list));
  }
  KnownFailures known_failures;
  for (std::size_t index = 0; index < list->size(); ++index) {
    known_failures.entries_.push_back(
        entry_of((*list)[index], source, child_pointer("/known_failures", index)));
  }
  return known_failures;
}

KnownFailures KnownFailures::load(const std::filesystem::path& path) {
  return parse(read_file(path), path.string());
}

void KnownFailures::judge(CaseResult& result) const {
  if (result.status == CaseStatus::skip || result.status == CaseStatus::known) return;
  const KnownFailure* expecting_another_failure = nullptr;
  for (const KnownFailure& known : entries_) {
    if (!lists_case(known, result)) continue;
    if (result.status == CaseStatus::fail && !known.failure.empty() &&
        result.reason.find(known.failure) == std::string::npos) {
      if (expecting_another_failure == nullptr) expecting_another_failure = &known;
      continue;
    }
    if (result.status == CaseStatus::fail) {
      result.status = CaseStatus::known;
      result.known_failure = known.note;
    } else {
      result.status = CaseStatus::fail;
      result.reason = "passes, but " + known.note.entry + " lists it as a known failure (" +
                      known.note.reason + "; " + known.note.issue + "): fixed? remove the entry";
    }
    return;
  }
  if (expecting_another_failure != nullptr) {
    result.reason += " (not the known failure of " + expecting_another_failure->note.entry +
                     ", which fails with \"" + expecting_another_failure->failure + "\")";
  }
}

}  // namespace attnfuzz
