// SPDX-License-Identifier: BSD-3-Clause
// Kernels from shared libraries that implement the C plugin ABI
// (include/attnfuzz/attnfuzz_plugin.h): a kernel author's own build, tested without rebuilding
// attnfuzz. The loaded kernel behaves like a built-in one: it declares its site and what it
// supports, and the harness owns all memory.
#pragma once

#include <filesystem>
#include <string_view>

#include "attnfuzz/attnfuzz_plugin.h"
#include "kernels/attention_kernel.h"

namespace attnfuzz {

// Loads the plugin at `path`, checks its ABI version and symbols, and adds it to the registry
// (kernel_registry.h) under the name it reports, with `suffix_when_taken` appended when the
// registry has that name already (another build of the same plugin, loaded as the reference of a
// side-by-side benchmark). Returns that kernel. Throws std::runtime_error naming the file and the
// problem: not loadable, a missing symbol (or only some of a version's), another ABI version, an
// invalid name, or a name the registry already has.
const AttentionKernel& load_plugin_kernel(const std::filesystem::path& path,
                                          std::string_view suffix_when_taken = {});

// The ABI's problem from ours: the same fields and strides, spelled for C (version 1: the dense
// fields; version 2: the variants too; version 3: the backward's, with whether it must be
// deterministic).
attnfuzz_problem abi_problem_of(const AttentionProblem& problem);
attnfuzz_problem_v2 abi_problem_v2_of(const AttentionProblem& problem);
attnfuzz_backward_problem abi_backward_problem_of(const AttentionProblem& problem,
                                                  bool deterministic);
// Version 4: each input's storage dtype and the descale form.
attnfuzz_problem_v4 abi_problem_v4_of(const AttentionProblem& problem);

}  // namespace attnfuzz
