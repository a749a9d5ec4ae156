#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/file_text.h"
#include "base/subprocess.h"
#include "scratch_dir.h"

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

// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat, counted after
// the command name, which may itself hold spaces and parentheses); 0 when unreadable.
inline unsigned long long process_start_ticks(const std::string& stat) {
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) {
    return 0;
  }
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int index = 3; index < 22 && fields >> field; ++index) {
  }
  unsigned long long ticks = 0;
  fields >> ticks;
  return ticks;
}

// Running processes (zombies do not count: an orphan's zombie lasts until the machine's init
// reaps it, maybe late) for which `matches(pid directory)` holds. Processes older than this test
// binary are not its leftovers (on a shared machine, other jobs run the same tools) and do not
// count.
template <typename Match>
int count_running_processes(Match matches) {
  static const unsigned long long test_started = [] {
    return process_start_ticks(ernic::read_file_text("/proc/self/stat"));
  }();
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::string stat = ernic::read_file_text(entry.path() / "stat");
    auto paren = stat.rfind(')');
    bool zombie = paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
    if (!stat.empty() && !zombie && process_start_ticks(stat) >= test_started &&
        matches(entry.path())) {
      ++count;
    }
  }
  return count;
}

// Running processes whose command name is `name`.
inline int count_processes(const std::string& name) {
  return count_running_processes([&](const std::filesystem::path& proc) {
    std::ifstream comm(proc / "comm");
    std::string command;
    return comm && std::getline(comm, command) && command == name;
  });
}

// Running processes whose command line mentions `text` (a test's own directory: what other
// tests and the machine run does not count).
inline int count_processes_mentioning(const std::string& text) {
  return count_running_processes([&](const std::filesystem::path& proc) {
    return ernic::read_file_text(proc / "cmdline").find(text) != std::string::npos;
  });
}

// The test's own directory, removed when the test is done.
inline ernic::testing::ScratchDir fresh_dir(const std::string& name) {
  return ernic::testing::ScratchDir("ernic-it-" + name);
}
