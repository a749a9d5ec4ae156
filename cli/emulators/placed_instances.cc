#include "emulators/placed_instances.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>

#include "base/interrupt.h"
#include "base/version.h"
#include "frontend/verbs_environment.h"
#include "hosts/local_host.h"
#include "hosts/ssh/ssh_host.h"
#include "runtime/instance.h"

namespace ernic {
namespace {

namespace fs = std::filesystem;

// A remote stats read is an SSH round trip: liveness checks read them this often at most.
constexpr auto kStatsInterval = std::chrono::seconds(2);
constexpr auto kStopGrace = std::chrono::milliseconds(2000);

std::string our_version_line() {
  return fmt::format("ernicctl {} ({})", ernic_version(), ernic_git_sha());
}

// The instance's configuration on its machine: files in that machine's directory, its own
// mesh address, its log on stderr (which arrives in the run directory as it is written).
emu::SupervisorConfig config_on(const PlacedPlan& plan, const Placement& placement,
                                const std::string& bind) {
  emu::SupervisorConfig config = plan.common;
  config.dir = machine_dir(plan.common.dir.string(), placement.on);
  config.bind = bind;
  config.token_file.clear();
  config.log_to_stderr = true;
  return config;
}

emu::InstanceInfo planned_info(const PlacedPlan& plan, const Placement& placement,
                               const std::string& bind) {
  emu::InstanceInfo info = emu::planned_instance(config_on(plan, placement, bind), placement.id);
  info.log = plan.run_dir / "emulator" / info.log.filename();
  return info;
}

std::string where(const emu::InstanceInfo& info, const Placement& placement) {
  return fmt::format("instance {} ({} on {})", info.id, info.role, placement.on);
}

// The bind address as the dry run knows it: given, or the host's planned address.
std::string planned_bind(const PlacedPlan& plan, const Placement& placement,
                         const EmulatorContext& context) {
  if (!placement.bind.empty()) {
    return placement.bind;
  }
  if (placement.local()) {
    return plan.common.bind;
  }
  Host* host = context.host ? context.host(placement.on) : nullptr;
  return host != nullptr && !host->address().empty() ? host->address()
                                                     : fmt::format("<ADDRESS of {}>", placement.on);
}

std::vector<std::string> ernicctl_candidates(const Placement& placement) {
  if (!placement.program.empty()) {
    return {placement.program};
  }
  return {"ernicctl", own_executable()};
}

std::string planned_ernicctl(const Placement& placement) {
  return placement.local() ? own_executable() : fmt::format("<ernicctl on {}>", placement.on);
}

struct StartedInstance {
  Placement placement;
  emu::InstanceInfo info;  // socket and stats on its machine; the log here
  Host* host = nullptr;
  std::string ernicctl;
  bool copied = false;  // ernicctl was uploaded to its machine
  bool ready = false;
  double start_s = 0;  // start to ready
  // `ernicctl up`: started in a session of its own, its output in `machine_log` there; `command`
  // then follows that log (and ends with the instance) until `up` leaves it running.
  bool detached = false;
  pid_t pid = 0;
  std::string machine_log;
  std::shared_ptr<InstanceLog> log;
  std::unique_ptr<RunningCommand> command;  // after `log`: destroyed before it
};

struct PlacedState {
  std::mutex mutex;
  LocalHost this_machine{kThisMachine, "127.0.0.1"};
  std::vector<std::unique_ptr<StartedInstance>> instances;
  Clock::time_point next_stats_read{};
};

std::map<std::string, std::string> stats_of(StartedInstance& instance) {
  if (instance.placement.local()) {
    return emu::Supervisor::read_stats(instance.info.stats);
  }
  CommandResult read =
      run_to_end(*instance.host, {"cat", instance.info.stats.string()}, std::chrono::seconds(5));
  return read.ok() ? emu::Supervisor::parse_stats(read.out) : std::map<std::string, std::string>{};
}

// What teardown keeps of one machine's instances: their final stats (and a detached one's
// log, which it wrote there).
std::vector<std::string> kept_stats(PlacedState& state, const std::string& on) {
  std::lock_guard lock(state.mutex);
  std::vector<std::string> files;
  for (auto& instance : state.instances) {
    if (instance->placement.on == on && instance->ready) {
      files.push_back(instance->info.stats.string());
    }
    if (instance->placement.on == on && instance->detached && instance->pid > 0) {
      files.push_back(instance->machine_log);
    }
  }
  return files;
}

void stop_instance(StartedInstance& instance) {
  if (instance.detached && instance.pid > 0) {
    stop_remote_group(*instance.host, instance.pid, instance.info.socket.string(), kStopGrace);
  }
  if (instance.command) {
    instance.command->stop(kStopGrace);
  }
}

// How `up` reached the instance's machine, for whoever checks or stops it later.
SshConnectOptions connection_of(const StartedInstance& instance) {
  const auto* ssh = dynamic_cast<const SshHost*>(instance.host);
  if (ssh == nullptr) {
    throw std::logic_error(fmt::format("host {} is not reached over SSH", instance.placement.on));
  }
  return ssh->options();
}

// The ernicctl that runs the instances on `host`: one that prints our version, else ours copied
// into the run's directory there.
std::string ernicctl_on(Host& host, const Placement& placement, const std::string& dir,
                        bool& copied) {
  for (const auto& candidate : ernicctl_candidates(placement)) {
    try {
      if (trimmed(run_to_end(host, {candidate, "--version"}).out) == our_version_line()) {
        return candidate;
      }
    } catch (const std::exception&) {
      // not there: the next candidate, or the copy
    }
  }
  std::ifstream in(own_executable(), std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string copy = dir + "/ernicctl";
  host.upload(content, copy, 0755);
  copied = true;
  std::string version = trimmed(run_to_end(host, {copy, "--version"}).out);
  if (version != our_version_line()) {
    throw std::runtime_error(fmt::format(
        "ernicctl copied to {} on {} does not run there: `--version` printed '{}', not '{}'", copy,
        placement.on, version, our_version_line()));
  }
  return copy;
}

class RunningPlaced final : public RunningEmulator {
 public:
  explicit RunningPlaced(std::shared_ptr<PlacedState> state) : state_(std::move(state)) {}

  // An instance that exited first (its peers only echo its death), then one that lost a peer.
  std::string check_alive() override {
    std::lock_guard lock(state_->mutex);
    for (auto& instance : state_->instances) {
      if (!instance->command->running()) {
        CommandResult end = instance->command->wait(Clock::now());
        return fmt::format("{} exited: {}; last log lines:{}",
                           where(instance->info, instance->placement), end.describe(),
                           emu::Supervisor::tail(instance->info.log, 10));
      }
    }
    if (Clock::now() < state_->next_stats_read) {
      return "";
    }
    state_->next_stats_read = Clock::now() + kStatsInterval;
    for (auto& instance : state_->instances) {
      const auto stats = stats_of(*instance);
      if (auto lost = stats.find("mesh_nodes_lost"); lost != stats.end() && lost->second != "0") {
        return fmt::format("{} lost {} mesh peer(s); last log lines:{}",
                           where(instance->info, instance->placement), lost->second,
                           emu::Supervisor::tail(instance->info.log, 10));
      }
    }
    return "";
  }
  int instance_count() const override { return static_cast<int>(state_->instances.size()); }
  std::map<int, InstanceTraffic> traffic() const override {
    std::lock_guard lock(state_->mutex);
    std::map<int, InstanceTraffic> moved;
    for (auto& instance : state_->instances) {
      moved[instance->info.id] = traffic_of(stats_of(*instance));
    }
    return moved;
  }
  HostFacts facts_for(int id) const override {
    for (const auto& instance : state_->instances) {
      if (instance->info.id == id) {
        HostFacts facts = instance_facts(instance->info, instance->ernicctl);
        if (instance->copied) {
          facts["verbs_library_dir"] = "";  // the copy came without the verbs provider
        }
        return facts;
      }
    }
    throw std::out_of_range(fmt::format("no emulator instance {}", id));
  }
  nlohmann::json record() const override {
    nlohmann::json instances = nlohmann::json::array();
    for (const auto& instance : state_->instances) {
      instances.push_back({{"id", instance->info.id},
                           {"role", instance->info.role},
                           {"on", instance->placement.on},
                           {"bind", instance->info.bind},
                           {"ernicctl", instance->ernicctl},
                           {"ernicctl_copied", instance->copied},
                           {"start_s", instance->start_s},
                           {"mac", instance->info.mac},
                           {"gids", instance->info.gids},
                           {"log", instance->info.log.filename().string()},
                           {"stats", instance->info.stats.filename().string()}});
    }
    return {{"kind", "embedded"}, {"version", ernic_version()}, {"instances", instances}};
  }
  InstanceManifest manifest() const override {
    InstanceManifest manifest;
    for (const auto& instance : state_->instances) {
      manifest.instances.push_back(ManifestInstance{
          .id = instance->info.id,
          .role = instance->info.role,
          .on = instance->placement.on,
          .pid = instance->pid,
          .mac = instance->info.mac,
          .socket = instance->info.socket.string(),
          .gids = instance->info.gids,
          .log = instance->detached ? instance->machine_log : instance->info.log.string(),
          .stats = instance->info.stats.string(),
          .vm = InstanceGuest{}});
      if (instance->detached && !instance->placement.local()) {
        const std::string dir = instance->info.socket.parent_path().string();
        manifest.instances.back().remote = RemoteInstance{.id = instance->info.id,
                                                          .role = instance->info.role,
                                                          .pid = instance->pid,
                                                          .socket = instance->info.socket.string(),
                                                          .on = instance->placement.on,
                                                          .address = instance->host->address(),
                                                          .dir = dir,
                                                          .log = instance->machine_log,
                                                          .stats = instance->info.stats.string(),
                                                          .token_file = dir + "/mesh.token",
                                                          .ssh = connection_of(*instance)};
      }
    }
    return manifest;
  }
  // `ernicctl up`: the instances run in sessions of their own; what followed their logs stops.
  bool detach() override {
    std::lock_guard lock(state_->mutex);
    for (auto& instance : state_->instances) {
      if (!instance->detached) {
        return false;
      }
    }
    for (auto& instance : state_->instances) {
      instance->command->stop(std::chrono::milliseconds(200));
    }
    return true;
  }

 private:
  std::shared_ptr<PlacedState> state_;
};

[[noreturn]] void not_ready(StartedInstance& instance, std::chrono::milliseconds timeout) {
  const std::string who = where(instance.info, instance.placement);
  if (Interrupt::requested()) {
    throw std::runtime_error(fmt::format("interrupted while {} started", who));
  }
  const std::string lines = emu::Supervisor::tail(instance.info.log, 10);
  if (!instance.command->running()) {
    throw std::runtime_error(fmt::format("ERNIC emulator {} exited: {}; last log lines:{}", who,
                                         instance.command->wait(Clock::now()).describe(), lines));
  }
  throw std::runtime_error(
      fmt::format("ERNIC emulator {} was not ready within {} ms; last log lines:{}", who,
                  timeout.count(), lines));
}

// Starts one instance on its prepared host and waits for its ready line (and a manager's port).
void launch(StartedInstance& instance, const PlacedPlan& plan, const std::string& manager) {
  const auto started = Clock::now();
  emu::SupervisorConfig config = config_on(plan, instance.placement, instance.info.bind);
  CommandSpec spec{.argv = {instance.ernicctl}, .timeout = {}, .env = {}};
  for (auto& arg : emu::instance_arguments(config, instance.info, manager)) {
    spec.argv.push_back(std::move(arg));
  }
  if (instance.detached) {
    instance.pid = start_detached(*instance.host, spec.argv, instance.machine_log);
    // Its log, followed until the instance ends (tail --pid), is what readiness is read from.
    spec.argv = {
        "tail", fmt::format("--pid={}", instance.pid), "-n", "+1", "-F", instance.machine_log};
  }
  instance.command = instance.host->start(spec, instance.log.get());
  const auto deadline = started + plan.common.ready_timeout;
  static const std::regex kReady(emu::kReadyLine);
  static const std::regex kPort("listening on [^ ]*:([0-9]+)");
  if (!instance.command->wait_for_output(kReady, deadline)) {
    not_ready(instance, plan.common.ready_timeout);
  }
  if (instance.info.role == "manager") {
    if (!instance.command->wait_for_output(kPort, deadline)) {
      not_ready(instance, plan.common.ready_timeout);
    }
    const std::string head = instance.log->head();
    std::smatch port;
    if (std::regex_search(head, port, kPort)) {
      instance.info.mesh_port = static_cast<std::uint16_t>(std::stoi(port[1]));
    }
  }
  instance.ready = true;
  instance.start_s = std::chrono::duration<double>(Clock::now() - started).count();
}

// `ernicctl up`: status, `run --attach` and down log in to each instance's machine again, which
// they can only do for hosts reached over SSH.
void check_reachable_later(const PlacedPlan& plan, const EmulatorContext& context,
                           Host& this_machine) {
  for (const Placement& placement : plan.placements) {
    if (!placement.local() &&
        dynamic_cast<SshHost*>(&placement_host(placement, context, this_machine)) == nullptr) {
      throw std::runtime_error(fmt::format(
          "emulator instance {} is placed on {}, which is not reached over SSH: `ernicctl up` "
          "leaves instances running only on this machine or on hosts it logs in to",
          placement.id, placement.on));
    }
  }
}

}  // namespace

std::shared_ptr<const ObjectSchema> embedded_placement_schema() {
  static const auto schema = placement_schema(
      "ernicctl",
      "ernicctl on that host; by default `ernicctl` in its PATH, then this ernicctl's path; this "
      "ernicctl is copied there when neither prints its version",
      "Mesh address the other instances reach it at; by default its host's address (local: the "
      "emulator's bind)");
  return schema;
}

std::vector<Placement> embedded_placements(const Config& emulator) {
  return placements_of(emulator, "ernicctl");
}

std::string own_executable() {
  return fs::read_symlink("/proc/self/exe").string();
}

namespace {

// Where an ernicctl's build or installation put the verbs provider (emu::verbs_library_dir()
// for the running one). The dry run's placeholder for an ernicctl on another machine gives one
// of its own; a bare name found in PATH gives none.
std::string verbs_library_dir_of(const std::string& ernicctl) {
  if (ernicctl.starts_with('<')) {
    return fmt::format("<lib/ernicctl beside {}>", ernicctl.substr(1, ernicctl.size() - 2));
  }
  const fs::path path(ernicctl);
  if (!path.is_absolute()) {
    return "";
  }
  return (path.parent_path().parent_path() / "lib/ernicctl").lexically_normal().string();
}

}  // namespace

HostFacts instance_facts(const emu::InstanceInfo& info, const std::string& ernicctl) {
  std::string gids;
  for (const auto& gid : info.gids) {
    gids += (gids.empty() ? "" : ",") + gid;
  }
  if (!info.guest_region.empty()) {
    // A guest reaches the instance through its region only: no socket, no load generator; the
    // image's provider, and the device folder the instance-device step writes in the guest (the
    // rdma-device and gid-index steps read it as the guest's sysfs).
    return {{"emulator_instance", std::to_string(info.id)},
            {"emulator_role", info.role},
            {"emulator_gids", gids},
            {"emulator_mac", info.mac},
            {"guest_region", info.guest_region.filename().string()},
            {"verbs_device", info.verbs_device},
            {"verbs_sysfs", emu::kGuestVerbsSysfs},
            {"sysfs_root", emu::kGuestVerbsSysfs},
            {"verbs_library_dir", emu::kGuestVerbsLibraryDir}};
  }
  return {{"perf_socket", info.socket.string()},
          {"ernicctl", ernicctl},
          {"emulator_instance", std::to_string(info.id)},
          {"emulator_role", info.role},
          {"emulator_gids", gids},
          {"emulator_mac", info.mac},
          {"verbs_device", info.verbs_device},
          {"verbs_sysfs", info.verbs_sysfs.string()},
          {"verbs_library_dir", verbs_library_dir_of(ernicctl)}};
}

std::vector<std::string> describe_placed(const PlacedPlan& plan, const EmulatorContext& context) {
  std::vector<std::string> lines;
  std::vector<std::string> prepared;
  std::string manager;
  for (const Placement& placement : plan.placements) {
    const std::string prefix = placement.local() ? "" : fmt::format("on {}: ", placement.on);
    const std::string dir = machine_dir(plan.common.dir.string(), placement.on);
    if (std::find(prepared.begin(), prepared.end(), placement.on) == prepared.end()) {
      prepared.push_back(placement.on);
      lines.push_back(fmt::format("{}mkdir -p -m 0700 {}", prefix, dir));
      lines.push_back(
          fmt::format("{}upload the mesh token to {}/mesh.token (mode 0600)", prefix, dir));
      if (!placement.local()) {
        std::string tried;
        for (const auto& candidate : ernicctl_candidates(placement)) {
          tried += fmt::format("{}{} --version", tried.empty() ? "" : ", then ", candidate);
        }
        lines.push_back(fmt::format(
            "{}{}: the first that prints '{}' runs the instances, else this ernicctl is uploaded "
            "to {}/ernicctl (mode 0755)",
            prefix, tried, our_version_line(), dir));
      }
    }
    const std::string bind = planned_bind(plan, placement, context);
    emu::InstanceInfo info = planned_info(plan, placement, bind);
    if (placement.id == 1) {
      manager = bind + ":<manager-mesh-port>";
    }
    CommandSpec spec{.argv = {planned_ernicctl(placement)}, .timeout = {}, .env = {}};
    for (auto& arg : emu::instance_arguments(config_on(plan, placement, bind), info, manager)) {
      spec.argv.push_back(std::move(arg));
    }
    lines.push_back(fmt::format("{}{}  (log: {})", prefix, spec.display(), info.log.string()));
  }
  return lines;
}

HostFacts planned_placed_facts(const PlacedPlan& plan, const EmulatorContext& context, int id) {
  const Placement& placement = plan.placements.at(static_cast<std::size_t>(id - 1));
  return instance_facts(planned_info(plan, placement, planned_bind(plan, placement, context)),
                        planned_ernicctl(placement));
}

std::unique_ptr<RunningEmulator> start_placed(const PlacedPlan& plan, EmulatorContext& context) {
  auto state = std::make_shared<PlacedState>();
  if (context.bring_up) {
    check_reachable_later(plan, context, state->this_machine);
  }
  fs::create_directories(plan.run_dir / "emulator");
  struct Prepared {
    std::string ernicctl;
    bool copied = false;
  };
  std::map<std::string, Prepared> prepared;
  std::string manager;
  for (const Placement& placement : plan.placements) {
    if (Interrupt::requested()) {
      throw std::runtime_error(
          fmt::format("interrupted before emulator instance {} started", placement.id));
    }
    Host* host = &placement_host(placement, context, state->this_machine);
    const std::string dir = machine_dir(plan.common.dir.string(), placement.on);
    if (!prepared.contains(placement.on)) {
      prepare_machine_dir(
          *host, placement.on, dir, plan.run_dir / "emulator",
          [state, on = placement.on] { return kept_stats(*state, on); }, *context.cleanup);
      host->upload(plan.common.token, dir + "/mesh.token", 0600);
      Prepared ready;
      ready.ernicctl =
          placement.local() ? own_executable() : ernicctl_on(*host, placement, dir, ready.copied);
      prepared[placement.on] = ready;
    }
    std::string bind = placement.bind;
    if (bind.empty()) {
      bind = placement.local() ? plan.common.bind : host->address();
    }
    if (bind.empty()) {
      throw std::runtime_error(
          fmt::format("emulator instance {}: host {} has no address; give the instance a `bind`",
                      placement.id, placement.on));
    }
    auto instance = std::make_unique<StartedInstance>();
    instance->placement = placement;
    instance->info = planned_info(plan, placement, bind);
    instance->host = host;
    instance->ernicctl = prepared[placement.on].ernicctl;
    instance->copied = prepared[placement.on].copied;
    instance->log = std::make_shared<InstanceLog>(instance->info.log);
    instance->detached = context.bring_up;
    instance->machine_log = (fs::path(dir) / instance->info.log.filename()).string();
    StartedInstance& started = *instance;
    std::size_t index = 0;
    {
      std::lock_guard lock(state->mutex);
      index = state->instances.size();
      state->instances.push_back(std::move(instance));
    }
    if (!started.info.guest_region.empty()) {
      // Pushed first, so it runs after the instance stopped (QEMU, stopped before both, maps it
      // too).
      context.cleanup->push(
          fmt::format("remove {} on {}", started.info.guest_region.string(), placement.on),
          [host, region = started.info.guest_region.string()] {
            run_to_end(*host, {"rm", "-f", region});
          });
    }
    context.cleanup->push(fmt::format("stop emulator {}", where(started.info, placement)),
                          [state, index] { stop_instance(*state->instances[index]); });
    launch(started, plan, manager);
    if (placement.id == 1) {
      manager = fmt::format("{}:{}", bind, started.info.mesh_port);
    }
  }
  return std::make_unique<RunningPlaced>(state);
}

}  // namespace ernic
