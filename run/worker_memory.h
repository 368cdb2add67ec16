// SPDX-License-Identifier: BSD-3-Clause
// How much memory a worker process may use, and how the supervisor measures it.
//
// The supervisor watches each busy worker's resident memory (as libFuzzer's -rss_limit_mb does)
// and kills a worker that goes past its limit: the case is skipped as out of memory. Watching
// resident memory, rather than capping the address space with setrlimit, works the same for C and
// C++ kernels, under CUDA (whose address-space reservations are huge) and under AddressSanitizer
// (whose shadow memory is), and it tells "ran out of memory" from a crash with certainty. What
// counts is the whole process group of the worker: the processes a kernel forks or starts are
// its memory too. Pages a forked child still shares with its parent count in both (resident
// memory is per process): the sum errs towards stopping early, never towards missing a hog.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace attnfuzz {

// Physical memory × 3/4, shared by `workers` processes: the default limit of one worker.
std::int64_t default_worker_memory_limit(int workers);

// The resident memory of process `pid` in bytes, or -1 when it cannot be read (it has ended).
std::int64_t resident_bytes(pid_t pid);

// The resident memory of every process in process group `group` but `excluded`, summed (0 when
// none is left).
std::int64_t group_resident_bytes(pid_t group, pid_t excluded = -1);

}  // namespace attnfuzz
