// SPDX-License-Identifier: BSD-3-Clause
// Workers are started with fork + exec of fuzz_attention itself (never a bare fork: the supervisor
// may hold a CUDA context, which a forked child cannot use), each in a process group of its own.
// The group is killed whenever its worker ends (the watchdog's SIGKILL, a crash, a normal exit):
// whatever the kernel started goes with it. A worker dies with its supervisor (PR_SET_PDEATHSIG);
// so that the processes its kernel started do too, each group holds a keeper, a forked child of
// the supervisor that waits on the supervisor's lifeline pipe and kills its group when that pipe
// closes, which it does however the supervisor ends, kill -9 included. A worker's death is seen
// on its pidfd, not on its pipes, which a process it forked may hold open.
#include "run/worker_pool.h"

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
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/fenced_buffer.h"
#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/json_parse.h"
#include "core/json_text.h"
#include "core/number_text.h"
#include "core/text.h"
#include "run/case_worker.h"
#include "run/child_process.h"
#include "run/worker_memory.h"

extern char** environ;

namespace attnfuzz {
namespace {

using Clock = std::chrono::steady_clock;

// How much of a worker's output during a case a crash report keeps: its start (the kernel's own
// last words come before a sanitizer's long report) and its end (a backtrace's top, a CUDA error,
// the sanitizer's summary), not a flood.
constexpr std::size_t kOutputHeadBytes = 1024;
constexpr std::size_t kOutputTailBytes = 4096;
// How often a busy worker's resident memory is read. A kernel touching memory at 10 GB/s gets at
// most half a gigabyte past its limit before it is stopped.
constexpr int kMemoryCheckMs = 50;
// The longest answer line a worker may send (a case's record is a few KB): past it without a
// newline, what comes is not an answer.
constexpr std::size_t kMaxAnswerBytes = std::size_t{16} << 20;
// How often a worker's life is checked where the kernel has no pidfd.
constexpr int kLifeCheckMs = 100;
// How long a worker told that there are no more cases may take to exit before it is killed.
constexpr double kExitGraceSeconds = 10.0;

struct Worker {
  pid_t pid = -1;
  pid_t keeper = -1;    // the group's keeper; -1: none (its fork failed)
  int pidfd = -1;       // readable once the worker has ended; -1: checked with waitpid instead
  int request_fd = -1;  // the worker's requests
  int result_fd = -1;   // the worker's answers
  int output_fd = -1;   // the worker's stdout and stderr
  std::string device;
  std::string pending_answer;  // an answer line not yet complete
  std::string output_head;     // the first output since the current case started
  std::string output_tail;     // the output after that, its end kept
  bool output_cut = false;     // some of the output between head and tail was dropped
  bool ready = false;
  bool leaving = false;  // it said it leaves after its last answer: it gets no further case
  bool killed_by_watchdog = false;            // for taking too long
  std::int64_t killed_at_resident_bytes = 0;  // for taking too much memory: what it had
  std::string protocol_breach;                // what it sent that is not an answer, if anything
  std::optional<std::size_t> case_index;      // the case it was sent
  bool case_started = false;                  // the worker said it started that case
  // Its resident memory as its cases started (its first case's and its latest few): memory kept
  // from case to case is a leak's signature.
  std::vector<std::int64_t> resident_at_starts;
  std::size_t cases_started = 0;
  Clock::time_point case_sent;
  std::optional<Clock::time_point> exit_deadline;  // told there is no more work
};

// A descriptor moved above the standard ones (so the child's dup2 onto 0..3 cannot clobber it).
int high_fd(int fd) {
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  if (moved < 0) throw HarnessError(std::string("worker pipe: ") + std::strerror(errno));
  return moved;
}

struct Pipe {
  int read_end = -1;
  int write_end = -1;
};

Pipe make_pipe() {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) {
    throw HarnessError(std::string("cannot create a pipe for a worker: ") + std::strerror(errno));
  }
  return {high_fd(ends[0]), high_fd(ends[1])};
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// In the child between fork and exec: only async-signal-safe calls. The protocol's pipes stay
// where make_pipe put them (above the standard descriptors) and lose close-on-exec for the exec
// only; the worker takes their numbers from ATTNFUZZ_WORKER_FDS.
[[noreturn]] void become_worker(const Pipe& requests, const Pipe& answers, const Pipe& output,
                                int null_input, char* const* argv, char* const* envp) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setpgid(0, 0);
  if (null_input >= 0) dup2(null_input, STDIN_FILENO);
  dup2(output.write_end, STDOUT_FILENO);
  dup2(output.write_end, STDERR_FILENO);
  fcntl(requests.read_end, F_SETFD, 0);
  fcntl(answers.write_end, F_SETFD, 0);
  execve(argv[0], argv, envp);
  const char message[] = "fuzz_attention: cannot start a worker process (execve failed)\n";
  [[maybe_unused]] const ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(127);
}

// The keeper of a worker's group (see the top of the file): joins the group, keeps nothing but the
// lifeline's read end, and kills the group when the lifeline closes. Only async-signal-safe calls
// after the fork.
pid_t start_keeper(pid_t worker, int lifeline) {
  const pid_t keeper = fork();
  if (keeper != 0) return keeper;  // the supervisor (or -1: the group goes without a keeper)
  if (setpgid(0, worker) != 0) _exit(0);
  const bool closed = syscall(SYS_close_range, 0u, static_cast<unsigned>(lifeline) - 1u, 0u) == 0 &&
                      syscall(SYS_close_range, static_cast<unsigned>(lifeline) + 1u, ~0u, 0u) == 0;
  for (int fd = 0; !closed && fd < 4096; ++fd) {  // kernels before 5.9 have no close_range
    if (fd != lifeline) close(fd);
  }
  char byte = 0;
  while (read(lifeline, &byte, 1) != 0) {  // nothing is ever written: 0 is the supervisor's end
  }
  kill(0, SIGKILL);
  _exit(0);
}

Worker start_worker(const WorkerPoolSettings& settings, const std::string& device, int lifeline) {
  Pipe requests = make_pipe(), answers = make_pipe(), output = make_pipe();
  // Everything the child needs is built before fork: after it, no allocation is safe.
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!device.empty() && std::strncmp(*entry, "CUDA_VISIBLE_DEVICES=", 21) == 0) continue;
    if (std::strncmp(*entry, kWorkerFdsVariable, std::strlen(kWorkerFdsVariable)) == 0) continue;
    environment.emplace_back(*entry);
  }
  if (!device.empty()) environment.push_back("CUDA_VISIBLE_DEVICES=" + device);
  environment.push_back(std::string(kWorkerFdsVariable) + "=" + std::to_string(requests.read_end) +
                        "," + std::to_string(answers.write_end));
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> arguments = settings.command;
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  int null_input = open("/dev/null", O_RDONLY | O_CLOEXEC);

  const pid_t pid = fork();
  if (pid < 0) throw HarnessError(std::string("cannot fork a worker: ") + std::strerror(errno));
  if (pid == 0) become_worker(requests, answers, output, null_input, argv.data(), envp.data());

  setpgid(pid, pid);  // as the child does: whichever runs first, the group exists for the keeper
  Worker worker;
  worker.pid = pid;
  worker.keeper = start_keeper(pid, lifeline);
  worker.pidfd = open_pidfd(pid);
  worker.device = device;
  worker.request_fd = requests.write_end;
  worker.result_fd = answers.read_end;
  worker.output_fd = output.read_end;
  close_fd(requests.read_end);
  close_fd(answers.write_end);
  close_fd(output.write_end);
  close_fd(null_input);
  fcntl(worker.result_fd, F_SETFL, O_NONBLOCK);
  fcntl(worker.output_fd, F_SETFL, O_NONBLOCK);
  return worker;
}

