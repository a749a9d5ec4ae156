// `ernicctl up`: `run` without points. The executor brings up instances and hosts, applies
// setup, and leaves everything running instead of tearing it down; what exists is written to
// the state directory (bringup_state.h).
#include <fmt/format.h>

#include <iostream>

#include "base/interrupt.h"
#include "commands/bringup/bringup_state.h"
#include "commands/commands.h"
#include "emulators/instance_machines.h"
#include "plan/plan.h"
#include "run/record.h"
#include "scenario/platform.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

struct UpFlags : StateFlags {
  std::string scenario;
  std::vector<std::string> sets;
  std::string runs_dir = "runs";
  std::string log_dir;  // empty: $ERNIC_LOG_DIR, else STATE_DIR/logs
  bool restart_instances = false;
};

// The harness's manifest: instances[].id and instances[].vm.{vm_name,ssh_port,ssh_user} are what
// their playbooks read.
InstanceManifest harness_manifest(const Scenario& scenario, const RunResult& result) {
  InstanceManifest manifest = result.instances;
  for (auto& instance : manifest.instances) {
    for (const auto& spec : scenario.hosts) {
      if (!spec.config.has("instance") || spec.config.integer("instance", 0) != instance.id) {
        continue;
      }
      InstanceGuest vm{.attached = true, .vm_name = spec.name, .ssh_port = 22, .ssh_user = "root"};
      for (const auto& host : result.hosts) {
        if (host.name != spec.name) {
          continue;
        }
        vm.address = host.address;
        if (auto it = host.facts.find("domain"); it != host.facts.end()) {
          vm.vm_name = it->second;
        }
        if (auto it = host.facts.find("ssh_user"); it != host.facts.end()) {
          vm.ssh_user = it->second;
        }
      }
      instance.vm = vm;
    }
  }
  return manifest;
}

// up.json: what status, logs, stats, ssh and down read back.
UpState up_state(const Scenario& scenario, const RunResult& result,
                 const InstanceManifest& manifest) {
  UpState state{.scenario = fs::absolute(scenario.file).string(),
                .name = scenario.name,
                .run_token = result.run_token,
                .run_dir = fs::absolute(result.run_dir).string(),
                .up_since = iso8601(result.started),
                .emulator_kind = scenario.emulator.kind,
                .instances = manifest.instances};
  for (const auto& host : result.hosts) {
    state.hosts.push_back(UpHost{.name = host.name,
                                 .provider = host.provider,
                                 .address = host.address,
                                 .facts = host.facts});
  }
  return state;
}

void print_up(const Scenario& scenario, const RunResult& result, const UpState& state,
              const StateFlags& flags) {
  fmt::print("\n{} is up (run {}):\n", scenario.name, result.run_token);
  for (const auto& host : result.hosts) {
    fmt::print("  host {:<10} {:<9} {}\n", host.name, host.provider, host.address);
  }
  for (const auto& instance : state.instances) {
    const std::string on = instance.on.value_or(kThisMachine);
    fmt::print("  instance {} {:<8} pid {}  {}{}\n", instance.id, instance.role, instance.pid,
               instance.socket, on == kThisMachine ? "" : " on " + on);
  }
  if (!state.instances.empty()) {
    fmt::print("  stats in {}/ID.stats, logs in {}/ID.log\n", flags.state_dir,
               state.log_dir.value_or(""));
  }
  std::string state_option =
      flags.state_dir == StateFlags::default_state_dir() ? "" : " --state-dir " + flags.state_dir;
  fmt::print("state: {}\nnext:\n", state_file(flags).string());
  fmt::print("  ernicctl run {} --attach{}   # its benchmarks, on what is up\n",
             scenario.file.string(), state_option);
  if (!result.hosts.empty()) {
    fmt::print("  ernicctl ssh{} {}\n", state_option, result.hosts.front().name);
  }
  if (!state.instances.empty()) {
    fmt::print("  ernicctl logs{} 1\n", state_option);
  }
  fmt::print("  ernicctl status{}\n  ernicctl down{}\n", state_option, state_option);
}

int up(const UpFlags& flags, const Platform& platform) {
  Interrupt::install();
  if (flags.restart_instances) {
    return restart_instances(flags, flags.sets, platform);
  }
  if (flags.scenario.empty()) {
    std::cerr << "ernicctl up: a scenario file is needed (or --restart-instances)\n";
    return kExitBadInput;
  }
  if (auto state = read_state(flags)) {
    std::cerr << fmt::format("{} says scenario {} is up (run {}); run `ernicctl down` first\n",
                             state_file(flags).string(), state->scenario, state->run_token);
    return kExitBadInput;
  }
  auto scenario = load_or_report(platform, flags.scenario, flags.sets);
  if (!scenario) {
    return kExitBadInput;
  }
  Plan plan = make_plan(*scenario, platform);
  RunOptions options;
  options.runs_dir = flags.runs_dir;
  options.bring_up_only = true;
  std::optional<RunResult> executed = execute_plan(plan, platform, options, false);
  if (!executed) {
    return kExitBadInput;
  }
  const RunResult& result = *executed;
  if (!result.left_running) {
    std::cerr << fmt::format("up failed: {}; everything was torn down (logs: {})\n",
                             result.fatal_error.empty() ? "see the step logs" : result.fatal_error,
                             result.run_dir.string());
    return result.status == RunStatus::kIncomplete ? kExitInterrupted : kExitFailed;
  }
  InstanceManifest manifest = harness_manifest(*scenario, result);
  UpState state = up_state(*scenario, result, manifest);
  fs::path log_dir = fs::absolute(instance_log_dir(flags, flags.log_dir));
  state.log_dir = log_dir.string();
  state.log_dir_created = !fs::exists(log_dir);
  InstanceLinks linked = link_instance_files(manifest.instances, flags.state_dir, log_dir);
  state.instance_files = linked.links;
  for (const auto& problem : linked.problems) {
    std::cerr << "warning: " << problem << "\n";
  }
  write_instance_manifest(manifest_file(flags), manifest);
  write_up_state(state_file(flags), state);
  print_up(*scenario, result, state, flags);
  return kExitOk;
}

}  // namespace

void register_up_command(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<UpFlags>();
  CLI::App* command = app.add_subcommand(
      "up", "Start a scenario's instances and hosts, apply setup, and leave them running");
  command->add_option("scenario", flags->scenario, "Scenario YAML file")->check(CLI::ExistingFile);
  command->add_flag("--restart-instances", flags->restart_instances,
                    "Restart the emulator instances of what is up (after a rebuild), in place; "
                    "the hosts stay and stay attached");
  command->add_option("--set", flags->sets, "Override a key as `run --set` does");
  command->add_option("--runs-dir", flags->runs_dir, "Where the run directory goes")
      ->capture_default_str();
  command->add_option("--log-dir", flags->log_dir,
                      "Where each instance's log is linked as ID.log (default $ERNIC_LOG_DIR, "
                      "else STATE_DIR/logs)");
  add_state_option(command, *flags);
  command->callback(
      [flags, &context] { run_guarded(context, [&] { return up(*flags, *context.platform); }); });
}

}  // namespace ernic
