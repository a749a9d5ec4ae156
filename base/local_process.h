#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ernic {

// A program run on this machine (the build host), not on a scenario host: the image builder
// and the libvirt tooling need debootstrap, qemu-img, ssh-keygen and the libvirt daemons here.
struct LocalProcessResult {
  int exit_code = -1;  // meaningful when term_signal == 0
  int term_signal = 0;
  bool timed_out = false;
  bool interrupted = false;
  std::string output;  // stdout and stderr interleaved, as a user would have seen them

  bool ok() const { return !timed_out && !interrupted && term_signal == 0 && exit_code == 0; }
  // "exit status 1", "timed out after 600 s", "killed by signal 9", "interrupted"
  std::string describe() const;
  // The last `lines` lines of output, for error messages.
  std::string tail(std::size_t lines = 15) const;
};

struct LocalProcessOptions {
  std::chrono::seconds timeout{0};  // 0: none
  // Output is also appended here when set, so a long build leaves a log to read.
  std::filesystem::path log_file;
  std::vector<std::pair<std::string, std::string>> env;  // added to this process's environment
  // Polled while the program runs, like Interrupt::requested(): when it becomes true the
  // program's process group is killed.
  const std::atomic<bool>* stop = nullptr;
};

// Runs argv (argv[0] looked up in PATH, no shell) to completion through Subprocess, in its own
// process group, so that a timeout or an interrupt stops its children too. A program that
// cannot be started reads as exit status 127 with the reason as its output, as from a shell.
LocalProcessResult run_local(const std::vector<std::string>& argv,
                             const LocalProcessOptions& options = {});

// Whether `program` is found in PATH (or is an executable path).
bool local_program_exists(const std::string& program);

}  // namespace ernic
