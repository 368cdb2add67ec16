// Workers are started with fork + exec of fuzz_attention itself (never a bare fork: the supervisor
// may hold a CUDA context, which a forked child cannot use), in a process group of their own so
// the watchdog's SIGKILL reaches anything they started, and with PR_SET_PDEATHSIG so that a
// supervisor killed with -9 takes its workers along.
#include "run/worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "core/clock.h"
#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/number_text.h"
#include "core/text.h"
#include "run/case_worker.h"
#include "run/worker_memory.h"

extern char** environ;

namespace attnfuzz {
namespace {

using Clock = std::chrono::steady_clock;

// How much of a worker's output a crash report keeps: enough for a backtrace's top or a CUDA
// error, not a flood.
constexpr std::size_t kOutputTailBytes = 4096;
// How often a busy worker's resident memory is read. A kernel touching memory at 10 GB/s gets at
// most half a gigabyte past its limit before it is stopped.
constexpr int kMemoryCheckMs = 50;

struct Worker {
  pid_t pid = -1;
  int request_fd = -1;  // the worker's stdin
  int result_fd = -1;   // the worker's answers (its fd 3)
  int output_fd = -1;   // the worker's stdout and stderr
  std::string device;
  std::string pending_answer;  // an answer line not yet complete
  std::string output_tail;     // output since the current case started
  bool ready = false;
  bool leaving = false;  // it said it leaves after its last answer: it gets no further case
  bool killed_by_watchdog = false;            // for taking too long
  std::int64_t killed_at_resident_bytes = 0;  // for taking too much memory: what it had
  std::optional<std::size_t> case_index;      // the case it is running
  Clock::time_point case_started;
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

// SIGKILL to the worker's process group (the worker and anything it started) and to the worker.
void kill_worker(const Worker& worker) {
  kill(-worker.pid, SIGKILL);
  kill(worker.pid, SIGKILL);
}

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void become_worker(const Pipe& requests, const Pipe& answers, const Pipe& output,
                                char* const* argv, char* const* envp) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setpgid(0, 0);
  dup2(requests.read_end, STDIN_FILENO);
  dup2(output.write_end, STDOUT_FILENO);
  dup2(output.write_end, STDERR_FILENO);
  dup2(answers.write_end, kWorkerResultFd);
  execve(argv[0], argv, envp);
  const char message[] = "fuzz_attention: cannot start a worker process (execve failed)\n";
  [[maybe_unused]] const ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(127);
}

Worker start_worker(const WorkerPoolSettings& settings, const std::string& device) {
  // Everything the child needs is built before fork: after it, no allocation is safe.
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!device.empty() && std::strncmp(*entry, "CUDA_VISIBLE_DEVICES=", 21) == 0) continue;
    environment.emplace_back(*entry);
  }
  if (!device.empty()) environment.push_back("CUDA_VISIBLE_DEVICES=" + device);
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> arguments = settings.command;
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  Pipe requests = make_pipe(), answers = make_pipe(), output = make_pipe();
  const pid_t pid = fork();
  if (pid < 0) throw HarnessError(std::string("cannot fork a worker: ") + std::strerror(errno));
  if (pid == 0) become_worker(requests, answers, output, argv.data(), envp.data());

  Worker worker;
  worker.pid = pid;
  worker.device = device;
  worker.request_fd = requests.write_end;
  worker.result_fd = answers.read_end;
  worker.output_fd = output.read_end;
  close_fd(requests.read_end);
  close_fd(answers.write_end);
  close_fd(output.write_end);
  fcntl(worker.result_fd, F_SETFL, O_NONBLOCK);
  fcntl(worker.output_fd, F_SETFL, O_NONBLOCK);
  return worker;
}

bool send_case(Worker& worker, std::size_t index) {
  const std::string line = nlohmann::json{{"index", index}}.dump() + "\n";
  return write_all(worker.request_fd, line) == 0;  // else the worker is gone: its answers say how
}

// Reads what the worker printed; keeps the tail and passes it on to our stderr as it comes.
void drain_output(Worker& worker) {
  char buffer[4096];
  for (;;) {
    const ssize_t count = read_some(worker.output_fd, buffer, sizeof buffer);
    if (count <= 0) return;
    [[maybe_unused]] const ssize_t ignored = write(STDERR_FILENO, buffer, count);
    worker.output_tail.append(buffer, static_cast<std::size_t>(count));
    if (worker.output_tail.size() > 2 * kOutputTailBytes) {
      worker.output_tail.erase(0, worker.output_tail.size() - kOutputTailBytes);
    }
  }
}

// The last kOutputTailBytes of a worker's output, made printable as lines (it goes into JSON, XML
// and terminals).
std::string tail_of(const std::string& output) {
  std::string tail = printable_text(output.size() <= kOutputTailBytes
                                        ? output
                                        : "..." + output.substr(output.size() - kOutputTailBytes),
                                    KeptControls::tab_and_newline);
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return tail;
}

