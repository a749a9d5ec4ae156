// `ernicctl down`: removes what `up` started, and whatever killed runs left. Everything a run
// creates carries its token, so run/leftovers.cc finds it without a state; the state adds the
// instances `up` recorded (their sockets may be anywhere, instances placed on other machines
// are stopped there over SSH) and the files it linked.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "base/subprocess.h"
#include "commands/bringup/bringup_state.h"
#include "emulators/instance_machines.h"
#include "run/leftovers.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

// This machine's libvirt daemon, and every one the state's guests live under (their `uri`
// facts): a remote host keeps what a killed run made there until `down` asks it.
std::vector<std::string> libvirt_uris_of(const std::optional<UpState>& state) {
  std::vector<std::string> uris{"qemu:///system"};
  if (state) {
    for (const auto& host : state->hosts) {
      if (host.facts.contains("uri")) {
        uris.push_back(host.fact("uri"));
      }
    }
  }
  return uris;
}

// The instances `up` recorded, when they still run: found by name only if their sockets are in
// the run's default directory, and an external server may have been given another one. A pid
// counts only while its command line still names the instance's socket (pids get reused).
void add_recorded_instances(const UpState& state, LeftoverScan& scan) {
  const std::string& token = state.run_token;
  if (scan.live_tokens.contains(token)) {
    return;
  }
  for (const auto& instance : state.instances) {
    if (instance.pid <= 0 || instance.socket.empty() || instance.remote) {
      continue;  // an instance on another machine has another machine's pid
    }
    const pid_t pid = instance.pid;
    std::string pid_text = std::to_string(pid);
    bool found = std::any_of(scan.found.begin(), scan.found.end(), [&](const Leftover& item) {
      return item.kind == "process" && item.name == pid_text;
    });
    if (!found && process_running(pid) &&
        process_command_line(pid).find(instance.socket) != std::string::npos) {
      scan.found.insert(scan.found.begin(), Leftover{token, "process", pid_text});
    }
  }
}

constexpr auto kStopGrace = std::chrono::milliseconds(2000);

// The instances `up` left on other machines, stopped over a login to each (TERM to the process
// group, KILL after a grace period), their logs and stats copied into the up run's directory
// and their directory there (token file, sockets) removed. Errors name the machines not
// reached; their instances are not in `done`, so the state kept for a later `down` has them.
struct RemoteStops {
  std::vector<std::string> errors;
  std::set<int> done;  // ids
  int stopped = 0;
};

RemoteStops stop_remote_instances(const UpState& state, bool list_only) {
  RemoteStops result;
  // Workers before the manager (the manager's machine last): a worker whose manager is gone
  // ends by itself, and what it had to say is then not down's report.
  std::vector<std::pair<std::string, std::vector<RemoteInstance>>> by_machine;
  for (auto it = state.instances.rbegin(); it != state.instances.rend(); ++it) {
    if (const auto& remote = it->remote) {
      auto machine = std::find_if(by_machine.begin(), by_machine.end(),
                                  [&](const auto& known) { return known.first == remote->on; });
      if (machine == by_machine.end()) {
        machine = by_machine.insert(by_machine.end(), {remote->on, {}});
      }
      machine->second.push_back(*remote);
    }
  }
  const fs::path kept = fs::path(state.run_dir.empty() ? "." : state.run_dir) / "emulator";
  for (const auto& [on, instances] : by_machine) {
    if (list_only) {
      for (const auto& remote : instances) {
        fmt::print("{}  emulator {} in {} on {}\n", state.run_token, remote.describe(), remote.dir,
                   on);
      }
      continue;
    }
    try {
      auto host = reconnect(instances.front());
      std::vector<std::string> files;
      for (const auto& remote : instances) {
        bool was_running = stop_remote_group(*host, remote.pid, remote.socket, kStopGrace);
        fmt::print("{} emulator {}\n",
                   was_running ? "stopped" : "already gone:", remote.describe());
        result.stopped += was_running ? 1 : 0;
        files.insert(files.end(), {remote.log, remote.stats});
      }
      fs::create_directories(kept);
      collect_and_remove(*host, on, instances.front().dir, kept, files);
      for (const auto& remote : instances) {
        result.done.insert(remote.id);
      }
      fmt::print("removed {} on {} (token file, sockets)\n", instances.front().dir, on);
    } catch (const std::exception& e) {
      result.errors.push_back(
          fmt::format("emulator instances on {} not stopped: {}", on, e.what()));
    }
  }
  return result;
}

