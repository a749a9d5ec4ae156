#include "base/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/file_text.h"
#include "base/interrupt.h"

extern char** environ;

namespace ernic {
namespace {

using Clock = std::chrono::steady_clock;

int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

int poll_timeout_ms(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) {
    return -1;
  }
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// dup2() that also works when `fd` already is `target` (ernicctl started with that descriptor
// closed): the close-on-exec flag is cleared either way. Async-signal-safe.
void install_fd(int fd, int target) {
  if (fd == target) {
    ::fcntl(fd, F_SETFD, 0);
  } else {
    ::dup2(fd, target);
  }
}

// Writes errno and a stage marker to the error pipe; the parent turns it into a SpawnError.
[[noreturn]] void child_fail(int error_fd, int stage) {
  int payload[2] = {stage, errno};
  [[maybe_unused]] ssize_t ignored = ::write(error_fd, payload, sizeof payload);
  ::_exit(127);
}

// What the child needs, prepared before fork(): after it, only async-signal-safe calls.
struct ChildPlan {
  std::vector<std::string> env_storage;
  std::vector<std::string> argv_storage;
  std::vector<char*> envp;
  std::vector<char*> argv;
  int netns_fd = -1;
  const char* stdin_path = "/dev/null";
  const char* output_path = nullptr;  // stdout and stderr go to this file instead of pipes
  bool die_with_parent = true;
  pid_t parent = 0;
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int status_pipe[2] = {-1, -1};  // the child writes {stage, errno} when it cannot exec
};

// Filled in place: `envp` and `argv` point into the storage vectors.
void prepare_child(const SpawnOptions& options, ChildPlan& plan) {
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    bool overridden = false;
    for (const auto& [key, value] : options.env) {
      if (entry.compare(0, key.size() + 1, key + "=") == 0) {
        overridden = true;
      }
    }
    if (!overridden) {
      plan.env_storage.push_back(std::move(entry));
    }
  }
  for (const auto& [key, value] : options.env) {
    plan.env_storage.push_back(key + "=" + value);
  }
  for (auto& entry : plan.env_storage) {
    plan.envp.push_back(entry.data());
  }
  plan.envp.push_back(nullptr);
  plan.argv_storage = options.argv;
  for (auto& arg : plan.argv_storage) {
    plan.argv.push_back(arg.data());
  }
  plan.argv.push_back(nullptr);

