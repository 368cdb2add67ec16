// SPDX-License-Identifier: BSD-3-Clause
#include "core/number_text.h"

#include <cstddef>
#include <cstdio>

namespace attnfuzz {
namespace {

// What `print(buffer, size)`, an snprintf, writes: all of it, however long it comes out.
template <typename Print>
std::string printed(Print print) {
  char buffer[64];
  const int length = print(buffer, sizeof buffer);
  if (length < 0) return {};
  if (static_cast<std::size_t>(length) < sizeof buffer) {
    return std::string(buffer, static_cast<std::size_t>(length));
  }
  std::string text(static_cast<std::size_t>(length), '\0');
  print(text.data(), text.size() + 1);
  return text;
}

}  // namespace

std::string significant_digits(double value, int digits) {
  return printed([&](char* text, std::size_t size) {
    return std::snprintf(text, size, "%.*g", digits, value);
  });
}

std::string fixed_decimals(double value, int decimals) {
  return printed([&](char* text, std::size_t size) {
    return std::snprintf(text, size, "%.*f", decimals, value);
  });
}

std::string mebibytes_text(std::int64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

std::string gibibytes_text(double bytes) {
  return fixed_decimals(bytes / (1024.0 * 1024.0 * 1024.0), 1) + " GiB";
}

}  // namespace attnfuzz
