// The ernicctl binary run as a separate process by the emulator's tests, the way the
// orchestrator runs instances and load generators.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "supervisor.h"

namespace ernic::emu {

// Waits (observing every few milliseconds, at most `limit`) until `done()` holds; returns whether
// it did.
template <typename Done>
bool observe(Done done, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A TCP port for a test's out-of-band listener: below the kernel's ephemeral range (32768 and
// up, where any program's outgoing connection may hold a port) and above the blocks ernicctl
// runs reserve (20000-27999); spread by pid, so concurrent test processes differ.
inline std::string port_for_test(int offset) {
  return std::to_string(28000 + (getpid() * 11 + offset) % 4000);
}

// Starts `ernicctl args...` with stdout and stderr appended to `output`.
inline pid_t spawn_ernicctl(const std::vector<std::string>& args,
                            const std::filesystem::path& output) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(ERNIC_BINARY)};
    for (const auto& a : args) {
      argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    if (std::freopen(output.c_str(), "a", stdout) == nullptr) {
      _exit(126);
    }
    dup2(1, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// The exit status of `pid`, or -1 when it was killed or had to be killed after `limit`.
inline int wait_exit(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Starts a manager and count - 1 workers of this build's ernicctl, their files in `dir`.
inline void start_instances(Supervisor& supervisor, const std::filesystem::path& dir, int count,
                            const std::string& token, std::vector<std::string> extra_args = {}) {
  SupervisorConfig config;
  config.extra_args = std::move(extra_args);
  config.executable = ERNIC_BINARY;
  config.instances = count;
  config.token = token;
  config.dir = dir;
  supervisor.start(config);
}

}  // namespace ernic::emu