bool send_case(Worker& worker, std::size_t index, const WorkerRequestBuilder& request_of) {
  nlohmann::json request = request_of(index);
  request["index"] = index;
  return write_all(worker.request_fd, json_text(request) + "\n") == 0;  // else it is gone
}

// Reads what the worker printed; keeps the tail and passes it on to our stderr as it comes.
void drain_output(Worker& worker) {
  char buffer[4096];
  for (;;) {
    const ssize_t count = read_some(worker.output_fd, buffer, sizeof buffer);
    if (count <= 0) return;
    [[maybe_unused]] const ssize_t ignored = write(STDERR_FILENO, buffer, count);
    std::string_view text(buffer, static_cast<std::size_t>(count));
    const std::size_t to_head = std::min(text.size(), kOutputHeadBytes - worker.output_head.size());
    worker.output_head.append(text.substr(0, to_head));
    worker.output_tail.append(text.substr(to_head));
    if (worker.output_tail.size() > 2 * kOutputTailBytes) {
      worker.output_tail.erase(0, worker.output_tail.size() - kOutputTailBytes);
      worker.output_cut = true;
    }
  }
}

// A worker's output during its case, its middle left out past kOutputHeadBytes +
// kOutputTailBytes, made printable as lines (it goes into JSON, XML and terminals).
std::string output_of(const Worker& worker) {
  const bool cut = worker.output_cut || worker.output_tail.size() > kOutputTailBytes;
  const std::string kept =
      worker.output_head +
      (cut ? "\n...\n" + worker.output_tail.substr(worker.output_tail.size() - kOutputTailBytes)
           : worker.output_tail);
  std::string text = printable_text(kept, KeptControls::tab_and_newline);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

void clear_output(Worker& worker) {
  worker.output_head.clear();
  worker.output_tail.clear();
  worker.output_cut = false;
}

// A suspected leak, from the memory a worker held as its cases started: risen at most of its
// latest starts (a majority of the intervals between them, at least two), and by more than a
// quarter of the limit since its first. Memory the harness keeps for reuse is at most one case's
// buffers, given back before a larger case allocates (core/large_buffer.h): one step, not a rise
// from case to case; memory a kernel keeps from call to call rises with every case it runs (a
// case skipped between them adds nothing, hence a majority, not every one). The suspicion is put to
// the test by running the case again, alone, in a fresh worker (Supervisor::worker_ended): a case
// that needs the memory itself runs out there too. Returns the loss's description, or nothing when
// there is no such growth.
constexpr std::size_t kLeakWindow = 6;  // the latest consecutive starts looked at
std::optional<std::string> leak_of(const Worker& worker, const WorkerPoolSettings& settings) {
  const std::vector<std::int64_t>& starts = worker.resident_at_starts;
  if (starts.size() < 4) return std::nullopt;
  constexpr std::int64_t kRiseBytes = std::int64_t{1} << 20;
  const std::size_t window = std::min(starts.size() - 1, kLeakWindow);  // the first may be apart
  std::size_t rises = 0;
  for (std::size_t at = starts.size() - window + 1; at < starts.size(); ++at) {
    rises += starts[at] - starts[at - 1] >= kRiseBytes ? 1 : 0;
  }
  if (rises < 2 || 2 * rises <= window - 1) return std::nullopt;
  const std::int64_t growth = starts.back() - starts.front();
  if (growth <= settings.memory_limit_bytes / 4) return std::nullopt;
  const std::int64_t per_case = growth / static_cast<std::int64_t>(worker.cases_started - 1);
  return "leaks: the worker's resident memory grew by about " + mebibytes_text(per_case) +
         " per case, kept from case to case over its " + std::to_string(worker.cases_started) +
         " cases (" + mebibytes_text(starts.front()) + " as the first began, " +
         mebibytes_text(starts.back()) + " as this one did), until this case took it to " +
         mebibytes_text(worker.killed_at_resident_bytes) + ", past the limit of " +
         mebibytes_text(settings.memory_limit_bytes) + " (--memory-limit)";
}

// The fences' report of a fault (core/fenced_buffer.h) in the worker's output, if it printed one.
std::optional<std::string> fence_fault_in(const std::string& output) {
  const std::size_t at = output.rfind(kFenceFaultPrefix);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t begin = at + kFenceFaultPrefix.size();
  return output.substr(begin, output.find('\n', begin) - begin);
}

WorkerLoss loss_of(const Worker& worker, int status, const WorkerPoolSettings& settings) {
  WorkerLoss loss;
  loss.output_tail = output_of(worker);
  if (worker.case_index) loss.seconds = seconds_since(worker.case_sent);
  if (worker.killed_by_watchdog) {
    loss.kind = WorkerLossKind::hung;
    loss.description = "hung: no answer within " +
                       significant_digits(settings.case_timeout_seconds, 6) +
                       " s (--case-timeout); the worker was killed";
  } else if (const auto leak =
                 worker.killed_at_resident_bytes > 0 ? leak_of(worker, settings) : std::nullopt) {
    loss.kind = WorkerLossKind::leaked;
    loss.description = *leak;
  } else if (worker.killed_at_resident_bytes > 0) {
    loss.kind = WorkerLossKind::out_of_memory;
    loss.description = "out of memory: the worker's processes reached " +
                       mebibytes_text(worker.killed_at_resident_bytes) +
                       " of resident memory, past the limit of " +
                       mebibytes_text(settings.memory_limit_bytes) +
                       " (--memory-limit); they were killed";
  } else if (!worker.protocol_breach.empty()) {
    loss.kind = WorkerLossKind::crashed;
    loss.description =
        "crashed: the worker's answer channel carried something that is not an "
        "answer (" +
        worker.protocol_breach + "); the worker was killed";
  } else if (const auto fault = fence_fault_in(loss.output_tail)) {
    loss.kind = WorkerLossKind::crashed;
    loss.description = "crashed: " + *fault + "; the worker " + describe_wait_status(status) +
                       " while running the case";
  } else {
    loss.kind = WorkerLossKind::crashed;
    loss.description =
        "crashed: the worker " + describe_wait_status(status) + " while running the case";
    // A SIGKILL the supervisor did not send most likely came from the kernel's OOM killer.
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      loss.description += " (a SIGKILL from outside: the system's out-of-memory killer?)";
    }
  }
  if (!worker.device.empty()) loss.description += " (device " + worker.device + ")";
  return loss;
}

