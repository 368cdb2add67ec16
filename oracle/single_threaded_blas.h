// SPDX-License-Identifier: BSD-3-Clause
// The CPU references call BLAS from inside their own parallel items, one item per core at a time.
// OpenBLAS's threads inside those calls would only oversubscribe the cores, and after each call
// they spin for a while waiting for more work: both references make BLAS single-threaded first.
#pragma once

namespace attnfuzz {

// Sets OpenBLAS to one thread for the whole process (cheap; called at the top of each reference),
// where a caller such as a benchmark may have given it more.
void use_single_threaded_blas();

}  // namespace attnfuzz
