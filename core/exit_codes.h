// SPDX-License-Identifier: BSD-3-Clause
// The harness's exit codes: the contract with CI scripts.
#pragma once

namespace attnfuzz {

enum ExitCode : int {
  kExitPass = 0,          // every case that ran passed, and at least one ran
  kExitFail = 1,          // at least one case failed
  kExitSkip = 2,          // nothing could run (no GPU, no kernel supports the cases)
  kExitHarnessError = 3,  // the harness's own error: bad config, unreadable file, bad flag
};

}  // namespace attnfuzz
