// `emulator: {kind: embedded}`: a manager and N-1 workers of this repository's emulator
// (`ernicctl emulator`), joined by the TCP mesh: on loopback as child processes of the run
// (`instances: N`), or each on the machine the list form places it on (placed_instances.h).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>

#include "base/version.h"
#include "emulators/placed_instances.h"
#include "emulators/registry.h"
#include "supervisor.h"

namespace ernic {
namespace {

std::string random_token() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

HostFacts facts_of(const emu::InstanceInfo& info) {
  return instance_facts(info, own_executable());
}

class RunningEmbedded final : public RunningEmulator {
 public:
  explicit RunningEmbedded(std::shared_ptr<emu::Supervisor> supervisor)
      : supervisor_(std::move(supervisor)) {}
  // A dead instance, or one that lost a mesh peer (its heartbeats declared a frozen or gone
  // instance lost): either way the run's mesh is broken and the run must stop.
  std::string check_alive() override { return supervisor_->check_health(); }
  int instance_count() const override { return static_cast<int>(supervisor_->instances().size()); }
  HostFacts facts_for(int instance) const override {
    for (const auto& info : supervisor_->instances()) {
      if (info.id == instance) {
        return facts_of(info);
      }
    }
    throw std::out_of_range(fmt::format("no emulator instance {}", instance));
  }
  nlohmann::json record() const override {
    nlohmann::json instances = nlohmann::json::array();
    for (const auto& info : supervisor_->instances()) {
      instances.push_back({{"id", info.id},
                           {"role", info.role},
                           {"mac", info.mac},
                           {"gids", info.gids},
                           {"log", info.log.filename().string()},
                           {"stats", info.stats.filename().string()}});
    }
    return {{"kind", "embedded"}, {"version", ernic_version()}, {"instances", instances}};
  }
  InstanceManifest manifest() const override {
    InstanceManifest manifest;
    for (const auto& info : supervisor_->instances()) {
      manifest.instances.push_back(ManifestInstance{.id = info.id,
                                                    .role = info.role,
                                                    .pid = info.pid,
                                                    .mac = info.mac,
                                                    .socket = info.socket.string(),
                                                    .gids = info.gids,
                                                    .log = info.log.string(),
                                                    .stats = info.stats.string(),
                                                    .vm = InstanceGuest{}});
    }
    return manifest;
  }
  std::map<int, InstanceTraffic> traffic() const override {
    std::map<int, InstanceTraffic> moved;
    for (const auto& info : supervisor_->instances()) {
      moved[info.id] = traffic_of(emu::Supervisor::read_stats(info.stats));
    }
    return moved;
  }
  bool detach() override {
    supervisor_->detach();
    return true;
  }

