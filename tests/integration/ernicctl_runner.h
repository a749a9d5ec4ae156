#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/subprocess.h"

// Runs the ernicctl binary under test and collects what it printed.
struct Invocation {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline Invocation run_ernicctl(const std::vector<std::string>& args,
                               const std::vector<std::pair<std::string, std::string>>& env = {},
                               std::chrono::seconds limit = std::chrono::seconds(120)) {
  std::vector<std::string> argv = {ERNIC_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto process =
      ernic::Subprocess::spawn({.argv = argv, .env = env, .netns_path = "", .stdin_file = ""}, {});
  if (process->wait_until(std::chrono::steady_clock::now() + limit, false) !=
      ernic::Subprocess::WaitEnd::kExited) {
    process->terminate(std::chrono::milliseconds(2000));
  }
  process->finish_output();
  return {process->exit_code(), process->stdout_text(), process->stderr_text()};
}

// Network namespaces that exist now.
inline std::vector<std::string> namespaces() {
  std::vector<std::string> names;
  if (std::filesystem::exists("/run/netns")) {
    for (const auto& entry : std::filesystem::directory_iterator("/run/netns")) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Processes whose command name is `name`.
inline int count_processes(const std::string& name) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream comm(entry.path() / "comm");
    std::string command;
    if (comm && std::getline(comm, command) && command == name) {
      ++count;
    }
  }
  return count;
}

inline std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("ernic-it-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
