// SPDX-License-Identifier: BSD-3-Clause
// The kernels a run can use, set up before any mode runs: --threads, and --kernel-lib's plugin,
// tried first in a child process so that a plugin that crashes on loading costs that child, not
// the run; --list-kernels names them all with their plants.
#pragma once

#include <iosfwd>
#include <string>

#include "options/harness_options.h"

namespace attnfuzz {

// The plugins' kernels as registered: --kernel-lib's (or --kernel-py's bridge) and --against-lib's;
// "" for one not given.
struct PluginKernels {
  std::string kernel;
  std::string reference;
};

// --threads, --kernel-lib and --against-lib: the set-up of this process that every mode shares (a
// plugin's kernel is listed by --list-kernels too). Throws HarnessError naming the plugin when one
// cannot be loaded.
PluginKernels set_up_kernels(const HarnessOptions& options, const char* argv0);

// --list-kernels: each kernel, where it runs, what it supports and its planted bugs.
void list_kernels(std::ostream& out);

}  // namespace attnfuzz
