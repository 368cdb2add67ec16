// SPDX-License-Identifier: BSD-3-Clause
// The codecs of case/case_schema.h: how each kind of field reads from JSON, and its limits.
#include "case/case_schema.h"

#include <iterator>

#include "core/number_text.h"
#include "core/text.h"

namespace attnfuzz {

using Json = nlohmann::json;

std::string describe_json_value(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(value.type_name()) + " " + text;
}

namespace case_codec_detail {

std::int64_t read_int64(const Json& value, const char* expected) {
  if (value.is_number_unsigned()) {
    const auto magnitude = value.get<std::uint64_t>();
    if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw FieldProblem{"integer " + value.dump() + " does not fit in int64"};
    }
    return static_cast<std::int64_t>(magnitude);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  throw FieldProblem{std::string("expected ") + expected + ", got " + describe_json_value(value)};
}

void unknown_name(std::string_view what, const std::string& name, const std::string& expected) {
  throw FieldProblem{"unknown " + std::string(what) + " \"" + name + "\" (expected one of " +
                     expected + ")"};
}

}  // namespace case_codec_detail

namespace {

std::string read_string(const Json& value) {
  if (!value.is_string())
    throw FieldProblem{"expected a string, got " + describe_json_value(value)};
  return value.get<std::string>();
}

// The names of a table's rows, "a, b, c", for messages.
template <typename Table, typename Name>
std::string names_of(const Table& table, Name name) {
  std::vector<std::string_view> names;
  for (const auto& row : table) names.push_back(name(row));
  return join_names(names);
}

// Whether an enum's value indexes a row of its table.
template <typename Table, typename Enum>
std::optional<std::string> outside_table(const Table& table, Enum value) {
  if (static_cast<std::size_t>(value) < std::size(table)) return std::nullopt;
  return "enum value " + std::to_string(static_cast<unsigned>(value)) + " (out of range)";
}

}  // namespace

Seed::Value Seed::read(const Json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer()) {
    throw FieldProblem{"must be a non-negative integer, got " + value.dump()};
  }
  throw FieldProblem{"expected a non-negative integer (uint64), got " + describe_json_value(value)};
}

Boolean::Value Boolean::read(const Json& value) {
  if (!value.is_boolean()) {
    throw FieldProblem{"expected true or false, got " + describe_json_value(value)};
  }
  return value.get<bool>();
}

KernelName::Value KernelName::read(const Json& value) {
  return read_string(value);
}

OptionalScale::Value OptionalScale::read(const Json& value) {
  if (!value.is_number()) {
    throw FieldProblem{"expected a number, got " + describe_json_value(value)};
  }
  const double scale = value.get<double>();
  if (!(scale > 0.0) || !std::isfinite(scale)) {
    throw FieldProblem{"must be a finite number > 0, got " + value.dump()};
  }
  return scale;
}

std::optional<std::string> OptionalScale::outside_limits(Value value) {
  if (value == 0.0 || (std::isfinite(value) && value > 0.0)) return std::nullopt;
  return std::to_string(value) + " (neither 0 nor finite > 0)";
}

DtypeName::Value DtypeName::read(const Json& value) {
  const std::string name = read_string(value);
  const std::string expected =
      names_of(output_dtypes(), [](const DtypeTraits& row) { return row.name; });
  const std::optional<Dtype> dtype = parse_dtype(name);
  if (dtype && holds_outputs(*dtype)) return *dtype;
  if (dtype) {
    throw FieldProblem{"\"" + name + "\" holds only inputs, not a case's output (expected one of " +
                       expected + ")"};
  }
  case_codec_detail::unknown_name("dtype", name, expected);
}

std::optional<std::string> DtypeName::outside_limits(Value value) {
  return outside_table(output_dtypes(), value);
}

InputStorageName::Value InputStorageName::read(const Json& value) {
  const std::string name = read_string(value);
  if (const auto storage = parse_input_storage(name)) return *storage;
  throw FieldProblem{"unknown input dtype \"" + name +
                     "\" (expected same, the case's dtype, or an fp8 format: e4m3, e5m2)"};
}

std::optional<std::string> InputStorageName::outside_limits(Value value) {
  return outside_table(kInputStorageNames, value);
}

DescaleName::Value DescaleName::read(const Json& value) {
  const std::string name = read_string(value);
  if (const auto descale = parse_descale(name)) return *descale;
  case_codec_detail::unknown_name(
      "descale", name, names_of(kDescales, [](const DescaleInfo& row) { return row.name; }));
}

std::optional<std::string> DescaleName::outside_limits(Value value) {
  return outside_table(kDescales, value);
}

