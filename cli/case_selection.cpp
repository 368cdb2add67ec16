// SPDX-License-Identifier: BSD-3-Clause
#include "cli/case_selection.h"

#include <algorithm>
#include <iostream>
#include <optional>
#include <system_error>

#include "case/case_codec.h"
#include "case/work_cap.h"
#include "core/exit_codes.h"
#include "core/harness_error.h"
#include "core/shell_pattern.h"
#include "core/text.h"
#include "core/write_file_atomically.h"
#include "matrix/case_file.h"
#include "run/replay_command.h"
#include "run/shard.h"

namespace attnfuzz {

std::vector<AttentionCase> select_cases(const CaseMatrix& matrix,
                                        const std::vector<std::string>& patterns) {
  if (patterns.empty()) return matrix.cases;
  std::vector<bool> matched(patterns.size(), false);
  std::vector<AttentionCase> selected;
  for (const AttentionCase& attention_case : matrix.cases) {
    bool selects = false;
    for (std::size_t index = 0; index < patterns.size(); ++index) {
      if (matches_shell_pattern(patterns[index], attention_case.id))
        selects = matched[index] = true;
    }
    if (selects) selected.push_back(attention_case);
  }
  for (std::size_t index = 0; index < patterns.size(); ++index) {
    if (!matched[index]) {
      throw HarnessError("--case: no case id matches '" + patterns[index] + "' in " +
                         matrix.source + " (--list-cases lists them)");
    }
  }
  return selected;
}

RunPlan replay_plan(const std::filesystem::path& path) {
  RunPlan plan;
  plan.matrix.name = "replay";
  plan.matrix.source = path.string();
  std::vector<std::filesystem::path> files;
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  for (const std::filesystem::path& file : files) {
    for (AttentionCase& attention_case : load_case_file(file)) {
      plan.file_of_case[attention_case.id] = file;
      plan.matrix.cases.push_back(std::move(attention_case));
    }
  }
  if (plan.matrix.cases.empty()) throw HarnessError("--replay: no case files in " + path.string());
  return plan;
}

RunPlan plan_of(const HarnessOptions& options) {
  if (!options.replay.empty()) {
    if (!options.configs.empty()) throw HarnessError("--replay and --configs exclude each other");
    return replay_plan(options.replay);
  }
  RunPlan plan;
  const std::string_view built_in = options.bench ? kDefaultBenchMatrix : kDefaultMatrix;
  plan.matrix = options.configs.empty() ? load_built_in_matrix(std::string(built_in))
                                        : load_matrix_file(options.configs);
  return plan;
}

std::vector<AttentionCase> cases_to_run(const HarnessOptions& options, const RunPlan& plan) {
  std::vector<AttentionCase> cases = select_cases(plan.matrix, options.case_ids);
  if (!options.shard.empty()) cases = cases_of_shard(cases, parse_shard(options.shard));
  return cases;
}

std::string replay_command(const HarnessOptions& options, const RunSettings& settings,
                           const RunPlan& plan, const CaseResult& result) {
  ReplayCommand command = replay_command_for(settings);
  const std::string& id = result.attention_case.id;
  if (const auto file = plan.file_of_case.find(id); file != plan.file_of_case.end()) {
    command.replay = file->second.string();
  } else {
    command.configs = options.configs;  // empty: the built-in matrix, fuzz_attention's default
  }
  command.case_id = id;
  command.kernel = result.kernel_name;
  command.plant = result.plant;
  command.known_failures = options.known_failures;
  command.bench = options.bench;
  command.baseline = options.baseline;
  for (const auto& [flag, value] : {std::pair{"--against-lib", &options.against_lib},
                                    std::pair{"--against-kernel", &options.against_kernel},
                                    std::pair{"--against-plant", &options.against_plant}}) {
    if (!value->empty()) command.against_flags.emplace_back(flag, *value);
  }
  return replay_command_line(command);
}

int save_cases(const std::vector<AttentionCase>& cases, const std::filesystem::path& folder) {
  std::error_code error;
  if (std::filesystem::exists(folder, error) && !std::filesystem::is_directory(folder, error)) {
    throw HarnessError("--save-cases: " + folder.string() + " exists and is not a folder");
  }
  std::filesystem::create_directories(folder, error);
  if (error) {
    throw HarnessError("--save-cases: cannot create the folder " + folder.string() + ": " +
                       error.message());
  }
  int saved = 0;
  for (const AttentionCase& attention_case : cases) {
    const AttentionCase fitted = fit_to_work_cap(attention_case);
    std::string why;
    const std::optional<std::vector<std::uint8_t>> bytes = encode_case(fitted, &why);
    if (!bytes) {
      std::cout << "skipped " << attention_case.id << ": " << why << "\n";
      continue;
    }
    if (!(fitted == attention_case)) {
      std::cout << "fitted " << attention_case.id
                << " under the work cap: " << describe_case(fitted) << "\n";
    }
    std::string name = attention_case.id;
    std::replace(name.begin(), name.end(), '/', '_');
    write_file_atomically(folder / name, std::string(bytes->begin(), bytes->end()));
    ++saved;
  }
  std::cout << "saved " << saved << " of " << cases.size() << " cases to " << folder.string()
            << "\n";
  if (saved == 0 && !cases.empty()) {
    throw HarnessError("--save-cases: none of the " + std::to_string(cases.size()) +
                       " selected cases fits the binary form (each is named above with why): " +
                       "nothing was saved to " + folder.string());
  }
  return kExitPass;
}

int list_cases(const HarnessOptions& options) {
  const RunPlan plan = plan_of(options);
  for (const AttentionCase& attention_case : cases_to_run(options, plan)) {
    std::cout << escape_control_characters(attention_case.id) << "  "
              << describe_case(attention_case) << "\n";
  }
  return kExitPass;
}

int describe(const std::filesystem::path& path) {
  std::cout << cases_to_matrix_text(load_case_file(path), path.filename().string());
  return kExitPass;
}

}  // namespace attnfuzz
