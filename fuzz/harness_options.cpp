#include "fuzz/harness_options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "fuzz/harness_error.h"

namespace attnfuzz {

HarnessOptions parse_harness_options(int argc, char** argv) {
  HarnessOptions options;
  CLI::App app{
      "fuzz_attention: checks attention kernels against a float64 oracle.\n"
      "Exit codes: 0 pass, 1 a case failed, 2 nothing could run, 3 harness error.",
      "fuzz_attention"};
#define ATTNFUZZ_FLAG_OPTION(member, flag, help) app.add_option(flag, options.member, help)
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
#undef ATTNFUZZ_FLAG_OPTION
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    std::exit(0);
  } catch (const CLI::ParseError& error) {
    throw HarnessError(std::string("command line: ") + error.what() + " (see --help)");
  }
  return options;
}

}  // namespace attnfuzz
