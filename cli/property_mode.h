// SPDX-License-Identifier: BSD-3-Clause
// fuzz_attention --properties: the property search (RapidCheck, fuzz/properties.h) within a time
// budget, or with --replay the check of saved cases; each check contained in a worker, as a
// matrix run's cases are, unless --in-process asks otherwise.
#pragma once

#include <iosfwd>

#include "options/harness_options.h"
#include "run/case_runner.h"

namespace attnfuzz {

// Runs the mode; returns the exit code (0 every property held, 1 one failed). Throws HarnessError
// on bad flags, report flags among them (the mode prints its outcome and writes no report).
int run_property_mode(const HarnessOptions& options, const RunSettings& settings, int argc,
                      char** argv);

// --list-properties: each property's name and the sentence it checks.
void list_properties(std::ostream& out);

}  // namespace attnfuzz
