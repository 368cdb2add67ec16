// SPDX-License-Identifier: BSD-3-Clause
#include "run/replay_command.h"

#include "kernels/planted_bug.h"

namespace attnfuzz {

ReplayCommand replay_command_for(const RunSettings& settings) {
  ReplayCommand command;
  command.kernel_lib = settings.kernel_lib;
  command.kernel_py_flags = settings.kernel_py_flags;
  command.kernel = settings.kernel;
  command.plant = std::string(planted_bug_name(settings.plant));
  command.backend = settings.backend;
  command.oracle = settings.oracle;
  command.accumulation = accumulation_name(settings.numerics);
  command.probabilities = probabilities_name(settings.numerics);
  command.dequantize_to = dequantization_name(settings.numerics);
  command.allow_nondeterminism = settings.allow_nondeterminism;
  command.host_verification = settings.host_verification;
  command.shape_independent_arithmetic = settings.shape_independent_arithmetic;
  return command;
}

std::string replay_command_line(const ReplayCommand& command) {
  std::string line = "fuzz_attention";
  const auto add = [&line](std::string_view flag, std::string_view value) {
    line += ' ';
    line += flag;
    line += ' ';
    line += shell_word(value);
  };
  if (!command.property.empty()) {
    line += " --properties";
    add("--property", command.property);
  }
  if (!command.replay.empty()) add("--replay", command.replay);
  if (!command.configs.empty()) add("--configs", command.configs);
  if (!command.kernel_lib.empty()) add("--kernel-lib", command.kernel_lib);
  for (const auto& [flag, value] : command.kernel_py_flags) add(flag, value);
  if (command.case_id) add("--case", *command.case_id);
  if (!command.kernel.empty()) add("--kernel", command.kernel);
  if (!command.plant.empty() && command.plant != "none") add("--plant", command.plant);
  if (command.backend != Backend::auto_select) add("--backend", backend_name(command.backend));
  if (command.oracle != OracleChoice::auto_select) {
    add("--oracle", oracle_choice_name(command.oracle));
  }
  if (command.accumulation != "fp32") add("--accumulation", command.accumulation);
  if (command.probabilities != "output") add("--probabilities", command.probabilities);
  if (command.dequantize_to != "none") add("--dequantize-to", command.dequantize_to);
  if (command.allow_nondeterminism) line += " --allow-nondeterminism";
  if (command.host_verification) line += " --host-verification";
  if (command.shape_independent_arithmetic) line += " --shape-independent-arithmetic";
  if (!command.known_failures.empty()) add("--known-failures", command.known_failures);
  if (command.bench) line += " --bench";
  if (command.bench && !command.baseline.empty()) add("--baseline", command.baseline);
  if (command.bench) {
    for (const auto& [flag, value] : command.against_flags) add(flag, value);
  }
  return line;
}

std::string shell_word(std::string_view text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_./:=@%+-") == std::string_view::npos;
  if (plain) return std::string(text);
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace attnfuzz
