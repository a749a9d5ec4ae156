// `ernicctl up --restart-instances`: the developer's loop after rebuilding the emulator. The
// instances `up` left are stopped and started again from the same scenario, under the same run
// token (so their sockets keep their paths), and the state is rewritten; hosts and guests stay.
#include <fmt/format.h>

#include <iostream>

#include "base/subprocess.h"
#include "commands/bringup/bringup_state.h"
#include "commands/commands.h"
#include "emulators/emulator_kind.h"
#include "run/leftovers.h"
#include "scenario/platform.h"

namespace ernic {
namespace {

void stop_recorded_instances(const std::vector<ManifestInstance>& instances) {
  std::vector<Leftover> processes;
  for (const auto& instance : instances) {
    // A reused pid is not ours: it counts only while its command line names the socket.
    if (instance.pid > 0 && !instance.socket.empty() && process_running(instance.pid) &&
        process_command_line(instance.pid).find(instance.socket) != std::string::npos) {
      processes.push_back(Leftover{"", "process", std::to_string(instance.pid)});
    }
  }
  remove_leftovers(processes, "", [](const Leftover& what, const std::string& why) {
    throw std::runtime_error(fmt::format("cannot stop {}: {}", what.describe(), why));
  });
}

// The new instances in the manifest's format, each keeping the guest (`vm`) `up` attached to
// the instance of its id.
std::vector<ManifestInstance> with_guests(std::vector<ManifestInstance> fresh,
                                          const std::vector<ManifestInstance>& old) {
  for (auto& instance : fresh) {
    for (const auto& before : old) {
      if (before.id == instance.id && before.vm) {
        instance.vm = before.vm;
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
  auto scenario = load_or_report(platform, state->scenario, sets);
  if (!scenario) {
    return kExitBadInput;
  }
  EmulatorKind* kind = platform.emulator_kind(scenario->emulator.kind);
  const std::vector<ManifestInstance> old_instances = state->instances;
  if (kind == nullptr || old_instances.empty()) {
    std::cerr << fmt::format("{} runs no emulator instances: nothing to restart\n", scenario->name);
    return kExitBadInput;
  }
  for (const auto& instance : old_instances) {
    if (instance.remote) {
      std::cerr << fmt::format(
          "instance {} runs on {}: `--restart-instances` restarts instances on this machine only; "
          "`ernicctl down` and `ernicctl up` again\n",
          instance.id, instance.remote->on);
      return kExitBadInput;
    }
  }
  fmt::print("stopping {} instances of run {}\n", old_instances.size(), state->run_token);
  stop_recorded_instances(old_instances);

  CleanupStack cleanup;
  // Guests keep their regions: a restarted instance takes its file (QEMU still maps it) again.
  EmulatorContext context{.run_dir = state->run_dir,
                          .run_token = state->run_token,
                          .cleanup = &cleanup,
                          .bring_up = true,
                          .host = {},
                          .guest_instances = guest_region_instances(platform, scenario->hosts)};
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

  std::vector<ManifestInstance> instances =
      with_guests(started->manifest().instances, old_instances);
  for (auto& host : state->hosts) {
    const std::string instance = host.fact("emulator_instance");
    if (!instance.empty()) {
      for (const auto& [key, value] : started->facts_for(std::stoi(instance))) {
        host.facts[key] = value;
      }
    }
  }
  state->instances = instances;
  state->instances_restarted = state->instances_restarted.value_or(0) + 1;
  InstanceLinks linked = link_instance_files(
      instances, flags.state_dir, state->log_dir.value_or(instance_log_dir(flags, "").string()));
  for (const auto& problem : linked.problems) {
    std::cerr << "warning: " << problem << "\n";
  }
  write_instance_manifest(manifest_file(flags), InstanceManifest{instances});
  write_up_state(state_file(flags), *state);
  for (const auto& instance : instances) {
    fmt::print("  instance {} {:<8} pid {}  {}\n", instance.id, instance.role, instance.pid,
               instance.socket);
  }
  fmt::print("restarted; the hosts stay attached: ernicctl run {} --attach\n",
             scenario->file.string());
  return kExitOk;
}

}  // namespace ernic