  if (!options.netns_path.empty()) {
    plan.netns_fd = ::open(options.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (plan.netns_fd < 0) {
      throw SpawnError(fmt::format("cannot run {}: network namespace {} is gone ({})",
                                   options.argv[0], options.netns_path, std::strerror(errno)));
    }
  }
  if (::pipe2(plan.out_pipe, O_CLOEXEC) != 0 || ::pipe2(plan.err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(plan.status_pipe, O_CLOEXEC) != 0) {
    throw SpawnError(fmt::format("cannot run {}: pipe: {}", options.argv[0], std::strerror(errno)));
  }
  if (!options.stdin_file.empty()) {
    plan.stdin_path = options.stdin_file.c_str();
  }
  plan.output_path = options.output_file.empty() ? nullptr : options.output_file.c_str();
  plan.die_with_parent = !options.may_outlive_ernicctl;
  plan.parent = ::getpid();
}

// The child's side of fork(): async-signal-safe calls only, then exec.
[[noreturn]] void become_child(const ChildPlan& plan) {
  // Own process group: a terminal Ctrl-C reaches ernicctl only, which then stops children in
  // order; and the orchestrator can kill everything a command started.
  ::setpgid(0, 0);
  // Die with ernicctl even when it is killed outright.
  if (plan.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != plan.parent) {
      ::_exit(127);
    }
  }
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    if (signal_number != SIGKILL && signal_number != SIGSTOP) {
      ::signal(signal_number, SIG_DFL);
    }
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int status_fd = plan.status_pipe[1];
  if (plan.netns_fd >= 0 && ::setns(plan.netns_fd, CLONE_NEWNET) != 0) {
    child_fail(status_fd, 1);
  }
  int in = ::open(plan.stdin_path, O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    child_fail(status_fd, 2);
  }
  install_fd(in, 0);
  if (plan.output_path != nullptr) {
    int out = ::open(plan.output_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) {
      child_fail(status_fd, 4);
    }
    install_fd(out, 1);
    install_fd(out, 2);
  } else {
    ::dup2(plan.out_pipe[1], 1);
    ::dup2(plan.err_pipe[1], 2);
  }
  ::execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
  child_fail(status_fd, 3);
}

// Throws SpawnError when the child reported, before exec, why it could not run `program`.
void throw_if_child_failed(ChildPlan& plan, pid_t pid, const std::string& program) {
  int payload[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(plan.status_pipe[0], payload, sizeof payload);
  } while (n < 0 && errno == EINTR);
  ::close(plan.status_pipe[0]);
  if (n != sizeof payload) {
    return;  // exec succeeded: the close-on-exec pipe closed with nothing written
  }
  ::waitpid(pid, nullptr, 0);
  ::close(plan.out_pipe[0]);
  ::close(plan.err_pipe[0]);
  const char* stage = payload[0] == 1   ? "cannot enter network namespace"
                      : payload[0] == 2 ? "cannot open standard input"
                      : payload[0] == 4 ? "cannot open its output file"
                                        : "cannot execute";
  std::string hint = payload[1] == ENOENT && payload[0] == 3 ? " (not found in PATH)" : "";
  throw SpawnError(
      fmt::format("cannot run {}: {}: {}{}", program, stage, std::strerror(payload[1]), hint));
}

}  // namespace

std::unique_ptr<Subprocess> Subprocess::spawn(const SpawnOptions& options,
                                              OutputCallback on_output) {
  if (options.argv.empty()) {
    throw SpawnError("empty command");
  }
  if (options.may_outlive_ernicctl && options.output_file.empty()) {
    throw std::logic_error("a process that may outlive ernicctl needs an output file");
  }
  ChildPlan plan;
  prepare_child(options, plan);

  // Signals stay blocked from fork until the child has reset its handlers: a signal sent right
  // away (Ctrl-C, a stop) never runs ernicctl's handlers in the child.
  sigset_t all_signals;
  sigset_t previous_mask;
  sigfillset(&all_signals);
  ::pthread_sigmask(SIG_SETMASK, &all_signals, &previous_mask);
  pid_t pid = ::fork();
  if (pid != 0) {
    int fork_error = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
    errno = fork_error;
  }
  if (pid < 0) {
    throw SpawnError(fmt::format("cannot run {}: fork: {}", options.argv[0], std::strerror(errno)));
  }
  if (pid == 0) {
    become_child(plan);
  }

  ::close(plan.out_pipe[1]);
  ::close(plan.err_pipe[1]);
  ::close(plan.status_pipe[1]);
  if (plan.netns_fd >= 0) {
    ::close(plan.netns_fd);
  }
  throw_if_child_failed(plan, pid, options.argv[0]);

  auto process = std::unique_ptr<Subprocess>(new Subprocess());
  process->pid_ = pid;
  process->pidfd_ = open_pidfd(pid);
  process->on_output_ = std::move(on_output);
  process->may_outlive_ = options.may_outlive_ernicctl;
  if (plan.output_path != nullptr) {
    // The pipes' write ends went to nobody: the reader would only see end of file.
    ::close(plan.out_pipe[0]);
    ::close(plan.err_pipe[0]);
    process->output_done_ = true;
    return process;
  }
  int out_fd = plan.out_pipe[0];
  int err_fd = plan.err_pipe[0];
  process->reader_ =
      std::thread([p = process.get(), out_fd, err_fd] { p->read_output(out_fd, err_fd); });
  return process;
}

void Subprocess::read_output(int out_fd, int err_fd) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_count = 2;
  char buffer[65536];
  while (open_count > 0) {
    int ready = ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
        continue;
      }
      std::string_view data(buffer, static_cast<std::size_t>(got));
      if (on_output_) {
        on_output_(i == 1, data);
      }
      {
        std::lock_guard lock(mutex_);
        (i == 0 ? stdout_ : stderr_).append(data);
      }
      output_changed_.notify_all();
    }
  }
  for (auto& fd : fds) {
    if (fd.fd >= 0) {
      ::close(fd.fd);
    }
  }
  {
    std::lock_guard lock(mutex_);
    output_done_ = true;
  }
  output_changed_.notify_all();
}

