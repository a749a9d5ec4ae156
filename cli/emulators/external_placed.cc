#include "emulators/external_placed.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "base/durable_file.h"
#include "base/interrupt.h"
#include "emulators/external_running.h"
#include "hosts/local_host.h"

namespace ernic {
namespace {

namespace fs = std::filesystem;

// Whether the socket exists and a line of the log matches the ready pattern (an extended
// regular expression for grep here), in one round trip to the instance's machine.
const char* const kReadinessProbe =
    R"([ -S "$1" ] && echo socket; grep -Eqs -- "$2" "$3" && echo logged; exit 0)";

// The manager's mesh address, which the workers dial: its `bind`, else its host's address.
std::string manager_bind(const ExternalSettings& settings, const Placement& manager, Host* host) {
  if (!manager.bind.empty()) {
    return manager.bind;
  }
  if (manager.local()) {
    return settings.bind;
  }
  return host != nullptr ? host->address() : "";
}

// Every instance's plan: its sockets, log and stats in its machine's directory, its console
// (stdout and stderr, streamed back) in the run directory, its binary the entry's or
// emulator.binary.
std::vector<ExternalInstancePlan> placed_plans(const ExternalSettings& settings,
                                               const std::vector<Placement>& placements,
                                               const std::string& manager,
                                               const EmulatorContext& context) {
  ExternalSettings all = settings;
  all.instances = static_cast<int>(placements.size());
  all.bind = manager;
  const std::string base = external_socket_dir(settings, context.run_token).string();
  std::vector<ExternalInstancePlan> plans;
  for (const Placement& placement : placements) {
    const fs::path dir = machine_dir(base, placement.on);
    ExternalInstancePlan plan =
        plan_external_instances(all, dir, dir).at(static_cast<std::size_t>(placement.id - 1));
    plan.on = placement.on;
    plan.console = context.run_dir / "emulator" / plan.console.filename();
    if (!placement.program.empty()) {
      plan.argv.front() = placement.program;
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::string planned_manager(const ExternalSettings& settings,
                            const std::vector<Placement>& placements,
                            const EmulatorContext& context) {
  const Placement& manager = placements.front();
  Host* host = manager.local() || !context.host ? nullptr : context.host(manager.on);
  std::string bind = manager_bind(settings, manager, host);
  return bind.empty() ? fmt::format("<ADDRESS of {}>", manager.on) : bind;
}

// An instance started through its host's connection (SSH for another machine, a child for
// `local`). Its pid is its machine's, so the manifest says 0 and names the machine.
class PlacedInstance final : public ExternalInstance {
 public:
  PlacedInstance(ExternalInstancePlan plan, Host& host)
      : ExternalInstance(std::move(plan)),
        host_(host),
        console_(std::make_shared<InstanceLog>(plan_.console)) {}

  void launch() {
    CommandSpec spec{.argv = plan_.argv, .timeout = {}, .env = plan_.env};
    command_ = host_.start(spec, console_.get());
  }
  void set_ready() { ready_ = true; }
  bool ready() const { return ready_; }

  std::string name() const override {
    return fmt::format("external emulator instance {} ({} on {})", plan_.id, plan_.role, plan_.on);
  }
  long pid() const override { return 0; }
  Readiness readiness(const ExternalSettings& settings) override {
    CommandResult probe = run_to_end(host_,
                                     {"sh", "-c", kReadinessProbe, "probe", plan_.socket.string(),
                                      settings.ready_pattern, plan_.log.string()},
                                     std::chrono::seconds(10));
    return {.socket = probe.out.find("socket") != std::string::npos,
            .logged = probe.out.find("logged") != std::string::npos ||
                      has_matching_line(console_->head(), std::regex(settings.ready_pattern))};
  }
  std::string ended() override {
    if (!command_ || command_->running()) {
      return "";
    }
    return "ended: " + command_->wait(Clock::now()).describe();
  }
  bool pause(Clock::time_point until) override {
    while (Clock::now() < until && command_->running() && !Interrupt::requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return !Interrupt::requested();
  }
  std::string log_tail() override {
    CommandResult log = run_to_end(host_, {"tail", "-n", "10", plan_.log.string()});
    std::string tail = last_lines(log.ok() ? log.out : "", 10) + last_lines(console_->head(), 10);
    return tail.empty() ? "    (no log output)\n" : tail;
  }
  void stop(std::chrono::milliseconds grace) override {
    if (command_) {
      command_->stop(grace);
    }
  }
  bool may_outlive_ernicctl() const override { return false; }
  void release() override {}

 private:
  Host& host_;
  std::shared_ptr<InstanceLog> console_;
  std::unique_ptr<RunningCommand> command_;  // after `console_`: destroyed before it
  bool ready_ = false;
};

struct PlacedServersState {
  std::mutex mutex;
  LocalHost this_machine{kThisMachine, "127.0.0.1"};
  std::vector<std::shared_ptr<PlacedInstance>> instances;
};

// What teardown keeps of one machine's instances: the logs and final stats of those that
// became ready (a failed one's last lines are in the error already).
std::vector<std::string> kept_files(PlacedServersState& state, const std::string& on) {
  std::lock_guard lock(state.mutex);
  std::vector<std::string> files;
  for (const auto& instance : state.instances) {
    if (instance->plan().on == on && instance->ready()) {
      files.push_back(instance->plan().log.string());
      files.push_back(instance->plan().stats.string());
    }
  }
  return files;
}

// The first line `BINARY --version` prints on `host`; empty when it does not answer.
std::string version_on(Host& host, const std::string& binary) {
  CommandResult version = run_to_end(host, {binary, "--version"}, std::chrono::seconds(3));
  return version.ok() ? trimmed(version.out.substr(0, version.out.find('\n'))) : "";
}

// Fails before anything starts when an instance's binary is not executable on its machine.
void check_binaries(const std::vector<ExternalInstancePlan>& plans,
                    const std::vector<Host*>& hosts) {
  std::map<std::pair<std::string, std::string>, bool> checked;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const std::string& binary = plans[i].argv.front();
    if (checked.contains({plans[i].on, binary})) {
      continue;
    }
    checked[{plans[i].on, binary}] = true;
    CommandResult test = run_to_end(*hosts[i], {"test", "-x", binary});
    if (!test.ok()) {
      throw std::runtime_error(fmt::format(
          "emulator instance {}: the rocm-ernic server {} is not an executable file on {}; set "
          "the instance's `binary` to its path there",
          plans[i].id, binary, hosts[i]->describe()));
    }
  }
}

}  // namespace

std::shared_ptr<const ObjectSchema> external_placement_schema() {
  static const auto schema = placement_schema(
      "binary", "The rocm-ernic server on that host; by default emulator.binary",
      "The manager's only: the address the workers connect to; by default its host's address "
      "(local: emulator.bind)");
  return schema;
}

std::vector<Placement> external_placements(const Config& emulator) {
  return placements_of(emulator, "binary");
}

void check_external_placements(const Config& emulator, Diagnostics& out) {
  const auto entries = emulator.objects("instances");
  for (std::size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].has("bind")) {
      out.push_back(entries[i].diagnostic(
          "bind",
          "the rocm-ernic server takes no address for a worker (it dials the manager's `bind`); "
          "remove it"));
    }
  }
}

std::vector<std::string> describe_placed_external(const ExternalSettings& settings,
                                                  const std::vector<Placement>& placements,
                                                  const EmulatorContext& context) {
  std::vector<std::string> lines;
  std::vector<std::string> prepared;
  for (const auto& plan : placed_plans(settings, placements,
                                       planned_manager(settings, placements, context), context)) {
    const std::string prefix = plan.on == kThisMachine ? "" : fmt::format("on {}: ", plan.on);
    const std::string dir = plan.socket.parent_path().string();
    if (std::find(prepared.begin(), prepared.end(), plan.on) == prepared.end()) {
      prepared.push_back(plan.on);
      lines.push_back(fmt::format("{}mkdir -p -m 0700 {}", prefix, dir));
    }
    lines.push_back(fmt::format("{}test -x {}", prefix, plan.argv.front()));
    CommandSpec spec{.argv = plan.argv, .timeout = {}, .env = plan.env};
    lines.push_back(
        fmt::format("{}{}  (console: {})", prefix, spec.display(), plan.console.string()));
  }
  return lines;
}

HostFacts planned_placed_external_facts(const ExternalSettings& settings,
                                        const std::vector<Placement>& placements,
                                        const EmulatorContext& context, int id) {
  return external_facts(
      placed_plans(settings, placements, planned_manager(settings, placements, context), context)
          .at(static_cast<std::size_t>(id - 1)));
}

std::unique_ptr<RunningEmulator> start_placed_external(const ExternalSettings& settings,
                                                       const std::vector<Placement>& placements,
                                                       EmulatorContext& context) {
  auto state = std::make_shared<PlacedServersState>();
  std::vector<Host*> hosts;
  for (const Placement& placement : placements) {
    hosts.push_back(&placement_host(placement, context, state->this_machine));
  }
  const std::string manager = manager_bind(settings, placements.front(), hosts.front());
  if (manager.empty()) {
    throw std::runtime_error(
        fmt::format("emulator instance 1: host {} has no address; give the instance a `bind`",
                    placements.front().on));
  }
  auto plans = placed_plans(settings, placements, manager, context);
  check_socket_paths(plans);
  check_binaries(plans, hosts);
  fs::create_directories(context.run_dir / "emulator");
  std::vector<std::string> prepared;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const std::string& on = plans[i].on;
    if (std::find(prepared.begin(), prepared.end(), on) == prepared.end()) {
      prepared.push_back(on);
      prepare_machine_dir(
          *hosts[i], on, plans[i].socket.parent_path().string(), context.run_dir / "emulator",
          [state, on] { return kept_files(*state, on); }, *context.cleanup);
    }
  }
  const std::string version = version_on(*hosts.front(), plans.front().argv.front());
  // The manager first: workers connect to it.
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (Interrupt::requested()) {
      throw std::runtime_error(
          fmt::format("interrupted before emulator instance {} started", plans[i].id));
    }
    auto instance = std::make_shared<PlacedInstance>(plans[i], *hosts[i]);
    {
      std::lock_guard lock(state->mutex);
      state->instances.push_back(instance);
    }
    context.cleanup->push(fmt::format("stop {}", instance->name()),
                          [instance, grace = settings.stop_timeout] { instance->stop(grace); });
    instance->launch();
    if (i == 0) {
      wait_ready(*instance, settings, Clock::now() + settings.ready_timeout);
      instance->set_ready();
    }
  }
  const auto deadline = Clock::now() + settings.ready_timeout;
  for (std::size_t i = 1; i < state->instances.size(); ++i) {
    wait_ready(*state->instances[i], settings, deadline);
    state->instances[i]->set_ready();
  }
  ExternalInstances instances(state->instances.begin(), state->instances.end());
  // For a person reading the run directory; the running instances are held in memory, so a full
  // run directory must not stop them.
  if (auto reason = write_file_durably_or_reason(
          context.run_dir / "instances.json", instance_manifest_text(external_manifest(instances)));
      !reason.empty()) {
    std::cerr << "warning: " << reason << "\n";
  }
  return running_external(settings, std::move(instances), version);
}

}  // namespace ernic
