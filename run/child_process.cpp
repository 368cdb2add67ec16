// SPDX-License-Identifier: BSD-3-Clause
#include "run/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/clock.h"
#include "core/file_io.h"
#include "core/harness_error.h"

extern char** environ;

namespace attnfuzz {
namespace {

constexpr std::size_t kKeptOutputBytes = 64 << 10;

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    return "was killed by signal " + std::to_string(signal_number) + " (" +
           strsignal(signal_number) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (wait status " + std::to_string(status) + ")";
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#else
  (void)pid;
#endif
  return -1;
}

bool process_has_ended(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

void kill_process_group(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

ChildRun run_child(const std::vector<std::string>& argv, double timeout_seconds) {
  std::vector<std::string> arguments = argv;
  std::vector<char*> pointers;
  for (std::string& argument : arguments) pointers.push_back(argument.data());
  pointers.push_back(nullptr);
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) {
    throw HarnessError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  const int null_input = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = fork();
  if (pid < 0) {
    close(ends[0]);
    close(ends[1]);
    if (null_input >= 0) close(null_input);
    throw HarnessError(std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {  // only async-signal-safe calls from here to exec
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setpgid(0, 0);
    if (null_input >= 0) dup2(null_input, STDIN_FILENO);
    dup2(ends[1], STDOUT_FILENO);
    dup2(ends[1], STDERR_FILENO);
    execve(pointers[0], pointers.data(), environ);
    _exit(127);
  }
  close(ends[1]);
  if (null_input >= 0) close(null_input);
  fcntl(ends[0], F_SETFL, O_NONBLOCK);
  const int pidfd = open_pidfd(pid);

  ChildRun run;
  const auto started = std::chrono::steady_clock::now();
  bool ended = false;
  int status = 0;
  char buffer[4096];
  while (!ended) {
    const double left = timeout_seconds - seconds_since(started);
    if (left <= 0) {
      run.timed_out = true;
      break;
    }
    pollfd watched[2] = {{ends[0], POLLIN, 0}, {pidfd, POLLIN, 0}};
    poll(watched, pidfd >= 0 ? 2 : 1, static_cast<int>(std::min(left * 1000 + 1, 100.0)));
    for (ssize_t count; (count = read_some(ends[0], buffer, sizeof buffer)) > 0;) {
      run.output.append(buffer, static_cast<std::size_t>(count));
      if (run.output.size() > 2 * kKeptOutputBytes) {
        run.output.erase(0, run.output.size() - kKeptOutputBytes);
      }
    }
    ended = process_has_ended(pid);
  }
  kill_process_group(pid);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (ssize_t count; (count = read_some(ends[0], buffer, sizeof buffer)) > 0;) {
    run.output.append(buffer, static_cast<std::size_t>(count));
  }
  if (run.output.size() > kKeptOutputBytes) {
    run.output.erase(0, run.output.size() - kKeptOutputBytes);
  }
  close(ends[0]);
  if (pidfd >= 0) close(pidfd);
  run.wait_status = status;
  return run;
}

}  // namespace attnfuzz
