// SPDX-License-Identifier: BSD-3-Clause
// The property search's schedule (fuzz/property_schedule.h): the oracle comparison gets half of the
// time beside the other properties, however cheap its cases and however slow theirs, and a failed
// property's share goes to those still open. Simulated rounds, each of a fixed cost.
#include "fuzz/property_schedule.h"

#include <gtest/gtest.h>

#include <numeric>

namespace attnfuzz {
namespace {

std::vector<Property> every_property() {
  std::vector<Property> all;
  for (const PropertyInfo& info : kProperties) all.push_back(info.property);
  return all;
}

// Runs the schedule until `budget` simulated seconds are spent; round_cost[i] is one round of
// property i; a property whose closes_after[i] rounds have run fails (closes).
std::vector<double> simulate(const std::vector<Property>& selected,
                             const std::vector<double>& round_cost, double budget,
                             std::vector<int> closes_after = {}) {
  const std::vector<double> shares = property_shares(selected);
  std::vector<PropertyTurn> turns;
  for (double share : shares) turns.push_back({share, 0.0, 0, true});
  std::vector<int> rounds(selected.size(), 0);
  double spent = 0.0;
  while (spent < budget) {
    const std::optional<std::size_t> next = next_property(turns);
    if (!next) break;
    turns[*next].seconds += round_cost[*next];
    ++turns[*next].rounds;
    spent += round_cost[*next];
    ++rounds[*next];
    if (!closes_after.empty() && rounds[*next] == closes_after[*next]) turns[*next].open = false;
  }
  std::vector<double> seconds;
  for (const PropertyTurn& turn : turns) seconds.push_back(turn.seconds);
  return seconds;
}

TEST(PropertySchedule, TheSharesSumToOneAndTheOracleComparisonHasHalf) {
  const std::vector<double> shares = property_shares(every_property());
  EXPECT_DOUBLE_EQ(std::accumulate(shares.begin(), shares.end(), 0.0), 1.0);
  EXPECT_DOUBLE_EQ(shares[static_cast<int>(Property::matches_oracle)], 0.5);
  EXPECT_EQ(property_shares(std::vector<Property>{Property::matches_oracle}),
            std::vector<double>{1.0});
  EXPECT_EQ(property_shares(std::vector<Property>{Property::key_shift, Property::determinism}),
            (std::vector<double>{0.5, 0.5}));
}

// Whatever a round of each costs, cheap beside slow or slow beside cheap, the oracle comparison
// gets at least half of a 60 s budget and the others about equal parts of the rest.
void expect_fair_shares(double oracle_round, double other_round) {
  const std::vector<Property> selected = every_property();
  std::vector<double> cost(selected.size(), other_round);
  cost[static_cast<int>(Property::matches_oracle)] = oracle_round;
  const std::vector<double> seconds = simulate(selected, cost, 60.0);
  const double total = std::accumulate(seconds.begin(), seconds.end(), 0.0);
  const double oracle = seconds[static_cast<int>(Property::matches_oracle)];
  EXPECT_GE(oracle, 0.49 * total);
  const double each_other = (total - oracle) / static_cast<double>(seconds.size() - 1);
  for (std::size_t index = 1; index < seconds.size(); ++index) {
    EXPECT_GT(seconds[index], 0.0) << kProperties[index].name << " never ran";
    EXPECT_NEAR(seconds[index], each_other, other_round + 1e-9) << kProperties[index].name;
  }
}

TEST(PropertySchedule, CheapOracleRoundsGetHalfTheTimeBesideSlowMetamorphicOnes) {
  expect_fair_shares(0.003, 1.5);
}

TEST(PropertySchedule, SlowOracleRoundsDoNotStarveCheapMetamorphicOnes) {
  expect_fair_shares(2.0, 0.01);
}

TEST(PropertySchedule, AFailedPropertysShareGoesToThoseStillOpen) {
  const std::vector<Property> selected = {Property::matches_oracle, Property::key_shift,
                                          Property::determinism};
  const std::vector<double> seconds = simulate(selected, {1.0, 1.0, 1.0}, 100.0, {2, 1000, 1000});
  EXPECT_DOUBLE_EQ(seconds[0], 2.0);
  EXPECT_NEAR(seconds[1], 49.0, 1.0);
  EXPECT_NEAR(seconds[2], 49.0, 1.0);
}

TEST(PropertySchedule, NothingRunsWhenEveryPropertyHasFailed) {
  const std::vector<PropertyTurn> turns = {{0.5, 1.0, 1, false}, {0.5, 2.0, 1, false}};
  EXPECT_FALSE(next_property(turns).has_value());
}

}  // namespace
}  // namespace attnfuzz
