// The case generators of the property engine (fuzz/case_generator.h), under the name the tests
// use.
#pragma once

#include "fuzz/case_generator.h"

namespace attnfuzz::testing {

using attnfuzz::CaseLimits;
using attnfuzz::sequence_length;
using attnfuzz::small_case;
using attnfuzz::special_value_injection;

}  // namespace attnfuzz::testing
