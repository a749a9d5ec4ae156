#include "image/local_process.h"

#include "common/interrupt.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ernic {
namespace {

using SteadyClock = std::chrono::steady_clock;

void kill_group(pid_t pid, int signal_number) {
  if (::kill(-pid, signal_number) != 0) {
    ::kill(pid, signal_number);
  }
}

// Waits for the child, giving it `grace` after SIGTERM before SIGKILL.
int reap(pid_t pid, bool terminate) {
  int status = 0;
  if (terminate) {
    kill_group(pid, SIGTERM);
    auto deadline = SteadyClock::now() + std::chrono::seconds(5);
    while (SteadyClock::now() < deadline) {
      pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        kill_group(pid, SIGKILL);  // grandchildren that ignored SIGTERM
        return status;
      }
      ::usleep(50'000);
    }
    kill_group(pid, SIGKILL);
  }
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

std::string LocalProcessResult::describe() const {
  if (interrupted) {
    return "interrupted";
  }
  if (timed_out) {
    return "timed out";
  }
  if (term_signal != 0) {
    return fmt::format("killed by signal {} ({})", term_signal, strsignal(term_signal));
  }
  return fmt::format("exit status {}", exit_code);
}

std::string LocalProcessResult::tail(std::size_t lines) const {
  std::size_t end = output.size();
  while (end > 0 && output[end - 1] == '\n') {
    --end;
  }
  std::size_t start = end;
  for (std::size_t seen = 0; start > 0; --start) {
    if (output[start - 1] == '\n' && ++seen == lines) {
      break;
    }
  }
  return output.substr(start, end - start);
}

LocalProcessResult run_local(const std::vector<std::string>& argv,
                             const LocalProcessOptions& options) {
  if (argv.empty()) {
    throw std::invalid_argument("run_local: empty command");
  }
  int out_pipe[2];
  int in_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  std::vector<char*> c_argv;
  for (const auto& arg : argv) {
    c_argv.push_back(const_cast<char*>(arg.c_str()));
  }
  c_argv.push_back(nullptr);

  // Signals stay blocked from fork until the child has reset its handlers, so that a stop
  // sent right away can never run the parent's handlers (Ctrl-C, a test framework's) in the
  // child.
  sigset_t all_signals;
  sigset_t previous_mask;
  sigfillset(&all_signals);
  ::pthread_sigmask(SIG_SETMASK, &all_signals, &previous_mask);
  pid_t pid = ::fork();
  if (pid != 0) {
    ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  }
  if (pid < 0) {
    throw std::runtime_error(fmt::format("cannot fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(out_pipe[1], STDERR_FILENO);
    for (const auto& [key, value] : options.env) {
      ::setenv(key.c_str(), value.c_str(), 1);
    }
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      if (signal_number != SIGKILL && signal_number != SIGSTOP) {
        ::signal(signal_number, SIG_DFL);
      }
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvp(c_argv[0], c_argv.data());
    std::string message = fmt::format("cannot run {}: {}\n", argv[0], std::strerror(errno));
    [[maybe_unused]] auto written = ::write(STDERR_FILENO, message.data(), message.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(out_pipe[1]);
  ::close(in_pipe[0]);
  if (!options.stdin_data.empty()) {
    // Small inputs only (a key, a script): fits the pipe buffer.
    [[maybe_unused]] auto written =
        ::write(in_pipe[1], options.stdin_data.data(), options.stdin_data.size());
  }
  ::close(in_pipe[1]);

  std::ofstream log;
  if (!options.log_file.empty()) {
    log.open(options.log_file, std::ios::app);
    log << "$ ";
    for (const auto& arg : argv) {
      log << arg << ' ';
    }
    log << '\n';
  }

  LocalProcessResult result;
  auto deadline = options.timeout.count() > 0 ? SteadyClock::now() + options.timeout
                                              : SteadyClock::time_point::max();
  bool stop_it = false;
  char buffer[8192];
  while (true) {
    if ((options.stop != nullptr && options.stop->load()) || Interrupt::requested()) {
      result.interrupted = true;
      stop_it = true;
      break;
    }
    if (SteadyClock::now() >= deadline) {
      result.timed_out = true;
      stop_it = true;
      break;
    }
    pollfd fd{out_pipe[0], POLLIN, 0};
    int ready = ::poll(&fd, 1, 200);
    if (ready < 0 && errno != EINTR) {
      break;
    }
    if (ready <= 0) {
      continue;
    }
    ssize_t got = ::read(out_pipe[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;  // every writer closed: the program (and its children) finished
    }
    result.output.append(buffer, static_cast<std::size_t>(got));
    if (log.is_open()) {
      log.write(buffer, got);
      log.flush();
    }
  }
  ::close(out_pipe[0]);
  int status = reap(pid, stop_it);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  if (log.is_open()) {
    log << "# " << result.describe() << "\n";
  }
  return result;
}

bool local_program_exists(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return ::access(program.c_str(), X_OK) == 0;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace ernic
