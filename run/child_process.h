// SPDX-License-Identifier: BSD-3-Clause
// Child processes the harness starts and watches: how their endings read in messages, how their
// deaths are noticed (a pidfd, not a pipe: a process the child forked may keep its pipes open
// long after the child died), and one run of a short-lived child with its output and a time limit.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace attnfuzz {

// How a waited-for process ended, in words: "was killed by signal 11 (Segmentation fault)",
// "exited with status 3".
std::string describe_wait_status(int status);

// A descriptor that polls readable once `pid` has ended (pidfd_open, Linux 5.3 and later), or -1
// where the kernel has none: the caller then checks with waitpid(WNOHANG) at intervals.
int open_pidfd(pid_t pid);

// Whether child `pid` has ended, without reaping it (waitid with WNOWAIT): its id stays reserved,
// so that its process group can still be killed safely before it is reaped.
bool process_has_ended(pid_t pid);

// SIGKILL to the process group `pid` leads and to `pid` itself: the process and whatever it started
// (that stayed in its group). Call it before reaping `pid`, while its id cannot be reused.
void kill_process_group(pid_t pid);

struct ChildRun {
  int wait_status = 0;     // as waitpid gives it
  bool timed_out = false;  // killed after `timeout_seconds`
  std::string output;      // its stdout and stderr, the last 64 KiB
};

// Runs `argv` (argv[0] a path) with stdin from /dev/null, in a process group of its own that is
// killed when it ends, times out, or the harness dies; waits for it. Throws HarnessError when it
// cannot be started.
ChildRun run_child(const std::vector<std::string>& argv, double timeout_seconds);

}  // namespace attnfuzz