DistributionName::Value DistributionName::read(const Json& value) {
  const std::string name = read_string(value);
  if (const auto distribution = parse_distribution(name)) return *distribution;
  case_codec_detail::unknown_name(
      "data distribution", name,
      names_of(kDataDistributions, [](const DataDistributionInfo& row) { return row.name; }));
}

std::optional<std::string> DistributionName::outside_limits(Value value) {
  return outside_table(kDataDistributions, value);
}

LayoutName::Value LayoutName::read(const Json& value) {
  const std::string name = read_string(value);
  if (const auto layout = parse_layout(name)) return *layout;
  case_codec_detail::unknown_name("layout", name,
                                  names_of(kLayoutNames, [](std::string_view row) { return row; }));
}

std::optional<std::string> LayoutName::outside_limits(Value value) {
  return outside_table(kLayoutNames, value);
}

PlacementName::Value PlacementName::read(const Json& value) {
  const std::string name = read_string(value);
  if (const auto placement = parse_placement(name)) return *placement;
  case_codec_detail::unknown_name(
      "placement", name, names_of(kPlacements, [](const PlacementInfo& row) { return row.name; }));
}

std::optional<std::string> PlacementName::outside_limits(Value value) {
  return outside_table(kPlacements, value);
}

SequenceLengths::Value SequenceLengths::read(const Json& json) {
  const std::string text = read_string(json);
  Value lengths;
  if (text.empty()) return lengths;
  std::size_t at = 0;
  while (true) {
    std::size_t digits = at;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == at || digits - at > 10) {
      throw FieldProblem{"invalid sequence lengths \"" + text +
                         "\" (expected comma-separated integers >= 0, e.g. \"512,0,1,77\")"};
    }
    const std::int64_t length = std::stoll(text.substr(at, digits - at));
    if (length > std::numeric_limits<std::int32_t>::max()) {
      throw FieldProblem{"sequence length " + std::to_string(length) + " does not fit in int32"};
    }
    lengths.push_back(length);
    if (digits == text.size()) return lengths;
    if (text[digits] != ',') {
      throw FieldProblem{"invalid sequence lengths \"" + text +
                         "\" (expected comma-separated integers >= 0, e.g. \"512,0,1,77\")"};
    }
    at = digits + 1;
  }
}

Json SequenceLengths::write(const Value& value) {
  std::string text;
  for (const std::int64_t length : value) {
    if (!text.empty()) text += ',';
    text += std::to_string(length);
  }
  return text;
}

std::optional<std::string> SequenceLengths::outside_limits(const Value& value) {
  for (const std::int64_t length : value) {
    if (length < 0 || length > std::numeric_limits<std::int32_t>::max()) {
      return "length " + std::to_string(length) + " (not in 0 .. 2^31 - 1)";
    }
  }
  return std::nullopt;
}

SoftcapValue::Value SoftcapValue::read(const Json& value) {
  if (!value.is_number()) {
    throw FieldProblem{"expected a number, got " + describe_json_value(value)};
  }
  const double number = value.get<double>();
  if (outside_limits(number)) {
    throw FieldProblem{
        "must be 0 (off) or from 2^-60 to 2^60, which a kernel's fp32 tanh holds, "
        "got " +
        value.dump()};
  }
  return number;
}

std::optional<std::string> SoftcapValue::outside_limits(Value value) {
  if (value == 0.0 || (value >= kSmallest && value <= kLargest)) return std::nullopt;
  return significant_digits(value, 6) + " (not 0, nor from 2^-60 to 2^60)";
}

InjectionText::Value InjectionText::read(const Json& value) {
  const std::string text = read_string(value);
  if (const auto injection = parse_injection(text)) return *injection;
  std::vector<std::string_view> kinds;
  for (const SpecialValueInfo& info : kSpecialValues) {
    if (info.value != SpecialValue::none) kinds.push_back(info.name);
  }
  throw FieldProblem{"invalid injection \"" + text + "\" (expected " +
                     std::string(kInjectionSyntax) +
                     " with count >= 1, kinds: " + join_names(kinds) + ")"};
}

std::optional<std::string> InjectionText::outside_limits(const Value& value) {
  if (auto problem = outside_table(kSpecialValues, value.value)) return problem;
  if (value.value == SpecialValue::none) return std::nullopt;
  const std::string form = format_injection(value);
  if (value.count < 1 || parse_injection(form) != value) {
    return "\"" + form + "\" (an injection that does not read back from its own form)";
  }
  return std::nullopt;
}

}  // namespace attnfuzz
