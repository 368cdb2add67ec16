// SPDX-License-Identifier: BSD-3-Clause
#include "options/harness_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>

#include "core/harness_error.h"
#include "core/text.h"
#include "options/run_settings_options.h"

namespace attnfuzz {
namespace {

// "; did you mean --bench?" for the first unexpected argument of CLI11's message when a visible
// flag lies within a third of its length in edits; else "".
std::string closest_flag_hint(const CLI::App& app, std::string_view message) {
  const std::size_t dash = message.find("--");
  if (dash == std::string_view::npos) return "";
  std::string_view typed = message.substr(dash);
  typed = typed.substr(0, std::min(typed.find_first_of(" ="), typed.size()));
  std::vector<std::string> flags;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // hidden
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
  }
  const std::optional<std::string> best = closest_name(typed, flags);
  return best ? "; did you mean " + *best + "?" : "";
}

}  // namespace

HarnessOptions parse_harness_options(int argc, char** argv) {
  HarnessOptions options;
  CLI::App app{
      "fuzz_attention: checks attention kernels against a float64 oracle.\n"
      "Exit codes: 0 pass, 1 a case failed, 2 nothing could run, 3 harness error.",
      "fuzz_attention"};
  // --help shows each option's default beside it ("[2]", "[auto]").
  app.option_defaults()->always_capture_default();
#define ATTNFUZZ_FLAG_OPTION(member, flag, help) app.add_option(flag, options.member, help)
#define ATTNFUZZ_FLAG_SHARED_OPTION(member, flag, help) ATTNFUZZ_FLAG_OPTION(member, flag, help)
#define ATTNFUZZ_FLAG_FLAG(member, flag, help) app.add_flag(flag, options.member, help)
#define ATTNFUZZ_FLAG_HIDDEN_OPTION(member, flag, help) \
  app.add_option(flag, options.member, help)->group("")
#define ATTNFUZZ_FLAG_HIDDEN_FLAG(member, flag, help) \
  app.add_flag(flag, options.member, help)->group("")
#define ATTNFUZZ_FLAG_ADD(kind, type, member, flag, default_value, help) \
  ATTNFUZZ_FLAG_##kind(member, flag, help);
  ATTNFUZZ_FLAGS(ATTNFUZZ_FLAG_ADD)
#undef ATTNFUZZ_FLAG_ADD
#undef ATTNFUZZ_FLAG_HIDDEN_FLAG
#undef ATTNFUZZ_FLAG_HIDDEN_OPTION
#undef ATTNFUZZ_FLAG_FLAG
#undef ATTNFUZZ_FLAG_SHARED_OPTION
#undef ATTNFUZZ_FLAG_OPTION
  // The values of a flag with a few fixed ones in place of its type ("{auto,cpu,cuda}=auto").
  for (const FlagChoices& choices : flag_choices()) {
    app.get_option(choices.flag)->type_name(choices.choices);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    std::exit(0);
  } catch (const CLI::ExtrasError& error) {
    throw HarnessError(std::string("command line: ") + error.what() +
                       closest_flag_hint(app, error.what()) + " (see --help)");
  } catch (const CLI::ParseError& error) {
    throw HarnessError(std::string("command line: ") + error.what() + " (see --help)");
  }
  return options;
}

std::string flag_environment_name(std::string_view flag) {
  while (!flag.empty() && flag.front() == '-') flag.remove_prefix(1);
  std::string name = "ATTNFUZZ_";
  for (char c : flag) {
    name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return name;
}

HarnessOptions parse_shared_options(HarnessOptions defaults, int argc, char** argv) {
  HarnessOptions options = std::move(defaults);
  CLI::App app{"", "fuzz_attention_libfuzzer"};
  app.set_help_flag();  // no --help of its own: libFuzzer's -help=1 is the target's help
  // The SHARED_OPTION rows, added as fuzz_attention adds them, each with its environment variable
  // and the last of repeated flags winning. The other rows are fuzz_attention's alone.
#define ATTNFUZZ_READ_SHARED_OPTION(member, flag, help) \
  app.add_option(flag, options.member, help)            \
      ->envname(flag_environment_name(flag))            \
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
#define ATTNFUZZ_READ_OPTION(member, flag, help)
#define ATTNFUZZ_READ_FLAG(member, flag, help)
#define ATTNFUZZ_READ_HIDDEN_OPTION(member, flag, help)
#define ATTNFUZZ_READ_HIDDEN_FLAG(member, flag, help)
#define ATTNFUZZ_READ_ROW(kind, type, member, flag, default_value, help) \
  ATTNFUZZ_READ_##kind(member, flag, help)
  ATTNFUZZ_FLAGS(ATTNFUZZ_READ_ROW)
#undef ATTNFUZZ_READ_ROW
#undef ATTNFUZZ_READ_HIDDEN_FLAG
#undef ATTNFUZZ_READ_HIDDEN_OPTION
#undef ATTNFUZZ_READ_FLAG
#undef ATTNFUZZ_READ_OPTION
#undef ATTNFUZZ_READ_SHARED_OPTION

  // Only `--flag=value` arguments of those rows reach CLI11, which takes them last first. An empty
  // value goes as a word of its own: after `--flag=` CLI11 would take the next argument instead.
  std::vector<std::string> arguments;
  for (int index = argc - 1; index >= 1; --index) {
    const std::string argument = argv[index];
    const std::size_t equals = argument.find('=');
    if (argument.rfind("--", 0) != 0 || equals == std::string::npos) continue;
    const std::string flag = argument.substr(0, equals);
    if (app.get_option_no_throw(flag) == nullptr) continue;
    if (equals + 1 == argument.size()) {
      arguments.insert(arguments.end(), {std::string(), flag});
    } else {
      arguments.push_back(argument);
    }
  }
  try {
    app.parse(arguments);
  } catch (const CLI::ParseError& error) {
    throw HarnessError(std::string("command line or environment: ") + error.what());
  }
  return options;
}

}  // namespace attnfuzz