 private:
  std::shared_ptr<emu::Supervisor> supervisor_;
};

class EmbeddedEmulator final : public EmulatorKind {
 public:
  std::string_view name() const override { return "embedded"; }
  std::string_view description() const override {
    return "The embedded ERNIC emulator: a manager and workers over a TCP mesh on this machine";
  }
  const ObjectSchema& schema() const override {
    static const ObjectSchema schema{
        .description = "",
        .fields = {
            {.name = "instances",
             .kind = ValueKind::kInteger,
             .description = "Instances: one manager, the rest workers; a count (all on this "
                            "machine) or a list placing each on a host ({on: HOST, bind: ADDRESS})",
             .default_text = "2",
             .minimum = 1,
             .maximum = 64,
             .or_list = embedded_placement_schema()},
            {.name = "mesh_port",
             .kind = ValueKind::kInteger,
             .description = "Manager's mesh port; 0 picks a free one",
             .default_text = "0",
             .minimum = 0,
             .maximum = 65535},
            {.name = "bind",
             .kind = ValueKind::kIpv4,
             .description = "Mesh address",
             .default_text = "127.0.0.1"},
            {.name = "token",
             .kind = ValueKind::kString,
             .description = "Mesh token; a random one per run by default"},
            {.name = "log_level",
             .kind = ValueKind::kEnum,
             .enum_values = {"none", "error", "warn", "info", "debug"},
             .default_text = "info"},
            {.name = "ready_timeout", .kind = ValueKind::kDuration, .default_text = "30s"},
            {.name = "payloads",
             .kind = ValueKind::kEnum,
             .description = "How instances on one machine pass large payloads: by_reference "
                            "(the receiver copies from the sender's shared memory: one copy, "
                            "the fastest) or inline (through their socket: two copies, and a "
                            "receiving instance less busy beside a latency test)",
             .enum_values = {"by_reference", "inline"},
             .default_text = "by_reference"},
            {.name = "streams",
             .kind = ValueKind::kEnum,
             .description = "How instances on one machine carry their frames once connected: "
                            "ring (a ring in shared memory each way, no system call per frame: "
                            "small messages' bandwidth doubles) or socket (their unix socket)",
             .enum_values = {"ring", "socket"},
             .default_text = "ring"},
            {.name = "copies",
             .kind = ValueKind::kEnum,
             .description = "Who copies large payloads by reference: loop (the instance's "
                            "event loop, between its turns: the most bandwidth) or thread (a "
                            "thread of each instance at idle priority, and the event loop "
                            "takes a short scheduler slice while it carries latency traffic "
                            "and steps back while it carries only bulk, so bulk copies and "
                            "bulk-only instances yield the CPU to latency traffic: about half "
                            "the bulk bandwidth)",
             .enum_values = {"loop", "thread"},
             .default_text = "loop"},
        }};
    return schema;
  }
  int instance_count(const Config& config) const override {
    const auto placed = embedded_placements(config);
    return placed.empty() ? static_cast<int>(config.integer("instances", 2))
                          : static_cast<int>(placed.size());
  }
  std::vector<std::string> placement_hosts(const Config& config) const override {
    return placement_hosts_of(embedded_placements(config));
  }
  bool serves_guest_regions() const override { return true; }
  std::string placed_on(const Config& config, int instance) const override {
    const auto placed = embedded_placements(config);
    if (instance < 1 || instance > static_cast<int>(placed.size())) {
      return "";
    }
    const Placement& placement = placed[static_cast<std::size_t>(instance) - 1];
    return placement.local() ? "" : placement.on;
  }
  void check(const Config& config, const std::vector<std::string>& host_names,
             Diagnostics& out) const override {
    check_placements(config, host_names, out);
  }
  std::vector<std::string> describe(const Config& config,
                                    const EmulatorContext& context) const override {
    if (auto plan = placed_plan(config, context)) {
      return describe_placed(*plan, context);
    }
    emu::SupervisorConfig settings = settings_of(config, context);
    if (!config.has("token")) {
      settings.token = "<mesh-token>";
    }
    std::vector<std::string> lines;
    for (int id = 1; id <= settings.instances; ++id) {
      CommandSpec spec{.argv = {settings.executable}, .timeout = {}, .env = {}};
      for (auto& arg : emu::instance_arguments(settings, emu::planned_instance(settings, id),
                                               settings.bind + ":<manager-mesh-port>")) {
        spec.argv.push_back(std::move(arg));
      }
      lines.push_back(spec.display());
    }
    return lines;
  }
  HostFacts planned_facts(const Config& config, const EmulatorContext& context,
                          int instance) const override {
    if (auto plan = placed_plan(config, context)) {
      return planned_placed_facts(*plan, context, instance);
    }
    return facts_of(emu::planned_instance(settings_of(config, context), instance));
  }
  std::unique_ptr<RunningEmulator> start(const Config& config, EmulatorContext& context) override {
    if (auto plan = placed_plan(config, context)) {
      return start_placed(*plan, context);
    }
    emu::SupervisorConfig settings = settings_of(config, context);
    std::filesystem::create_directories(settings.dir);
    auto kept = context.run_dir / "emulator";
    context.cleanup->push(
        fmt::format("remove {}", settings.dir.string()), [dir = settings.dir, kept] {
          std::filesystem::create_directories(kept);
          for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            auto extension = entry.path().extension();
            if (extension == ".log" || extension == ".stats") {
              std::filesystem::copy_file(entry.path(), kept / entry.path().filename(),
                                         std::filesystem::copy_options::overwrite_existing);
            }
          }
          std::filesystem::remove_all(dir);
        });
    // The regions outlive the instances (QEMU maps them too): removed after both are gone.
    for (const auto& region : settings.guest_regions) {
      if (!region.empty()) {
        context.cleanup->push(fmt::format("remove {}", region.string()), [region] {
          std::error_code ignored;
          std::filesystem::remove(region, ignored);
        });
      }
    }
    // Shared with the cleanup action, so the instances are stopped even if start() throws.
    auto supervisor = std::make_shared<emu::Supervisor>();
    context.cleanup->push("stop the embedded emulator instances",
                          [supervisor] { supervisor->stop(); });
    supervisor->start(settings);
    return std::make_unique<RunningEmbedded>(supervisor);
  }

 private:
  emu::SupervisorConfig settings_of(const Config& config, const EmulatorContext& context) const {
    emu::SupervisorConfig settings;
    settings.executable = own_executable();
    settings.instances = instance_count(config);
    settings.base_port = static_cast<std::uint16_t>(config.integer("mesh_port", 0));
    settings.token = config.has("token") ? config.text("token", "") : random_token();
    settings.bind = config.text("bind", "127.0.0.1");
    settings.log_level = config.text("log_level", "info");
    settings.may_outlive_parent = context.bring_up;
    // Sockets need a short path (108 bytes); logs and stats are copied into the run directory.
    settings.dir =
        std::filesystem::temp_directory_path() / fmt::format("ernic-{}", context.run_token);
    settings.ready_timeout = config.duration("ready_timeout", settings.ready_timeout);
    if (config.text("payloads", "by_reference") == "inline") {
      settings.extra_args.push_back("--mesh-payloads-inline");
    }
    if (config.text("streams", "ring") == "socket") {
      settings.extra_args.push_back("--mesh-socket-streams");
    }
    if (config.text("copies", "loop") == "thread") {
      settings.extra_args.push_back("--mesh-copy-thread");
    }
    for (int id : context.guest_instances) {
      if (id >= 1 && id <= settings.instances) {
        settings.guest_regions.resize(static_cast<std::size_t>(settings.instances));
        settings.guest_regions[static_cast<std::size_t>(id) - 1] =
            emu::guest_region_path(context.run_token, id);
      }
    }
    return settings;
  }
  // The list form: the same settings, each instance where its entry says.
  std::optional<PlacedPlan> placed_plan(const Config& config,
                                        const EmulatorContext& context) const {
    auto placements = embedded_placements(config);
    if (placements.empty()) {
      return std::nullopt;
    }
    return PlacedPlan{.common = settings_of(config, context),
                      .placements = std::move(placements),
                      .run_dir = context.run_dir};
  }
};

}  // namespace

EmulatorKind& embedded_emulator() {
  static EmbeddedEmulator kind;
  return kind;
}

}  // namespace ernic