void Subprocess::release() {
  if (!may_outlive_) {
    throw std::logic_error("only a process spawned with may_outlive_ernicctl can be released");
  }
  released_ = true;
}

Subprocess::~Subprocess() {
  if (released_) {
    if (pidfd_ >= 0) {
      ::close(pidfd_);
    }
    return;
  }
  if (!reaped_) {
    signal_group(SIGKILL);
    reap_if_exited(true);
  }
  // Descendants that outlived the leader still hold the pipes: they go with the group, and the
  // reader then reaches end of file.
  ::kill(-pid_, SIGKILL);
  if (reader_.joinable()) {
    reader_.join();
  }
  if (pidfd_ >= 0) {
    ::close(pidfd_);
  }
}

void Subprocess::reap_if_exited(bool block) {
  if (reaped_) {
    return;
  }
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == pid_) {
    reaped_ = true;
    if (WIFEXITED(status)) {
      exit_code_ = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      term_signal_ = WTERMSIG(status);
    }
  }
}

bool Subprocess::running() {
  reap_if_exited(false);
  return !reaped_;
}

Subprocess::WaitEnd Subprocess::wait_until(Clock::time_point deadline, bool interruptible) {
  for (;;) {
    reap_if_exited(false);
    if (reaped_) {
      return WaitEnd::kExited;
    }
    if (interruptible && Interrupt::requested()) {
      return WaitEnd::kInterrupted;
    }
    if (Clock::now() >= deadline) {
      return WaitEnd::kDeadline;
    }
    pollfd fds[2] = {{pidfd_, POLLIN, 0}, {Interrupt::wake_fd(), POLLIN, 0}};
    ::poll(fds, interruptible ? 2 : 1, poll_timeout_ms(deadline));
  }
}

bool Subprocess::wait_for_line(const std::regex& pattern, Clock::time_point deadline) {
  std::size_t scanned[2] = {0, 0};
  std::unique_lock lock(mutex_);
  for (;;) {
    for (int i = 0; i < 2; ++i) {
      const std::string& text = i == 0 ? stdout_ : stderr_;
      std::size_t newline;
      while ((newline = text.find('\n', scanned[i])) != std::string::npos) {
        if (std::regex_search(text.begin() + static_cast<std::ptrdiff_t>(scanned[i]),
                              text.begin() + static_cast<std::ptrdiff_t>(newline), pattern)) {
          return true;
        }
        scanned[i] = newline + 1;
      }
    }
    if (output_done_ || Interrupt::requested() || Clock::now() >= deadline) {
      return false;
    }
    // Bounded slices so that Ctrl-C and a process exiting without output are noticed.
    auto slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(50));
    output_changed_.wait_until(lock, slice);
    lock.unlock();
    bool alive = running();
    lock.lock();
    if (!alive && output_done_) {
      continue;  // scan what arrived last, then return
    }
  }
}

void Subprocess::signal_group(int signal_number) {
  if (!reaped_) {
    ::kill(-pid_, signal_number);
  }
}

void Subprocess::terminate(std::chrono::milliseconds grace) {
  if (running()) {
    signal_group(SIGTERM);
    if (wait_until(Clock::now() + grace, false) != WaitEnd::kExited) {
      signal_group(SIGKILL);
    }
  }
  reap_if_exited(true);
  // Whatever the leader left behind in its group goes too.
  ::kill(-pid_, SIGKILL);
}

std::string Subprocess::stdout_text() {
  std::lock_guard lock(mutex_);
  return stdout_;
}

std::string Subprocess::stderr_text() {
  std::lock_guard lock(mutex_);
  return stderr_;
}

void Subprocess::finish_output(std::chrono::milliseconds limit) {
  std::unique_lock lock(mutex_);
  output_changed_.wait_for(lock, limit, [this] { return output_done_; });
}

bool process_running(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) {
    return false;
  }
  std::string stat = read_file_text(fmt::format("/proc/{}/stat", pid));
  auto paren = stat.rfind(')');
  return !(paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
}

std::string process_command_line(pid_t pid) {
  return read_file_text(fmt::format("/proc/{}/cmdline", pid));
}

}  // namespace ernic