// How the worker ended, in words: "killed by signal 11 (Segmentation fault)".
std::string ending_of(int status) {
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    return "was killed by signal " + std::to_string(signal_number) + " (" +
           strsignal(signal_number) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (wait status " + std::to_string(status) + ")";
}

WorkerLoss loss_of(const Worker& worker, int status, const WorkerPoolSettings& settings) {
  WorkerLoss loss;
  loss.output_tail = tail_of(worker.output_tail);
  if (worker.killed_by_watchdog) {
    loss.kind = WorkerLossKind::hung;
    loss.description = "hung: no answer within " +
                       significant_digits(settings.case_timeout_seconds, 6) +
                       " s (--case-timeout); the worker was killed";
  } else if (worker.killed_at_resident_bytes > 0) {
    loss.kind = WorkerLossKind::out_of_memory;
    loss.description = "out of memory: the worker's resident memory reached " +
                       mebibytes_text(worker.killed_at_resident_bytes) + ", past its limit of " +
                       mebibytes_text(settings.memory_limit_bytes) +
                       " (--memory-limit); it was killed";
  } else {
    loss.kind = WorkerLossKind::crashed;
    loss.description = "crashed: the worker " + ending_of(status) + " while running the case";
    // A SIGKILL the supervisor did not send most likely came from the kernel's OOM killer.
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      loss.description += " (a SIGKILL from outside: the system's out-of-memory killer?)";
    }
  }
  if (!worker.device.empty()) loss.description += " (device " + worker.device + ")";
  return loss;
}

