// SPDX-License-Identifier: BSD-3-Clause
// The property engine: every property holds for the correct kernel on random cases, and the
// search finds every planted bug from a clean start, shrinks it, saves it, and the saved case
// replays the failure.
#include "fuzz/properties.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <sstream>

#include "case/case_codec.h"
#include "fuzz/case_generator.h"
#include "kernels/kernel_registry.h"
#include "matrix/case_file.h"
#include "support/printers.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

RunSettings cpu_settings(PlantedBug plant = PlantedBug::none) {
  RunSettings settings;
  settings.backend = Backend::cpu;
  settings.plant = plant;
  return settings;
}

class EveryProperty : public ::testing::TestWithParam<PropertyInfo> {};

TEST_P(EveryProperty, HoldsForTheCorrectKernelOnRandomCases) {
  // Any case, not only those the property's own generator draws: replayed cases reach every
  // property. Softmax scales far from the default included (they once broke key_shift, whose
  // shifted keys were rounded where the data were not small integers).
  const Property property = GetParam().property;
  const rc::Gen<AttentionCase> generator = small_case({.max_seq_len = 200,
                                                       .distributions = {},
                                                       .injections = true,
                                                       .other_scales = true,
                                                       .long_rows = false,
                                                       .other_head_dims = false});
  int judged = 0;
  for (int index = 0; index < 300; ++index) {
    const AttentionCase attention_case = generator(rc::Random(7919 * (index + 1)), 100).value();
    const PropertyCheck check = check_property(property, attention_case, cpu_settings());
    ASSERT_FALSE(check.failure.has_value())
        << describe_case(attention_case) << ": " << *check.failure;
    judged += check.judged ? 1 : 0;
  }
  // Held where judged, and judged often enough to mean it (not a pass by cases it skips).
  EXPECT_GE(judged, 100) << "of 300 cases";
}

TEST(PropertyCheck, ACaseTheKernelCannotRunIsNotJudgedByAnyProperty) {
  AttentionCase unsupported;
  unsupported.head_dim = 80;  // cpu_flash has no tile configuration for it
  for (const PropertyInfo& info : kProperties) {
    const PropertyCheck check = check_property(info.property, unsupported, cpu_settings());
    EXPECT_FALSE(check.judged) << info.name;
    EXPECT_FALSE(check.failure.has_value()) << info.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Properties, EveryProperty, ::testing::ValuesIn(kProperties),
                         [](const auto& info) { return std::string(info.param.name); });

// The saved regressions go to a folder of the test's own (TemporaryFolder).
class SearchFindsPlant : public TemporaryFolder,
                         public ::testing::WithParamInterface<PlantedBugInfo> {};

TEST_P(SearchFindsPlant, WithinItsBudgetAndTheSavedMinimalCaseReplaysTheFailure) {
  if (!cpu_flash_kernel().carries(GetParam().bug)) GTEST_SKIP() << "not a cpu_flash plant";
  if (GetParam().detector != PlantDetector::comparison) {
    GTEST_SKIP() << GetParam().name << " leaves the outputs as they are: not this test's to find";
  }
  PropertySettings settings;
  settings.run = cpu_settings(GetParam().bug);
  settings.budget_seconds = 60.0;
  settings.regressions_dir = path("regressions");
  settings.stop_at_first_failure = true;
  std::ostringstream log;
  const std::vector<PropertyOutcome> outcomes = run_properties(settings, log);

  const PropertyOutcome* found = nullptr;
  for (const PropertyOutcome& outcome : outcomes) {
    if (outcome.minimal_case) found = &outcome;
  }
  ASSERT_NE(found, nullptr) << "no property caught " << GetParam().name << "\n" << log.str();
  EXPECT_NE(log.str().find("replay: fuzz_attention --properties --property"), std::string::npos);
  ASSERT_TRUE(std::filesystem::exists(found->saved_to)) << found->saved_to;

  const std::vector<AttentionCase> saved = load_case_file(found->saved_to);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_TRUE(check_property(found->property, saved[0], settings.run).failure.has_value())
      << "the saved case no longer fails with the plant";
  EXPECT_TRUE(check_property(found->property, saved[0], cpu_settings()).held())
      << "the saved case fails without the plant: not the plant's fault";
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, SearchFindsPlant, ::testing::ValuesIn(kPlantedBugs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(PropertySearch, ShrinksADroppedKeyTileToOneQueryAndOneKey) {
  // Any seq_len_k below the tile is dropped whole, so the smallest failing case is 1 x 1.
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("attnfuzz_shrink_" + std::to_string(::getpid()));
  PropertySettings settings;
  settings.run = cpu_settings(PlantedBug::drop_last_key_tile);
  settings.properties = {Property::matches_oracle};
  settings.budget_seconds = 30.0;
  settings.regressions_dir = folder;
  std::ostringstream log;
  const std::vector<PropertyOutcome> outcomes = run_properties(settings, log);
  std::filesystem::remove_all(folder);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].minimal_case.has_value()) << log.str();
  const AttentionCase& minimal = *outcomes[0].minimal_case;
  EXPECT_EQ(minimal.batch, 1);
  EXPECT_EQ(minimal.heads, 1);
  EXPECT_EQ(minimal.seq_len_q, 1);
  EXPECT_EQ(minimal.seq_len_k, 1);
  EXPECT_EQ(minimal.head_dim, 64);
  EXPECT_EQ(minimal.data, DataDistribution::normal);
}

TEST(PropertySearch, ParsesEveryPropertyNameAndRejectsOthers) {
  for (const PropertyInfo& info : kProperties) EXPECT_EQ(parse_property(info.name), info.property);
  EXPECT_FALSE(parse_property("no_such_property").has_value());
}

}  // namespace
}  // namespace attnfuzz
