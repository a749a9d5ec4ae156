// `ernicctl up --restart-instances`: the developer's loop after rebuilding the emulator. The
// instances `up` left are stopped and started again from the same scenario, under the same run
// token (so their sockets keep their paths), and the state is rewritten; hosts and guests stay.
#include <fmt/format.h>

#include <iostream>

#include "commands/bringup/bringup_state.h"
#include "commands/commands.h"
#include "emulators/emulator_kind.h"
#include "platform/platform.h"
#include "run/leftovers.h"

namespace ernic {
namespace {
using nlohmann::json;

void stop_recorded_instances(const json& instances) {
  std::vector<Leftover> processes;
  for (const auto& instance : instances) {
    const auto pid = instance.value("pid", pid_t{0});
    // A reused pid is not ours: it counts only while its command line names the socket.
    if (pid > 0 && process_running(pid) &&
        process_command_line(pid).find(instance.value("socket", std::string("\x01"))) !=
            std::string::npos) {
      processes.push_back(Leftover{"", "process", std::to_string(pid)});
    }
  }
  remove_leftovers(processes, "", [](const Leftover& what, const std::string& why) {
    throw std::runtime_error(fmt::format("cannot stop {}: {}", what.describe(), why));
  });
}

// The new instances in the manifest's format, each keeping the guest (`vm`) `up` attached to
// the instance of its id.
json with_guests(json fresh, const json& old) {
  for (auto& instance : fresh) {
    for (const auto& before : old) {
      if (before.value("id", 0) == instance.value("id", -1) && before.contains("vm")) {
        instance["vm"] = before["vm"];
      }
    }
  }
  return fresh;
}

}  // namespace

int restart_instances(const StateFlags& flags, const std::vector<std::string>& sets,
                      const Platform& platform) {
  auto state = read_state_or_say(flags);
  if (!state) {
    return kExitBadInput;
  }
  auto scenario = load_or_report(platform, (*state)["scenario"].get<std::string>(), sets);
  if (!scenario) {
    return kExitBadInput;
  }
  EmulatorKind* kind = platform.emulator_kind(scenario->emulator.kind);
  const json old_instances = state->value("instances", json::array());
  if (kind == nullptr || old_instances.empty()) {
    std::cerr << fmt::format("{} runs no emulator instances: nothing to restart\n", scenario->name);
    return kExitBadInput;
  }
  for (const auto& instance : old_instances) {
    if (instance.contains("remote")) {
      std::cerr << fmt::format(
          "instance {} runs on {}: `--restart-instances` restarts instances on this machine only; "
          "`ernicctl down` and `ernicctl up` again\n",
          instance.value("id", 0), instance["remote"].value("host", "?"));
      return kExitBadInput;
    }
  }
  fmt::print("stopping {} instances of run {}\n", old_instances.size(),
             (*state)["run_token"].get<std::string>());
  stop_recorded_instances(old_instances);

  CleanupStack cleanup;
  EmulatorContext context{.run_dir = (*state)["run_dir"].get<std::string>(),
                          .run_token = (*state)["run_token"].get<std::string>(),
                          .cleanup = &cleanup,
                          .bring_up = true};
  std::unique_ptr<RunningEmulator> started;
  try {
    started = kind->start(scenario->emulator.config, context);
  } catch (const std::exception& e) {
    cleanup.run_all([](const std::string&, const std::string&) {});
    std::cerr << fmt::format(
        "restart failed: {}\nthe hosts are still up; `ernicctl down` "
        "removes them\n",
        e.what());
    return kExitFailed;
  }
  if (!started->detach()) {
    cleanup.run_all([](const std::string&, const std::string&) {});
    std::cerr << fmt::format("{} instances cannot outlive ernicctl\n", kind->name());
    return kExitFailed;
  }
  cleanup.release();

  json instances = with_guests(started->manifest()["instances"], old_instances);
  for (auto& host : (*state)["hosts"]) {
    const std::string instance = host["facts"].value("emulator_instance", "");
    if (!instance.empty()) {
      for (const auto& [key, value] : started->facts_for(std::stoi(instance))) {
        host["facts"][key] = value;
      }
    }
  }
  (*state)["instances"] = instances;
  (*state)["instances_restarted"] = state->value("instances_restarted", 0) + 1;
  InstanceLinks linked =
      link_instance_files(instances, flags.state_dir, (*state)["log_dir"].get<std::string>());
  for (const auto& problem : linked.problems) {
    std::cerr << "warning: " << problem << "\n";
  }
  write_atomically(manifest_file(flags), json{{"instances", instances}});
  write_atomically(state_file(flags), *state);
  for (const auto& instance : instances) {
    fmt::print("  instance {} {:<8} pid {}  {}\n", instance["id"].get<int>(),
               instance["role"].get<std::string>(), instance["pid"].get<long>(),
               instance["socket"].get<std::string>());
  }
  fmt::print("restarted; the hosts stay attached: ernicctl run {} --attach\n",
             scenario->file.string());
  return kExitOk;
}

}  // namespace ernic
