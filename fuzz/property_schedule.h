// SPDX-License-Identifier: BSD-3-Clause
// How the property search shares its wall-clock budget: by time, not by cases. The comparison with
// the oracle, the one property that sees any wrong output (each metamorphic property sees one
// class of bug, and needs two kernel runs a case), gets half of the time when other properties run
// beside it; the others share the rest equally. Each round of cases goes to the open property
// (one not yet failed, nor found unable to judge a case) that would end its next round least far
// into its share, so that neither a slow property nor a cheap one starves the others, and a closed
// one's share goes to those still open.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "fuzz/properties.h"

namespace attnfuzz {

// Each selected property's share of the budget, in order; they sum to 1.
std::vector<double> property_shares(std::span<const Property> selected);

// Where one property stands in the schedule.
struct PropertyTurn {
  double share = 0.0;    // of the budget
  double seconds = 0.0;  // spent on it so far
  int rounds = 0;        // rounds run so far
  bool open = true;      // not failed, nor found unable to judge a case
};

// The index of the open property that would end its next round least far into its share: the
// smallest (seconds + a round at its mean so far) / share, the first on a tie (virtual finish
// times, as fair queueing orders packets). Nothing when none is open. Ordering by the round's end
// rather than its start keeps a slow property's long round from running past a cheap one's share
// when the budget ends.
std::optional<std::size_t> next_property(std::span<const PropertyTurn> turns);

}  // namespace attnfuzz
