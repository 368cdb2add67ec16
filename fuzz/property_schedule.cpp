// SPDX-License-Identifier: BSD-3-Clause
#include "fuzz/property_schedule.h"

namespace attnfuzz {

std::vector<double> property_shares(std::span<const Property> selected) {
  std::size_t others = 0;
  bool oracle = false;
  for (const Property property : selected) {
    if (property == Property::matches_oracle) {
      oracle = true;
    } else {
      ++others;
    }
  }
  const double oracle_share = !oracle ? 0.0 : others == 0 ? 1.0 : 0.5;
  std::vector<double> shares;
  for (const Property property : selected) {
    shares.push_back(property == Property::matches_oracle
                         ? oracle_share
                         : (1.0 - oracle_share) / static_cast<double>(others));
  }
  return shares;
}

std::optional<std::size_t> next_property(std::span<const PropertyTurn> turns) {
  std::optional<std::size_t> next;
  double lowest = 0.0;
  for (std::size_t index = 0; index < turns.size(); ++index) {
    if (!turns[index].open || !(turns[index].share > 0.0)) continue;
    const PropertyTurn& turn = turns[index];
    const double mean_round = turn.rounds > 0 ? turn.seconds / turn.rounds : 0.0;
    const double behind = (turn.seconds + mean_round) / turn.share;
    if (!next || behind < lowest) {
      next = index;
      lowest = behind;
    }
  }
  return next;
}

}  // namespace attnfuzz