// Kills whatever is left of the worker's group, reaps the worker and closes its descriptors;
// returns its wait status. The output still in its pipe is read first.
int reap(Worker& worker) {
  drain_output(worker);
  kill_process_group(worker.pid);
  int status = 0;
  while (waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
  }
  close_fd(worker.request_fd);
  close_fd(worker.result_fd);
  close_fd(worker.output_fd);
  close_fd(worker.pidfd);
  if (worker.keeper > 0) {
    while (waitpid(worker.keeper, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  worker.pid = -1;
  worker.keeper = -1;
  return status;
}

// Ignores SIGPIPE while the pool runs: a request written to a worker that just died must fail
// with EPIPE, not kill the supervisor.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &previous_);
  }
  ~IgnoreSigpipe() { sigaction(SIGPIPE, &previous_, nullptr); }
  IgnoreSigpipe(const IgnoreSigpipe&) = delete;
  IgnoreSigpipe& operator=(const IgnoreSigpipe&) = delete;

 private:
  struct sigaction previous_ {};
};

}  // namespace

class WorkerPool::Supervisor {
 public:
  explicit Supervisor(WorkerPoolSettings settings) : settings_(std::move(settings)) {}

  // Idle workers are told there is no more work and given kExitGraceSeconds to exit on their own
  // (coverage tools write their data at exit); busy ones, and stragglers, are killed.
  ~Supervisor() {
    for (Worker& worker : workers_) {
      if (worker.pid > 0 && worker.case_index) reap(worker);
      close_fd(worker.request_fd);
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(kExitGraceSeconds));
    for (Worker& worker : workers_) {
      while (worker.pid > 0 && !process_has_ended(worker.pid) && Clock::now() < deadline) {
        pollfd watched{worker.pidfd, POLLIN, 0};
        poll(&watched, worker.pidfd >= 0 ? 1 : 0, kLifeCheckMs);
      }
      if (worker.pid > 0) reap(worker);
    }
    close_fd(lifeline_.read_end);
    close_fd(lifeline_.write_end);
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  void run(const std::vector<std::size_t>& indices, const WorkerRequestBuilder& request_of,
           const WorkerRecordHandler& on_record, const WorkerLossHandler& on_loss,
           bool keep_workers) {
    if (indices.empty()) return;
    const IgnoreSigpipe ignore_sigpipe;
    request_of_ = &request_of;
    on_record_ = &on_record;
    on_loss_ = &on_loss;
    keep_workers_ = keep_workers;
    queue_.assign(indices.begin(), indices.end());
    lost_before_start_.clear();
    leak_suspects_.clear();
    stopped_ = false;
    if (workers_.empty()) {
      const std::vector<std::string> devices =
          settings_.devices.empty() ? std::vector<std::string>{""} : settings_.devices;
      const std::size_t wanted = std::min(devices.size(), queue_.size());
      for (std::size_t slot = 0; slot < wanted; ++slot) {
        workers_.push_back(start_worker(settings_, devices[slot], lifeline_.read_end));
      }
    }
    while (!stopped_) {
      for (Worker& worker : workers_) dispatch(worker);  // a dead one is replaced if work is left
      const bool any_alive = std::any_of(workers_.begin(), workers_.end(),
                                         [](const Worker& worker) { return worker.pid > 0; });
      const bool any_busy = std::any_of(workers_.begin(), workers_.end(), [](const Worker& worker) {
        return worker.pid > 0 && worker.case_index.has_value();
      });
      if (!any_alive || (keep_workers_ && queue_.empty() && !any_busy)) break;
      wait_for_events();
    }
    // Stopped: no case may still be running when the caller goes on.
    for (Worker& worker : workers_) {
      if (worker.pid > 0 && worker.case_index) {
        reap(worker);
        worker.case_index.reset();
        worker.ready = false;
      }
    }
  }

  void set_case_timeout(double seconds) { settings_.case_timeout_seconds = seconds; }

 private:
  bool more_cases() const { return !stopped_ && !queue_.empty(); }

  void dispatch(Worker& worker) {
    if (worker.pid <= 0 && more_cases())
      worker = start_worker(settings_, worker.device, lifeline_.read_end);
    if (worker.pid <= 0 || !worker.ready || worker.case_index || worker.leaving ||
        worker.exit_deadline) {
      return;  // (told there is no more work: it is exiting)
    }
    if (!more_cases()) {
      if (!keep_workers_ &&
          !worker.exit_deadline) {  // no more work: the worker exits when it reads EOF
        close_fd(worker.request_fd);
        worker.exit_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(kExitGraceSeconds));
      }
      return;
    }
    // A case suspected of running out of a leak's memory goes to a fresh worker only.
    const auto next = std::find_if(queue_.begin(), queue_.end(), [&](std::size_t index) {
      return worker.cases_started == 0 || !leak_suspects_.contains(index);
    });
    if (next == queue_.end()) return;
    worker.case_index = *next;
    queue_.erase(next);
    worker.case_started = false;
    worker.case_sent = Clock::now();
    clear_output(worker);
    send_case(worker, *worker.case_index, *request_of_);  // a failure shows as the worker ending
  }

