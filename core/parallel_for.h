// SPDX-License-Identifier: BSD-3-Clause
// Splits independent work items over a few threads. Kernels' CPU twins and the oracle both use it;
// each item must write only its own outputs, so the result never depends on the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace attnfuzz {

// Threads to use by default: the hardware's count (at least 1), or ATTNFUZZ_THREADS when set.
int default_thread_count();
// Overrides the default for the whole process (fuzz_attention --threads); 0 restores it.
void set_default_thread_count(int threads);

// Calls body(item) for every item in [0, item_count), spread over `threads` threads (0: default).
// Items are handed out dynamically, so uneven items (causal tiles) balance. The first exception
// thrown by a body is rethrown here after all threads have stopped.
void parallel_for(std::int64_t item_count, const std::function<void(std::int64_t)>& body,
                  int threads = 0);

}  // namespace attnfuzz
