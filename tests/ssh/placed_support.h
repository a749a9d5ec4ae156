// What the placed-instance tests share: the processes of a run's instances, found in this
// machine's process table (the namespaces that stand for machines share it).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/file_text.h"
#include "sshd_fixture.h"

namespace ernic::testing {

// A process's arguments joined by spaces; empty when it is gone.
inline std::string command_line(pid_t pid) {
  std::string line =
      read_file_text(std::filesystem::path("/proc") / std::to_string(pid) / "cmdline");
  std::replace(line.begin(), line.end(), '\0', ' ');
  return line;
}

struct FoundProcess {
  pid_t pid = 0;  // 0: none was found
  // As it was when the process was found: read again after a signal, it can already be empty.
  std::string command_line;
};

// Processes whose command line contains both `needle` and `also`.
inline std::vector<FoundProcess> processes_with(const std::string& needle,
                                                const std::string& also) {
  std::vector<FoundProcess> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stoi(name));
    const std::string line = command_line(pid);
    if (line.find(needle) != std::string::npos && line.find(also) != std::string::npos) {
      found.push_back({pid, line});
    }
  }
  return found;
}

// Waits until a process whose command line holds `needle` and `also` exists (or `run` ended);
// pid 0 when none appeared before it ended or a minute passed.
inline FoundProcess wait_for_process(const std::string& needle, const std::string& also,
                                     pid_t run) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up &&
         wait_program(run, std::chrono::milliseconds(10)) == -1) {
    if (auto found = processes_with(needle, also); !found.empty()) {
      return found.front();
    }
  }
  return {};
}

// The run's token in an instance's command line (its socket /tmp/ernic-TOKEN-HOST/ernicN.sock);
// empty when there is none.
inline std::string run_token_in(const std::string& command_line) {
  const auto at = command_line.find("/tmp/ernic-");
  return at == std::string::npos ? "" : command_line.substr(at + 11, 6);
}

// Waits up to `limit` for `run` to end; past it, kills it. Its exit status, -1 when it was killed.
inline int wait_or_kill(pid_t run, std::chrono::milliseconds limit) {
  int status = wait_program(run, limit);
  if (status == -1) {
    ::kill(run, SIGKILL);
    wait_program(run, std::chrono::seconds(5));
  }
  return status;
}

// Two machines (namespaces with their own sshd) joined by a link this namespace cannot reach;
// scenarios with hosts A (link address a, instance 1) and B (link address b, instance 2).
struct TwoMachineFixture {
  TwoMachineFixture() {
    std::ofstream(known_hosts()) << a.sshd.known_hosts_line() << "\n"
                                 << b.sshd.known_hosts_line() << "\n";
  }
  std::filesystem::path work() const { return a.sshd.directory(); }
  std::filesystem::path known_hosts() const { return work() / "both_known_hosts"; }

  std::string host_entry(const std::string& name, const std::string& address,
                         const SshdServer& sshd, int instance) const {
    return "  - name: " + name + "\n    provider: ssh\n    address: " + address +
           "\n    instance: " + std::to_string(instance) + "\n    ssh: {host: " + sshd.address() +
           ", user: root, key: " + sshd.client_key().string() +
           ", known_hosts: " + known_hosts().string() +
           ", connect_timeout: 5s, keepalive: 2s, alive_timeout: 3s}\n";
  }
  // WORK/NAME.yaml with `emulator` (a whole `emulator:` section), hosts A and B and `benchmarks`
  // (the entries under `benchmarks:`); its path.
  std::string write_scenario(const std::string& name, const std::string& emulator,
                             const std::string& benchmarks) const {
    std::string text = "version: 1\nname: " + name + "\nrunner: local\n" + emulator + "hosts:\n" +
                       host_entry("A", link.a_address(), a.sshd, 1) +
                       host_entry("B", link.b_address(), b.sshd, 2) + "benchmarks:\n" + benchmarks +
                       "history: {path: " + (work() / "history.jsonl").string() + "}\n";
    std::ofstream(work() / (name + ".yaml")) << text;
    return (work() / (name + ".yaml")).string();
  }
  std::vector<std::string> run_args(const std::string& file) const {
    return {ERNIC_BINARY, "run", file, "--runs-dir", (work() / "runs").string()};
  }
  std::filesystem::path run_dir() const {
    for (const auto& entry : std::filesystem::directory_iterator(work() / "runs")) {
      return entry.path();
    }
    return {};
  }

  SshdInNamespace a;
  SshdInNamespace b;
  NamespaceLink link{a.ns, b.ns};
};

}  // namespace ernic::testing
