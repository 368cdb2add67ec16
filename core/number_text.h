// SPDX-License-Identifier: BSD-3-Clause
// Numbers, durations and sizes as the harness prints them: printf's conversions, named, in one
// place, so that every report and message writes the same value the same way (the report tests
// compare text byte for byte).
#pragma once

#include <cstdint>
#include <string>

namespace attnfuzz {

// printf's "%.<digits>g": `digits` significant digits, trailing zeros dropped, an exponent for
// very large or small values ("0.0123", "1.5e+07"). Plain "%g" is digits = 6.
std::string significant_digits(double value, int digits);

// printf's "%.<decimals>f": a fixed number of decimals, never an exponent ("3.142").
std::string fixed_decimals(double value, int decimals);

// Whole mebibytes, rounded down: "768 MiB".
std::string mebibytes_text(std::int64_t bytes);

// Gibibytes with one decimal: "2.0 GiB".
std::string gibibytes_text(double bytes);

}  // namespace attnfuzz
