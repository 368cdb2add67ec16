// SPDX-License-Identifier: BSD-3-Clause
#include "core/json_diagnostics.h"

#include <set>
#include <vector>

namespace attnfuzz {
namespace {

using Json = nlohmann::json;

// One JSON pointer reference token: "~" and "/" escaped (RFC 6901).
std::string pointer_token(std::string_view key) {
  std::string token;
  for (const char c : key) {
    if (c == '~') {
      token += "~0";
    } else if (c == '/') {
      token += "~1";
    } else {
      token += c;
    }
  }
  return token;
}

// nlohmann's SAX interface with every event accepted and the parse stopped at the first error;
// a pass over the text overrides only what it looks at. Every value, scalar or container, calls
// value_starts() first.
struct JsonEvents : nlohmann::json_sax<Json> {
  virtual void value_starts() {}
  bool value() {
    value_starts();
    return true;
  }
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return value(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return value(); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

}  // namespace

std::string child_pointer(const std::string& parent, std::string_view key) {
  return parent + "/" + pointer_token(key);
}
std::string child_pointer(const std::string& parent, std::size_t index) {
  return parent + "/" + std::to_string(index);
}

std::size_t byte_where_parsing_stops(std::string_view text) {
  struct ErrorLocator final : JsonEvents {
    std::size_t byte = 0;
    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception&) override {
      byte = position;
      return false;
    }
  };
  ErrorLocator locator;
  Json::sax_parse(text.begin(), text.end(), &locator);
  return locator.byte;
}

std::optional<std::string> first_duplicate_key(std::string_view text) {
  struct DuplicateFinder final : JsonEvents {
    struct Container {
      bool is_object = false;
      std::set<std::string> keys;
      std::string key;             // of the member being read (objects)
      std::size_t next_index = 0;  // of the next element (arrays)
    };
    std::vector<Container> open;
    std::optional<std::string> duplicate;

    void value_starts() override {
      if (!open.empty() && !open.back().is_object) ++open.back().next_index;
    }
    bool start_container(bool is_object) {
      value_starts();
      open.emplace_back();
      open.back().is_object = is_object;
      return true;
    }
    bool start_object(std::size_t) override { return start_container(true); }
    bool start_array(std::size_t) override { return start_container(false); }
    bool end_object() override {
      open.pop_back();
      return true;
    }
    bool end_array() override {
      open.pop_back();
      return true;
    }
    bool key(string_t& name) override {
      if (open.back().keys.insert(name).second) {
        open.back().key = name;
        return true;
      }
      std::string pointer;  // of the object holding the duplicate, then of the duplicate
      for (std::size_t level = 0; level + 1 < open.size(); ++level) {
        pointer = open[level].is_object ? child_pointer(pointer, open[level].key)
                                        : child_pointer(pointer, open[level].next_index - 1);
      }
      duplicate = child_pointer(pointer, name);
      return false;  // stop: the first one is enough
    }
  };
  DuplicateFinder finder;
  Json::sax_parse(text.begin(), text.end(), &finder);
  return finder.duplicate;
}

std::string json_problem(const nlohmann::json::exception& error) {
  std::string what = error.what();
  if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
  return what;
}

}  // namespace attnfuzz
