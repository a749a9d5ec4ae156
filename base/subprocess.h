#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace ernic {

// The program could not be started at all (not found, not executable, namespace gone).
class SpawnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SpawnOptions {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // added to this process's environment
  // Network namespace to run in: a path such as /run/netns/NAME; empty for this namespace.
  std::string netns_path;
  // Standard input: empty means /dev/null.
  std::string stdin_file;
  // When set, stdout and stderr are appended to this file instead of being read by ernicctl
  // (stdout_text() stays empty): a process that may outlive ernicctl must not write into a pipe
  // nobody reads any more.
  std::string output_file;
  // Whether the process may run on after ernicctl exits (see Subprocess::release()); otherwise
  // it is killed when ernicctl dies, even by SIGKILL. Needs output_file.
  bool may_outlive_ernicctl = false;
};

// A child process in its own process group, with stdout and stderr drained by a reader thread
// into memory and to a callback as they arrive. Nothing here sleeps: waits block on the
// process's pidfd, the interrupt descriptor and the deadline.
class Subprocess {
 public:
  using OutputCallback = std::function<void(bool is_stderr, std::string_view data)>;

  // Throws SpawnError naming the program and the reason.
  static std::unique_ptr<Subprocess> spawn(const SpawnOptions& options, OutputCallback on_output);
  ~Subprocess();  // kills the process group if it still runs, and reaps it
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();

  enum class WaitEnd { kExited, kDeadline, kInterrupted };
  // Blocks until the process exits, the deadline passes or (when `interruptible`) Ctrl-C.
  WaitEnd wait_until(std::chrono::steady_clock::time_point deadline, bool interruptible = true);
  // Waits until `pattern` matches a complete line of output. False on exit, deadline or Ctrl-C.
  bool wait_for_line(const std::regex& pattern, std::chrono::steady_clock::time_point deadline);

  // Stops owning the process: the destructor leaves it running (`ernicctl up`). Only for a
  // process spawned with may_outlive_ernicctl.
  void release();
  bool may_outlive_ernicctl() const { return may_outlive_; }

  // Sends `signal_number` to the whole process group.
  void signal_group(int signal_number);
  // SIGTERM, up to `grace`, then SIGKILL; returns once reaped.
  void terminate(std::chrono::milliseconds grace);

  // Valid after exit.
  int exit_code() const { return exit_code_; }
  int term_signal() const { return term_signal_; }

  // Output collected so far (all of it once the process exited and the reader finished).
  std::string stdout_text();
  std::string stderr_text();
  // Waits (bounded) for the reader to reach end of file after exit, so the texts are complete.
  void finish_output(std::chrono::milliseconds limit = std::chrono::milliseconds(2000));

 private:
  Subprocess() = default;
  void reap_if_exited(bool block);
  void read_output(int out_fd, int err_fd);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  bool reaped_ = false;
  bool may_outlive_ = false;
  bool released_ = false;
  int exit_code_ = -1;
  int term_signal_ = 0;
  OutputCallback on_output_;

  std::mutex mutex_;
  std::condition_variable output_changed_;
  std::string stdout_;
  std::string stderr_;
  bool output_done_ = false;
  std::thread reader_;
};

// Whether `pid` runs: exists and is not a zombie (an orphan's zombie lasts until the machine's
// init reaps it, which some container inits do late).
bool process_running(pid_t pid);
// Its command line, arguments separated by NULs; empty when it is gone.
std::string process_command_line(pid_t pid);

}  // namespace ernic