  // Milliseconds until the earliest deadline of a busy or exiting worker; -1: none.
  int wait_budget_ms() const {
    int timeout_ms = -1;
    const auto now = Clock::now();
    const auto consider = [&](Clock::time_point deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
      const int wait_ms = static_cast<int>(std::clamp<long long>(left + 1, 0, 1 << 30));
      timeout_ms = timeout_ms < 0 ? wait_ms : std::min(timeout_ms, wait_ms);
    };
    for (const Worker& worker : workers_) {
      if (worker.pid <= 0) continue;
      if (worker.case_index && settings_.case_timeout_seconds > 0) {
        consider(worker.case_sent +
                 std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(settings_.case_timeout_seconds)));
      }
      if (worker.exit_deadline) consider(*worker.exit_deadline);
      if (worker.pidfd < 0) consider(now + std::chrono::milliseconds(kLifeCheckMs));
      if (worker.case_index && settings_.memory_limit_bytes > 0) {
        consider(now + std::chrono::milliseconds(kMemoryCheckMs));
      }
    }
    return timeout_ms;
  }

  void wait_for_events() {
    std::vector<pollfd> watched;
    std::vector<Worker*> owners;
    for (Worker& worker : workers_) {
      if (worker.pid <= 0) continue;
      watched.push_back({worker.result_fd, POLLIN, 0});
      watched.push_back({worker.output_fd, POLLIN, 0});
      watched.push_back({worker.pidfd, POLLIN, 0});  // a negative descriptor is ignored
      owners.push_back(&worker);
    }
    if (poll(watched.data(), watched.size(), wait_budget_ms()) < 0 && errno != EINTR) {
      throw HarnessError(std::string("poll on workers: ") + std::strerror(errno));
    }
    for (std::size_t slot = 0; slot < owners.size(); ++slot) {
      Worker& worker = *owners[slot];
      if (watched[3 * slot + 1].revents != 0) drain_output(worker);
      if (watched[3 * slot].revents != 0) read_answers(worker);
      if (worker.pid > 0 && process_has_ended(worker.pid)) {
        read_answers(worker);  // what it said before it ended
        if (worker.pid > 0) worker_ended(worker);
      }
    }
    for (Worker& worker : workers_) {
      enforce_timeout(worker);
      enforce_memory_limit(worker);
      enforce_exit_deadline(worker);
    }
  }

  void read_answers(Worker& worker) {
    char buffer[1 << 16];
    bool closed = false;
    for (;;) {
      const ssize_t count = read_some(worker.result_fd, buffer, sizeof buffer);
      if (count <= 0) {  // 0: the worker closed its end; -1 (EAGAIN): all read for now
        closed = count == 0;
        break;
      }
      worker.pending_answer.append(buffer, static_cast<std::size_t>(count));
      if (worker.pending_answer.size() > kMaxAnswerBytes &&
          worker.pending_answer.find('\n') == std::string::npos) {
        return protocol_breach(worker, worker.pending_answer.substr(0, 120) + "...");
      }
    }
    // Answers first: a worker may answer and exit at once (after running out of memory).
    std::size_t line_end = 0;
    while (worker.pid > 0 && (line_end = worker.pending_answer.find('\n')) != std::string::npos) {
      const std::string line = worker.pending_answer.substr(0, line_end);
      worker.pending_answer.erase(0, line_end + 1);
      take_answer(worker, line);
    }
    // A worker without its answer channel can never answer again: it is finished.
    if (closed && worker.pid > 0) {
      kill_process_group(worker.pid);
      worker_ended(worker);
    }
  }

  // Something on the answer channel that is not the answer expected now: the worker is killed
  // and, if it was running a case, that case is lost as a crash naming what was sent.
  void protocol_breach(Worker& worker, const std::string& line) {
    worker.protocol_breach = "\"" +
                             printable_text(line.substr(0, 120), KeptControls::tab_and_newline) +
                             (line.size() > 120 ? "...\"" : "\"");
    worker.case_started = true;  // the case it was running is the one to blame
    kill_process_group(worker.pid);
    worker_ended(worker);
  }

  void take_answer(Worker& worker, const std::string& line) {
    const nlohmann::json answer = parse_json_or_discarded(line);
    if (!answer.is_object()) return protocol_breach(worker, line);
    if (answer.contains("ready") && !worker.ready) {
      worker.ready = true;
      return;
    }
    if (worker.case_index && !worker.case_started && answer.contains("started") &&
        answer["started"] == *worker.case_index) {
      worker.case_started = true;
      std::vector<std::int64_t>& starts = worker.resident_at_starts;
      starts.push_back(group_resident_bytes(worker.pid, worker.keeper));
      ++worker.cases_started;
      if (starts.size() > 2 * kLeakWindow) {  // the first, and the latest consecutive ones
        starts.erase(starts.begin() + 1, starts.end() - static_cast<std::ptrdiff_t>(kLeakWindow));
      }
      return;
    }
    if (!worker.case_index || !worker.case_started || !answer.contains("index") ||
        !answer.contains("result") || answer["index"] != *worker.case_index) {
      return protocol_breach(worker, line);
    }
    const std::size_t index = *worker.case_index;
    worker.case_index.reset();
    // A worker that leaves after this answer (its CUDA context is lost) must not be sent another
    // case: it would exit with that case unanswered. A fresh worker takes the rest.
    worker.leaving = answer.contains("leaving") && answer["leaving"] == true;
    if (const auto suspect = leak_suspects_.find(index); suspect != leak_suspects_.end()) {
      // Alone, the case passed within the limit: what filled the worker was kept from the cases
      // before it. A case that failed or was skipped alone keeps that verdict of its own.
      WorkerLoss leak = suspect->second;
      leak_suspects_.erase(suspect);
      const nlohmann::json& record = answer["result"];
      if (record.is_object() && record.value("status", "") == "pass") {
        leak.description += "; alone, in a fresh worker, the case passed within the limit";
        if (!stopped_ && !(*on_loss_)(index, leak)) stopped_ = true;
        return;
      }
    }
    if (!stopped_ && !(*on_record_)(index, answer["result"])) stopped_ = true;
  }

  void worker_ended(Worker& worker) {
    const bool started = worker.ready;
    const int status = reap(worker);
    if (!started) {
      throw HarnessError("a worker process failed to start: it " +
                         (worker.protocol_breach.empty() ? describe_wait_status(status)
                                                         : "sent " + worker.protocol_breach) +
                         (worker.output_head.empty() ? "" : "; its output: " + output_of(worker)));
    }
    worker.ready = false;
    worker.leaving = false;
    worker.exit_deadline.reset();
    worker.pending_answer.clear();
    const WorkerLoss loss = loss_of(worker, status, settings_);
    worker.killed_by_watchdog = false;
    worker.killed_at_resident_bytes = 0;
    worker.protocol_breach.clear();
    worker.resident_at_starts.clear();  // its successor starts afresh
    worker.cases_started = 0;
    if (!worker.case_index) return;  // it left between cases (out of memory, lost CUDA context)
    const std::size_t index = *worker.case_index;
    worker.case_index.reset();
    // Died before it said it started the case: the case is not to blame (a plugin's stray thread,
    // a worker that closed its own pipes); another worker gets it, up to kMaxCaseStarts times.
    if (!worker.case_started && ++lost_before_start_[index] < kMaxCaseStarts) {
      queue_.push_front(index);
      return;
    }
    if (loss.kind == WorkerLossKind::leaked) {
      // Run it again, alone in a fresh worker: there it either finishes (the memory was kept
      // from the earlier cases: a leak) or runs out again (it is the case's own).
      leak_suspects_[index] = loss;
      queue_.push_front(index);
      return;
    }
    WorkerLoss blamed = loss;
    if (const auto suspect = leak_suspects_.find(index); suspect != leak_suspects_.end()) {
      leak_suspects_.erase(suspect);
      if (blamed.kind == WorkerLossKind::out_of_memory) {
        blamed.description += " (alone, in a fresh worker: the case's own memory)";
      }
    }
    if (!worker.case_started) {
      blamed.description += " (" + std::to_string(kMaxCaseStarts) +
                            " workers in a row ended as they were given this case)";
    }
    if (!stopped_ && !(*on_loss_)(index, blamed)) stopped_ = true;
  }

  void enforce_memory_limit(Worker& worker) {
    if (worker.pid <= 0 || !worker.case_index || settings_.memory_limit_bytes <= 0) return;
    const std::int64_t resident = group_resident_bytes(worker.pid, worker.keeper);
    if (resident <= settings_.memory_limit_bytes) return;
    worker.killed_at_resident_bytes = resident;
    worker.case_started = true;  // whatever it had said: the memory was the case's
    kill_process_group(worker.pid);
    worker_ended(worker);
  }

  void enforce_timeout(Worker& worker) {
    if (worker.pid <= 0 || !worker.case_index || settings_.case_timeout_seconds <= 0) return;
    if (seconds_since(worker.case_sent) < settings_.case_timeout_seconds) return;
    worker.killed_by_watchdog = true;
    worker.case_started = true;
    kill_process_group(worker.pid);
    worker_ended(worker);
  }

  // A worker that does not exit when told there is no more work (a plugin's destructor that
  // hangs) is killed; it holds no case.
  void enforce_exit_deadline(Worker& worker) {
    if (worker.pid <= 0 || !worker.exit_deadline || Clock::now() < *worker.exit_deadline) return;
    kill_process_group(worker.pid);
    worker_ended(worker);
  }

  WorkerPoolSettings settings_;
  const WorkerRequestBuilder* request_of_ = nullptr;
  const WorkerRecordHandler* on_record_ = nullptr;
  const WorkerLossHandler* on_loss_ = nullptr;
  bool keep_workers_ = false;
  Pipe lifeline_ = make_pipe();    // its write end closes only when the supervisor ends
  std::deque<std::size_t> queue_;  // cases not yet handed out, in order
  std::map<std::size_t, int> lost_before_start_;
  // Cases whose worker ran out of memory that it had kept from earlier cases, waiting to run
  // again alone (leak_of), with the loss they are blamed for if they then finish.
  std::map<std::size_t, WorkerLoss> leak_suspects_;
  std::vector<Worker> workers_;
  bool stopped_ = false;
};

WorkerPool::WorkerPool(WorkerPoolSettings settings)
    : supervisor_(std::make_unique<Supervisor>(std::move(settings))) {}

WorkerPool::~WorkerPool() = default;

void WorkerPool::run(const std::vector<std::size_t>& indices,
                     const WorkerRequestBuilder& request_of, const WorkerRecordHandler& on_record,
                     const WorkerLossHandler& on_loss) {
  supervisor_->run(indices, request_of, on_record, on_loss, /*keep_workers=*/true);
}

void WorkerPool::set_case_timeout(double seconds) {
  supervisor_->set_case_timeout(seconds);
}

void run_on_workers(const WorkerPoolSettings& settings, const std::vector<std::size_t>& indices,
                    const WorkerRequestBuilder& request_of, const WorkerRecordHandler& on_record,
                    const WorkerLossHandler& on_loss) {
  WorkerPool::Supervisor supervisor(settings);
  supervisor.run(indices, request_of, on_record, on_loss, /*keep_workers=*/false);
}

}  // namespace attnfuzz
