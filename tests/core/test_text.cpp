// SPDX-License-Identifier: BSD-3-Clause
// Text helpers: "did you mean" names the nearest candidate only when it is close, and escaping
// keeps every control character of foreign text on one visible line.
#include "core/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace attnfuzz {
namespace {

const std::vector<std::string> kKeys = {"batch",     "heads",       "kv_heads",    "seq_len_q",
                                        "seq_len_k", "window_left", "window_right"};

TEST(ClosestName, NamesTheNearestCandidateWithinAThirdOfTheTypedLength) {
  EXPECT_EQ(closest_name("windw_left", kKeys), "window_left");  // a deletion
  EXPECT_EQ(closest_name("seq_len_kk", kKeys), "seq_len_k");    // an insertion
  EXPECT_EQ(closest_name("haeds", kKeys), "heads");             // a transposition
  EXPECT_EQ(closest_name("window_rigth", kKeys), "window_right");
}

TEST(ClosestName, NamesNothingWhenNothingIsClose) {
  EXPECT_EQ(closest_name("sequence", kKeys), std::nullopt);
  EXPECT_EQ(closest_name("", kKeys), std::nullopt);
  EXPECT_EQ(closest_name("batch", {}), std::nullopt);
}

TEST(EscapeControlCharacters, KeepsForeignTextOnOneVisibleLine) {
  EXPECT_EQ(escape_control_characters("a\nFAIL x\r\t\033[2J\a"),
            "a\\nFAIL x\\r\\t\\u001b[2J\\u0007");
  EXPECT_EQ(escape_control_characters("naïve ✓"), "naïve ✓");
}

}  // namespace
}  // namespace attnfuzz
