// SPDX-License-Identifier: BSD-3-Clause
// The kernels a run can use, set up before any mode runs: --threads, and --kernel-lib's plugin,
// tried first in a child process so that a plugin that crashes on loading costs that child, not
// the run; --list-kernels names them all with their plants.
#pragma once

#include <iosfwd>
#include <string>

#include "options/harness_options.h"

namespace attnfuzz {

// --threads and --kernel-lib: the set-up of this process that every mode shares (a plugin's kernel
// is listed by --list-kernels too). Returns the name of the plugin's kernel, or "". Throws
// HarnessError naming the plugin when it cannot be loaded.
std::string set_up_kernels(const HarnessOptions& options, const char* argv0);

// --list-kernels: each kernel, where it runs, what it supports and its planted bugs.
void list_kernels(std::ostream& out);

}  // namespace attnfuzz
