// SPDX-License-Identifier: BSD-3-Clause
// Run settings for the built-in CPU kernel (cpu_flash), with a plant or none.
#pragma once

#include "run/case_runner.h"

namespace attnfuzz {

inline RunSettings cpu_settings(PlantedBug plant = PlantedBug::none) {
  RunSettings settings;
  settings.backend = Backend::cpu;
  settings.plant = plant;
  return settings;
}

}  // namespace attnfuzz
