// `ernicctl status`: what `up` left and whether it still runs. Each host's provider judges its
// own hosts (a namespace still there, a domain still active); instances are judged by their
// process and socket, over a login to its machine for one placed on another (`on: HOST`).
#include <fmt/format.h>

#include <iostream>

#include "commands/bringup/bringup_state.h"
#include "emulators/instance_machines.h"
#include "hosts/provider.h"
#include "platform/platform.h"
#include "run/leftovers.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string host_condition(const json& host, const Platform& platform) {
  const HostProvider* provider = platform.provider(host["provider"].get<std::string>());
  if (provider == nullptr) {
    return "unknown";
  }
  return provider->host_condition(
      host.value("facts", json::object()).get<std::map<std::string, std::string>>());
}

// An instance on another machine: its state and stats there, through one login per machine.
json remote_status(const RemoteInstance& remote,
                   std::map<std::string, std::unique_ptr<Host>>& machines) {
  try {
    auto& host = machines[remote.on];
    if (host == nullptr) {
      host = reconnect(remote);
    }
    return {{"state", remote_condition(*host, remote)},
            {"stats", remote_stats(*host, remote.stats)}};
  } catch (const std::exception& e) {
    return {{"state", "unreachable"}, {"error", e.what()}};
  }
}

json current_status(const json& state, const Platform& platform) {
  json report = {{"name", state["name"]},
                 {"run_token", state["run_token"]},
                 {"run_dir", state["run_dir"]},
                 {"up_since", state.value("up_since", "")},
                 {"attached_runs", state.value("attached_runs", 0)},
                 {"last_attached_run", state.value("last_attached_run", json())},
                 {"hosts", json::array()},
                 {"instances", json::array()}};
  bool all_up = true;
  for (const auto& host : state["hosts"]) {
    std::string condition = host_condition(host, platform);
    all_up = all_up && condition != "gone" && condition != "stopped";
    json facts = host.value("facts", json::object());
    report["hosts"].push_back({{"name", host["name"]},
                               {"provider", host["provider"]},
                               {"address", host["address"]},
                               {"instance", facts.value("emulator_instance", "")},
                               {"state", condition}});
  }
  std::map<std::string, std::unique_ptr<Host>> machines;
  for (const auto& instance : state["instances"]) {
    json entry = {{"id", instance["id"]},
                  {"role", instance["role"]},
                  {"on", instance.value("on", std::string(kThisMachine))},
                  {"pid", instance["pid"]},
                  {"socket", instance["socket"]}};
    if (auto remote = remote_instance_of(instance)) {
      entry.update(remote_status(*remote, machines));
    } else {
      bool running = process_running(instance["pid"].get<pid_t>());
      bool socket = fs::exists(instance["socket"].get<std::string>());
      entry["state"] = running && socket ? "up" : running ? "no socket" : "gone";
    }
    all_up = all_up && entry["state"] == "up";
    report["instances"].push_back(entry);
  }
  report["up"] = all_up;
  return report;
}

void print_status(const json& report) {
  const std::string since = report["up_since"].get<std::string>();
  fmt::print("{} (run {}): {}{}\n", report["name"].get<std::string>(),
             report["run_token"].get<std::string>(),
             report["up"].get<bool>() ? "up" : "partly down",
             since.empty() ? "" : ", since " + since);
  for (const auto& host : report["hosts"]) {
    const std::string instance = host["instance"].get<std::string>();
    fmt::print("  host {:<10} {:<9} {:<16} {}{}\n", host["name"].get<std::string>(),
               host["provider"].get<std::string>(), host["address"].get<std::string>(),
               host["state"].get<std::string>(),
               instance.empty() ? "" : ", attached to instance " + instance);
  }
  for (const auto& instance : report["instances"]) {
    const std::string on = instance["on"].get<std::string>();
    std::string details = on == kThisMachine ? "" : " on " + on;
    if (instance.contains("error")) {
      details += ": " + instance["error"].get<std::string>();
    }
    if (instance.contains("stats")) {
      const json& stats = instance["stats"];
      details +=
          fmt::format(", mesh peers {}, clients {}, {} bytes sent", stats.value("mesh_peers", "?"),
                      stats.value("clients", "?"), stats.value("bytes_sent", "?"));
    }
    fmt::print("  instance {} {:<8} pid {:<8} {}{}\n", instance["id"].get<int>(),
               instance["role"].get<std::string>(), instance["pid"].get<long>(),
               instance["state"].get<std::string>(), details);
  }
  const json& last = report["last_attached_run"];
  if (last.is_object()) {
    fmt::print("  attached runs: {}, the last {} at {}: {}\n", report["attached_runs"].get<int>(),
               last.value("status", "?"), last.value("started", "?"), last.value("run_dir", "?"));
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
  json report = current_status(*state, platform);
  if (as_json) {
    std::cout << report.dump(2) << "\n";
  } else {
    print_status(report);
  }
  return report["up"].get<bool>() ? kExitOk : kExitFailed;
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