// Closes the worker's pipes and waits for it; returns its wait status.
int reap(Worker& worker) {
  drain_output(worker);
  close_fd(worker.request_fd);
  close_fd(worker.result_fd);
  close_fd(worker.output_fd);
  int status = 0;
  while (waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
  }
  worker.pid = -1;
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

class Supervisor {
 public:
  Supervisor(const WorkerPoolSettings& settings, const std::vector<std::size_t>& indices,
             const WorkerRecordHandler& on_record, const WorkerLossHandler& on_loss)
      : settings_(settings), indices_(indices), on_record_(on_record), on_loss_(on_loss) {}

  ~Supervisor() {
    for (Worker& worker : workers_) {
      if (worker.pid > 0) {
        kill_worker(worker);
        reap(worker);
      }
    }
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  void run() {
    const std::vector<std::string> devices =
        settings_.devices.empty() ? std::vector<std::string>{""} : settings_.devices;
    const std::size_t wanted = std::min(devices.size(), indices_.size());
    for (std::size_t slot = 0; slot < wanted; ++slot) {
      workers_.push_back(start_worker(settings_, devices[slot]));
    }
    while (!stopped_) {  // when stopped, the destructor kills whatever still runs
      for (Worker& worker : workers_) dispatch(worker);
      const bool busy = std::any_of(workers_.begin(), workers_.end(), [](const Worker& worker) {
        return worker.pid > 0 && (worker.case_index || !worker.ready || worker.leaving);
      });
      if (!busy) break;
      wait_for_events();
    }
    if (stopped_) return;
    for (Worker& worker : workers_) {
      if (worker.pid > 0) reap(worker);  // stdin closes: an idle worker exits on its own
    }
  }

 private:
  bool more_cases() const { return !stopped_ && next_ < indices_.size(); }

  void dispatch(Worker& worker) {
    if (worker.pid <= 0 && more_cases()) worker = start_worker(settings_, worker.device);
    if (worker.pid <= 0 || !worker.ready || worker.case_index || worker.leaving) return;
    if (!more_cases()) {
      close_fd(worker.request_fd);  // no more work: the worker exits when it reads EOF
      return;
    }
    worker.case_index = indices_[next_++];
    worker.case_started = Clock::now();
    worker.output_tail.clear();
    send_case(worker, *worker.case_index);  // a failure shows as the answers pipe closing
  }

  void wait_for_events() {
    std::vector<pollfd> watched;
    std::vector<Worker*> owners;
    int timeout_ms = -1;
    const auto now = Clock::now();
    for (Worker& worker : workers_) {
      if (worker.pid <= 0) continue;
      watched.push_back({worker.result_fd, POLLIN, 0});
      watched.push_back({worker.output_fd, POLLIN, 0});
      owners.push_back(&worker);
      if (worker.case_index && settings_.case_timeout_seconds > 0) {
        const auto deadline =
            worker.case_started + std::chrono::duration<double>(settings_.case_timeout_seconds);
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        const int wait_ms = static_cast<int>(std::clamp<long long>(left + 1, 0, 1 << 30));
        timeout_ms = timeout_ms < 0 ? wait_ms : std::min(timeout_ms, wait_ms);
      }
    }
    const bool watching_memory =
        settings_.memory_limit_bytes > 0 &&
        std::any_of(workers_.begin(), workers_.end(),
                    [](const Worker& worker) { return worker.pid > 0 && worker.case_index; });
    if (watching_memory) {
      timeout_ms = timeout_ms < 0 ? kMemoryCheckMs : std::min(timeout_ms, kMemoryCheckMs);
    }
    if (poll(watched.data(), watched.size(), timeout_ms) < 0 && errno != EINTR) {
      throw HarnessError(std::string("poll on workers: ") + std::strerror(errno));
    }
    for (std::size_t slot = 0; slot < owners.size(); ++slot) {
      Worker& worker = *owners[slot];
      if (watched[2 * slot + 1].revents != 0) drain_output(worker);
      if (watched[2 * slot].revents != 0) read_answers(worker);
    }
    for (Worker& worker : workers_) {
      enforce_timeout(worker);
      enforce_memory_limit(worker);
    }
  }

  void read_answers(Worker& worker) {
    char buffer[1 << 16];
    bool ended = false;
    for (;;) {
      const ssize_t count = read_some(worker.result_fd, buffer, sizeof buffer);
      if (count <= 0) {  // 0: the worker has ended; -1 (EAGAIN): all read for now
        ended = count == 0;
        break;
      }
      worker.pending_answer.append(buffer, static_cast<std::size_t>(count));
    }
    // Answers first: a worker may answer and exit at once (after running out of memory).
    std::size_t line_end = 0;
    while ((line_end = worker.pending_answer.find('\n')) != std::string::npos) {
      const std::string line = worker.pending_answer.substr(0, line_end);
      worker.pending_answer.erase(0, line_end + 1);
      take_answer(worker, line);
    }
    if (ended) worker_ended(worker);
  }

  void take_answer(Worker& worker, const std::string& line) {
    const nlohmann::json answer = nlohmann::json::parse(line, nullptr, false);
    if (answer.is_object() && answer.contains("ready")) {
      worker.ready = true;
      return;
    }
    if (!answer.is_object() || !answer.contains("index") || !answer.contains("result") ||
        !worker.case_index || answer["index"] != *worker.case_index) {
      throw HarnessError("a worker answered out of turn: " + line.substr(0, 200));
    }
    const std::size_t index = *worker.case_index;
    worker.case_index.reset();
    // A worker that leaves after this answer (its CUDA context is lost) must not be sent another
    // case: it would exit with that case unanswered. A fresh worker takes the rest.
    worker.leaving = answer.contains("leaving") && answer["leaving"] == true;
    if (!stopped_ && !on_record_(index, answer["result"])) stopped_ = true;
  }

  void worker_ended(Worker& worker) {
    const bool started = worker.ready;
    const int status = reap(worker);
    if (!started) {
      throw HarnessError("a worker process failed to start: it " + ending_of(status) +
                         (worker.output_tail.empty() ? "" : "; its output: " + worker.output_tail));
    }
    worker.ready = false;
    worker.pending_answer.clear();
    if (!worker.case_index) return;  // it left between cases (out of memory, lost CUDA context)
    const std::size_t index = *worker.case_index;
    worker.case_index.reset();
    const WorkerLoss loss = loss_of(worker, status, settings_);
    worker.killed_by_watchdog = false;
    worker.killed_at_resident_bytes = 0;
    if (!stopped_ && !on_loss_(index, loss)) stopped_ = true;
  }

  void enforce_memory_limit(Worker& worker) {
    if (worker.pid <= 0 || !worker.case_index || settings_.memory_limit_bytes <= 0) return;
    const std::int64_t resident = resident_bytes(worker.pid);
    if (resident <= settings_.memory_limit_bytes) return;
    worker.killed_at_resident_bytes = resident;
    kill_worker(worker);
    worker_ended(worker);
  }

  void enforce_timeout(Worker& worker) {
    if (worker.pid <= 0 || !worker.case_index || settings_.case_timeout_seconds <= 0) return;
    if (seconds_since(worker.case_started) < settings_.case_timeout_seconds) return;
    worker.killed_by_watchdog = true;
    kill_worker(worker);
    worker_ended(worker);
  }

  const WorkerPoolSettings& settings_;
  const std::vector<std::size_t>& indices_;
  const WorkerRecordHandler& on_record_;
  const WorkerLossHandler& on_loss_;
  std::vector<Worker> workers_;
  std::size_t next_ = 0;
  bool stopped_ = false;
};

}  // namespace

void run_on_workers(const WorkerPoolSettings& settings, const std::vector<std::size_t>& indices,
                    const WorkerRecordHandler& on_record, const WorkerLossHandler& on_loss) {
  if (indices.empty()) return;
  const IgnoreSigpipe ignore_sigpipe;
  Supervisor supervisor(settings, indices, on_record, on_loss);
  supervisor.run();
}

}  // namespace attnfuzz
