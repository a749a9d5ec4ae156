// `ernicctl status`: what `up` left and whether it still runs. Each host's provider judges its
// own hosts (a namespace still there, a domain still active); instances are judged by their
// process and socket, over a login to its machine for one placed on another (`on: HOST`).
#include <fmt/format.h>

#include <iostream>

#include "base/subprocess.h"
#include "commands/bringup/bringup_state.h"
#include "emulators/instance_machines.h"
#include "hosts/provider.h"
#include "run/leftovers.h"
#include "scenario/platform.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string host_condition(const UpHost& host, const Platform& platform) {
  const HostProvider* provider = platform.provider(host.provider);
  if (provider == nullptr) {
    return "unknown";
  }
  return provider->host_condition(host.facts);
}

struct HostStatus {
  const UpHost* host = nullptr;
  std::string state;
};

struct InstanceStatus {
  const ManifestInstance* instance = nullptr;
  std::string state;
  std::optional<std::string> error;                         // unreachable machine
  std::optional<std::map<std::string, std::string>> stats;  // read on its machine
};

struct StatusReport {
  const UpState* state = nullptr;
  std::vector<HostStatus> hosts;
  std::vector<InstanceStatus> instances;
  bool up = true;
};

// An instance on another machine: its state and stats there, through one login per machine.
void add_remote_status(const RemoteInstance& remote,
                       std::map<std::string, std::unique_ptr<Host>>& machines,
                       InstanceStatus& status) {
  try {
    auto& host = machines[remote.on];
    if (host == nullptr) {
      host = reconnect(remote);
    }
    status.state = remote_condition(*host, remote);
    status.stats = remote_stats(*host, remote.stats);
  } catch (const std::exception& e) {
    status.state = "unreachable";
    status.error = e.what();
  }
}

StatusReport current_status(const UpState& state, const Platform& platform) {
  StatusReport report{.state = &state};
  for (const auto& host : state.hosts) {
    std::string condition = host_condition(host, platform);
    report.up = report.up && condition != "gone" && condition != "stopped";
    report.hosts.push_back(HostStatus{.host = &host, .state = condition});
  }
  std::map<std::string, std::unique_ptr<Host>> machines;
  for (const auto& instance : state.instances) {
    InstanceStatus entry{.instance = &instance};
    if (instance.remote) {
      add_remote_status(*instance.remote, machines, entry);
    } else {
      bool running = process_running(instance.pid);
      bool socket = fs::exists(instance.socket);
      entry.state = running && socket ? "up" : running ? "no socket" : "gone";
    }
    report.up = report.up && entry.state == "up";
    report.instances.push_back(std::move(entry));
  }
  return report;
}

// `status --json`: the fields and types it had when it was built as JSON directly.
json report_json(const StatusReport& report) {
  const UpState& state = *report.state;
  json out = {
      {"name", state.name},
      {"run_token", state.run_token},
      {"run_dir", state.run_dir},
      {"up_since", state.up_since.value_or("")},
      {"attached_runs", state.attached_runs.value_or(0)},
      {"last_attached_run", state.last_attached_run ? json(*state.last_attached_run) : json()},
      {"hosts", json::array()},
      {"instances", json::array()},
      {"up", report.up}};
  for (const auto& [host, condition] : report.hosts) {
    out["hosts"].push_back({{"name", host->name},
                            {"provider", host->provider},
                            {"address", host->address},
                            {"instance", host->fact("emulator_instance")},
                            {"state", condition}});
  }
  for (const auto& status : report.instances) {
    const ManifestInstance& instance = *status.instance;
    json entry = {{"id", instance.id},
                  {"role", instance.role},
                  {"on", instance.on.value_or(kThisMachine)},
                  {"pid", instance.pid},
                  {"socket", instance.socket},
                  {"state", status.state}};
    if (status.error) {
      entry["error"] = *status.error;
    }
    if (status.stats) {
      entry["stats"] = *status.stats;
    }
    out["instances"].push_back(std::move(entry));
  }
  return out;
}

std::string stat_or_unknown(const std::map<std::string, std::string>& stats, const char* key) {
  auto it = stats.find(key);
  return it == stats.end() ? "?" : it->second;
}

void print_status(const StatusReport& report) {
  const UpState& state = *report.state;
  const std::string since = state.up_since.value_or("");
  fmt::print("{} (run {}): {}{}\n", state.name, state.run_token, report.up ? "up" : "partly down",
             since.empty() ? "" : ", since " + since);
  for (const auto& [host, condition] : report.hosts) {
    const std::string instance = host->fact("emulator_instance");
    fmt::print("  host {:<10} {:<9} {:<16} {}{}\n", host->name, host->provider, host->address,
               condition, instance.empty() ? "" : ", attached to instance " + instance);
  }
  for (const auto& status : report.instances) {
    const ManifestInstance& instance = *status.instance;
    const std::string on = instance.on.value_or(kThisMachine);
    std::string details = on == kThisMachine ? "" : " on " + on;
    if (status.error) {
      details += ": " + *status.error;
    }
    if (status.stats) {
      details += fmt::format(", mesh peers {}, clients {}, {} bytes sent",
                             stat_or_unknown(*status.stats, "mesh_peers"),
                             stat_or_unknown(*status.stats, "clients"),
                             stat_or_unknown(*status.stats, "bytes_sent"));
    }
    fmt::print("  instance {} {:<8} pid {:<8} {}{}\n", instance.id, instance.role, instance.pid,
               status.state, details);
  }
  if (const auto& last = state.last_attached_run) {
    fmt::print("  attached runs: {}, the last {} at {}: {}\n", state.attached_runs.value_or(0),
               last->status, last->started, last->run_dir);
  } else {
    fmt::print("  no attached run yet: ernicctl run SCENARIO --attach\n");
  }
}

int status(const StateFlags& flags, bool as_json, const Platform& platform) {
  auto state = read_state(flags);
  if (!state) {
    if (as_json) {
      std::cout << json{{"up", false}, {"hosts", json::array()}, {"instances", json::array()}}
                << "\n";
    } else {
      std::cerr << fmt::format("nothing is up ({} does not exist): ernicctl up SCENARIO\n",
                               state_file(flags).string());
    }
    return kExitBadInput;
  }
  StatusReport report = current_status(*state, platform);
  if (as_json) {
    std::cout << report_json(report).dump(2) << "\n";
  } else {
    print_status(report);
  }
  return report.up ? kExitOk : kExitFailed;
}

}  // namespace

void register_status_command(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<StateFlags>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand(
      "status", "What `ernicctl up` left running and whether it still runs (exit 0 when all)");
  command->add_flag("--json", *as_json, "Print JSON");
  add_state_option(command, *flags);
  command->callback([flags, as_json, &context] {
    run_guarded(context, [&] { return status(*flags, *as_json, *context.platform); });
  });
}

}  // namespace ernic