int down(const StateFlags& flags, bool list_only) {
  auto state = read_state(flags);
  // First the instances on other machines: this machine's scan must not mistake them for its
  // own leftovers (machines simulated by namespaces share this process table).
  RemoteStops remote = state ? stop_remote_instances(*state, list_only) : RemoteStops{};
  // Everything of the run `up` started, and of every run whose ernicctl is gone.
  LeftoverScan scan = find_leftovers({}, libvirt_uris_of(state));
  if (state) {
    add_recorded_instances(*state, scan);
  }
  for (const auto& note : scan.notes) {
    std::cerr << "note: " << note << "\n";
  }
  scan.errors.insert(scan.errors.end(), remote.errors.begin(), remote.errors.end());
  for (const auto& error : scan.errors) {
    std::cerr << "error: " << error << "\n";
  }
  for (const auto& token : scan.live_tokens) {
    std::cerr << fmt::format("left alone: run {} is still going\n", token);
  }
  if (list_only) {
    for (const auto& item : scan.found) {
      fmt::print("{}  {}\n", item.token, item.describe());
    }
    return scan.errors.empty() ? kExitOk : kExitFailed;
  }
  int failures = 0;
  std::set<std::string> failed;
  remove_leftovers(scan.found, "qemu:///system", [&](const Leftover& item, const std::string& why) {
    ++failures;
    failed.insert(item.describe());
    std::cerr << fmt::format("could not remove {}: {}\n", item.describe(), why);
  });
  for (const auto& item : scan.found) {
    if (!failed.contains(item.describe())) {
      fmt::print("removed {} (run {})\n", item.describe(), item.token);
    }
  }
  if (state && !scan.errors.empty()) {
    // It names the hosts not reached: the next `down` tries them again, and only the instances
    // not stopped.
    std::vector<ManifestInstance> left;
    for (const auto& instance : state->instances) {
      if (!remote.done.contains(instance.id)) {
        left.push_back(instance);
      }
    }
    state->instances = std::move(left);
    write_up_state(state_file(flags), *state);
    std::cerr << fmt::format("state kept in {}: run `ernicctl down` again once they answer\n",
                             state_file(flags).string());
  } else if (state) {
    remove_instance_files(*state);
    std::error_code ignored;
    fs::remove(manifest_file(flags), ignored);
    fs::remove(state_file(flags), ignored);
  }
  fmt::print("down: {} removed{}{}\n", scan.found.size() - static_cast<std::size_t>(failures),
             remote.stopped > 0
                 ? fmt::format(", {} emulator instances stopped on other machines", remote.stopped)
                 : "",
             failures > 0 ? fmt::format(", {} could not be", failures) : "");
  return failures > 0 || !scan.errors.empty() ? kExitFailed : kExitOk;
}

}  // namespace

void register_down_command(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<StateFlags>();
  auto list_only = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand(
      "down",
      "Remove what `up` started, and whatever killed runs left (processes, namespaces, "
      "domains, networks, pools, socket directories); live runs are left alone");
  command->add_flag("--list", *list_only, "Only print what would be removed");
  add_state_option(command, *flags);
  command->callback([flags, list_only, &context] {
    run_guarded(context, [&] { return down(*flags, *list_only); });
  });
}

}  // namespace ernic
