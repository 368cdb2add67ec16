// SPDX-License-Identifier: BSD-3-Clause
// The fuzz_attention command that reruns a failing case, as one shell command line: what the
// matrix runner, the property search and the libFuzzer target print after a failure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "run/case_runner.h"

namespace attnfuzz {

// What a replay names. Each word is rendered only when set (or, for plant, backend and oracle,
// when not fuzz_attention's default), in this order:
//   fuzz_attention [--properties --property P] [--replay F] [--configs F] [--kernel-lib L |
//                  --kernel-py F:FN [--python P] [--py-framework F]]
//                  [--case ID] [--kernel K] [--plant B] [--backend B] [--oracle O]
//                  [--accumulation A] [--probabilities P] [--dequantize-to D]
//                  [--allow-nondeterminism]
//                  [--shape-independent-arithmetic] [--known-failures F]
//                  [--bench [--baseline F | --against-lib L | --against-kernel K]
//                  [--against-plant B]]
struct ReplayCommand {
  std::string property;    // the property search: --properties --property NAME
  std::string replay;      // a case file (or folder) holding the case: --replay FILE
  std::string configs;     // else the matrix file holding it: --configs FILE
  std::string kernel_lib;  // the plugin the kernel comes from: --kernel-lib PLUGIN
  std::vector<std::pair<std::string, std::string>> kernel_py_flags;  // or --kernel-py F:FN ...
  std::optional<std::string> case_id;      // one case of the source: --case ID (nullopt: all of it)
  std::string kernel;                      // --kernel NAME
  std::string plant = "none";              // --plant NAME, unless none
  Backend backend = Backend::auto_select;  // --backend NAME, unless auto
  OracleChoice oracle = OracleChoice::auto_select;  // --oracle NAME, unless auto
  std::string accumulation = "fp32";                // --accumulation NAME, unless fp32
  std::string probabilities = "output";             // --probabilities NAME, unless output
  std::string dequantize_to = "none";               // --dequantize-to NAME, unless none
  bool allow_nondeterminism = false;                // --allow-nondeterminism
  bool host_verification = false;                   // --host-verification
  bool shape_independent_arithmetic = false;        // --shape-independent-arithmetic
  std::string known_failures;  // --known-failures FILE: a listed case that passed fails by it
  bool bench = false;          // --bench: a case that failed the gate
  std::string baseline;        // --baseline FILE, with bench
  // Side by side, with bench: --against-lib, --against-kernel and --against-plant as the run had
  // them, in that order.
  std::vector<std::pair<std::string, std::string>> against_flags = {};
};

// The parts of a replay that come from the run's settings: kernel (as the settings name it),
// kernel_lib, plant, backend, oracle and what the kernel declares (accumulation, nondeterminism,
// shape-independent arithmetic).
ReplayCommand replay_command_for(const RunSettings& settings);

// The command line, each word quoted for a POSIX shell where it needs it (shell_word).
std::string replay_command_line(const ReplayCommand& command);

// `text` as one shell word: unchanged when it is made of [A-Za-z0-9_./:=@%+-] only, else in single
// quotes, each ' as '\''.
std::string shell_word(std::string_view text);

}  // namespace attnfuzz
