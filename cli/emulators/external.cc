// `emulator: {kind: external, binary: PATH}`: the real rocm-ernic server, a manager and N-1
// workers on the TCP mesh, each told which GIDs its guest owns.
#include "emulators/external.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "base/durable_file.h"
#include "base/subprocess.h"
#include "base/units.h"
#include "emulators/external_placed.h"
#include "emulators/external_running.h"
#include "emulators/registry.h"

namespace ernic {

std::string eui64_link_local(const std::string& mac) {
  std::array<unsigned, 6> bytes{};
  char tail = 0;
  if (std::sscanf(mac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &bytes[0], &bytes[1], &bytes[2],
                  &bytes[3], &bytes[4], &bytes[5], &tail) != 6 ||
      mac.size() != 17) {
    throw std::invalid_argument(
        fmt::format("'{}' is not a MAC address (expected xx:xx:xx:xx:xx:xx)", mac));
  }
  bytes[0] ^= 0x02;  // EUI-64 inverts the universal/local bit
  std::array<unsigned, 4> groups = {(bytes[0] << 8) | bytes[1], (bytes[2] << 8) | 0xff,
                                    0xfe00 | bytes[3], (bytes[4] << 8) | bytes[5]};
  // The interface identifier never is all zero after ff:fe, so "fe80::" plus the four groups with
  // leading zero groups dropped is the canonical (RFC 5952) form.
  std::size_t first = 0;
  while (first < groups.size() - 1 && groups[first] == 0) {
    ++first;
  }
  std::string address = "fe80::";
  for (std::size_t i = first; i < groups.size(); ++i) {
    address += fmt::format("{}{:x}", i == first ? "" : ":", groups[i]);
  }
  return address;
}

ExternalSettings parse_external_settings(const Config& config) {
  ExternalSettings settings;
  settings.binary = config.text("binary", "");
  settings.instances = static_cast<int>(config.integer("instances", settings.instances));
  settings.mesh_port = static_cast<int>(config.integer("mesh_port", settings.mesh_port));
  settings.bind = config.text("bind", settings.bind);
  settings.socket_dir = config.text("socket_dir", "");
  settings.log_level = config.text("log_level", settings.log_level);
  settings.ready_timeout = config.duration("ready_timeout", settings.ready_timeout);
  settings.stop_timeout = config.duration("stop_timeout", settings.stop_timeout);
  settings.ready_pattern = config.text("ready_pattern", settings.ready_pattern);
  if (config.has("tap")) {
    Config tap = config.object("tap");
    settings.tap = tap.flag("enabled", true);
    settings.tap_bridge = tap.text("bridge", settings.tap_bridge);
    settings.tap_prefix = tap.text("prefix", settings.tap_prefix);
  }
  settings.guests = config.texts("guests");
  settings.extra_args = config.texts("extra_args");
  return settings;
}

std::filesystem::path external_socket_dir(const ExternalSettings& settings,
                                          const std::string& run_token) {
  return settings.socket_dir.empty()
             ? std::filesystem::temp_directory_path() / fmt::format("ernic-ext-{}", run_token)
             : std::filesystem::path(settings.socket_dir);
}

std::vector<ExternalInstancePlan> plan_external_instances(const ExternalSettings& settings,
                                                          const std::filesystem::path& socket_dir,
                                                          const std::filesystem::path& log_dir) {
  std::vector<ExternalInstancePlan> plans;
  for (int id = 1; id <= settings.instances; ++id) {
    ExternalInstancePlan plan;
    plan.id = id;
    plan.role = id == 1 ? "manager" : "worker";
    // Locally administered, unicast, unique per instance.
    plan.mac = fmt::format("02:e7:00:00:{:02x}:{:02x}", id >> 8, id & 0xff);
    plan.guest_ip = static_cast<std::size_t>(id) <= settings.guests.size()
                        ? settings.guests[id - 1]
                        : fmt::format("192.168.200.{}", 10 * id);
    plan.gids = eui64_link_local(plan.mac) + "," + plan.guest_ip;
    plan.socket = socket_dir / fmt::format("instance{}.sock", id);
    plan.log = log_dir / fmt::format("instance{}.log", id);
    plan.stats = log_dir / fmt::format("instance{}.stats", id);
    plan.console = log_dir / fmt::format("instance{}.console", id);
    std::string backend = id == 1
                              ? fmt::format("tcp:manager:listen:{}", settings.mesh_port)
                              : fmt::format("tcp:worker:{}:{}", settings.bind, settings.mesh_port);
    plan.argv = {settings.binary, "--backend",   backend,           "--socket", plan.socket,
                 "--mac",         plan.mac,      "--stats-file",    plan.stats, "--log-file",
                 plan.log,        "--log-level", settings.log_level};
    if (settings.tap) {
      plan.tap = fmt::format("{}{}", settings.tap_prefix, id);
      plan.argv.insert(plan.argv.end(), {"--tap", plan.tap});
    }
    plan.argv.insert(plan.argv.end(), settings.extra_args.begin(), settings.extra_args.end());
    plan.env = {{"ERNIC_TCP_GUEST_GIDS", plan.gids}};
    plans.push_back(std::move(plan));
  }
  return plans;
}

void check_socket_paths(const std::vector<ExternalInstancePlan>& plans) {
  for (const auto& plan : plans) {
    if (plan.socket.string().size() >= 108) {
      throw std::runtime_error(
          fmt::format("socket path {} is longer than a UNIX socket allows (107 bytes); "
                      "set emulator.socket_dir to a shorter directory",
                      plan.socket.string()));
    }
  }
}

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool socket_file_exists(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_socket(path, error);
}

// An instance spawned on this machine, as a child of ernicctl.
class LocalInstance final : public ExternalInstance {
 public:
  LocalInstance(ExternalInstancePlan plan, std::unique_ptr<Subprocess> process)
      : ExternalInstance(std::move(plan)), process_(std::move(process)) {}

  std::string name() const override {
    return fmt::format("external emulator instance {} ({}, pid {})", plan_.id, plan_.role,
                       process_->pid());
  }
  long pid() const override { return process_->pid(); }
  Readiness readiness(const ExternalSettings& settings) override {
    const std::regex pattern(settings.ready_pattern);
    return {.socket = socket_file_exists(plan_.socket),
            .logged = has_matching_line(read_file(plan_.log), pattern) ||
                      has_matching_line(read_file(plan_.console), pattern)};
  }
  std::string ended() override {
    if (process_->running()) {
      return "";
    }
    process_->finish_output(std::chrono::milliseconds(500));
    if (process_->term_signal() != 0) {
      return fmt::format("was killed by signal {}", process_->term_signal());
    }
    return fmt::format("exited with status {}", process_->exit_code());
  }
  bool pause(Clock::time_point until) override {
    return process_->wait_until(until) != Subprocess::WaitEnd::kInterrupted;
  }
  // The log file and the process's own output, whichever the server wrote to.
  std::string log_tail() override {
    std::string tail =
        last_lines(read_file(plan_.log), 10) + last_lines(read_file(plan_.console), 10);
    return tail.empty() ? "    (no log output)\n" : tail;
  }
  void stop(std::chrono::milliseconds grace) override { process_->terminate(grace); }
  bool may_outlive_ernicctl() const override { return process_->may_outlive_ernicctl(); }
  void release() override { process_->release(); }

 private:
  std::unique_ptr<Subprocess> process_;
};

std::string version_of(const std::string& binary) {
  try {
    auto process = Subprocess::spawn(
        {.argv = {binary, "--version"}, .env = {}, .netns_path = "", .stdin_file = ""}, {});
    if (process->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(3), false) !=
        Subprocess::WaitEnd::kExited) {
      process->terminate(std::chrono::milliseconds(500));
      return "";
    }
    process->finish_output();
    if (process->exit_code() != 0) {
      return "";
    }
    std::string line;
    std::istringstream in(process->stdout_text());
    std::getline(in, line);
    return line;
  } catch (const SpawnError&) {
    return "";
  }
}

const ObjectSchema& external_schema() {
  static const ObjectSchema schema{
      .description = "",
      .fields = {
          {.name = "binary",
           .kind = ValueKind::kString,
           .description = "Path of the rocm-ernic server",
           .required = true},
          {.name = "instances",
           .kind = ValueKind::kInteger,
           .description = "Instances: instance 1 is the manager, the rest workers; a count (all "
                          "on this machine) or a list placing each on a host ({on: HOST, bind: "
                          "ADDRESS, binary: PATH})",
           .default_text = "2",
           .minimum = 1,
           .maximum = 64,
           .or_list = external_placement_schema()},
          {.name = "mesh_port",
           .kind = ValueKind::kInteger,
           .description = "Manager's mesh port",
           .default_text = "6320",
           .minimum = 1,
           .maximum = 65535},
          {.name = "bind",
           .kind = ValueKind::kIpv4,
           .description = "Manager address the workers connect to",
           .default_text = "127.0.0.1"},
          {.name = "socket_dir",
           .kind = ValueKind::kString,
           .description = "Directory of the vfio-user sockets (paths must stay under 108 bytes)",
           .default_text = "/tmp/ernic-ext-RUN"},
          {.name = "log_level",
           .kind = ValueKind::kEnum,
           .enum_values = {"none", "error", "warn", "info", "debug"},
           .default_text = "info"},
          {.name = "ready_timeout",
           .kind = ValueKind::kDuration,
           .description = "Per instance: socket file and ready log line",
           .default_text = "30s"},
          {.name = "stop_timeout",
           .kind = ValueKind::kDuration,
           .description = "Wait after SIGTERM before SIGKILL",
           .default_text = "5s"},
          {.name = "ready_pattern",
           .kind = ValueKind::kString,
           .description = "Regular expression of the log line that says the device is ready",
           .default_text = "realized"},
          {.name = "tap",
           .kind = ValueKind::kObject,
           .description = "Guest Ethernet through host TAPs (created beforehand, see "
                          "docs/emulator-external.md)",
           .object = std::make_shared<ObjectSchema>(ObjectSchema{
               .description = "",
               .fields = {{.name = "enabled", .kind = ValueKind::kBoolean, .default_text = "true"},
                          {.name = "bridge",
                           .kind = ValueKind::kString,
                           .description = "Bridge the TAPs are on",
                           .default_text = "ernicbr0"},
                          {.name = "prefix",
                           .kind = ValueKind::kString,
                           .description = "TAP of instance N is PREFIX{N}",
                           .default_text = "ernic-tap"}}})},
          {.name = "guests",
           .kind = ValueKind::kList,
           .description = "IPv4 of the guest of each instance, in instance order",
           .element = ValueKind::kIpv4,
           .default_text = "192.168.200.{10*id}"},
          {.name = "extra_args",
           .kind = ValueKind::kList,
           .description = "Appended to every instance's command line",
           .element = ValueKind::kString},
      }};
  return schema;
}

class ExternalEmulator final : public EmulatorKind {
 public:
  std::string_view name() const override { return "external"; }
  std::string_view description() const override {
    return "The rocm-ernic server (binary): a manager and workers over its TCP mesh, on this "
           "machine or placed on the scenario's hosts";
  }
  const ObjectSchema& schema() const override { return external_schema(); }
  int instance_count(const Config& config) const override {
    const auto placed = external_placements(config);
    return placed.empty() ? static_cast<int>(config.integer("instances", 2))
                          : static_cast<int>(placed.size());
  }
  std::vector<std::string> placement_hosts(const Config& config) const override {
    return placement_hosts_of(external_placements(config));
  }
  void check(const Config& config, const std::vector<std::string>& host_names,
             Diagnostics& out) const override {
    check_placements(config, host_names, out);
    check_external_placements(config, out);
  }
  std::vector<std::string> describe(const Config& config,
                                    const EmulatorContext& context) const override {
    ExternalSettings settings = parse_external_settings(config);
    if (auto placements = external_placements(config); !placements.empty()) {
      return describe_placed_external(settings, placements, context);
    }
    std::vector<std::string> lines;
    for (const auto& plan :
         plan_external_instances(settings, external_socket_dir(settings, context.run_token),
                                 context.run_dir / "emulator")) {
      CommandSpec spec{.argv = plan.argv, .timeout = {}, .env = plan.env};
      lines.push_back(spec.display());
    }
    return lines;
  }
  HostFacts planned_facts(const Config& config, const EmulatorContext& context,
                          int instance) const override {
    ExternalSettings settings = parse_external_settings(config);
    if (auto placements = external_placements(config); !placements.empty()) {
      return planned_placed_external_facts(settings, placements, context, instance);
    }
    for (const auto& plan :
         plan_external_instances(settings, external_socket_dir(settings, context.run_token),
                                 context.run_dir / "emulator")) {
      if (plan.id == instance) {
        return external_facts(plan);
      }
    }
    return {};
  }

  std::unique_ptr<RunningEmulator> start(const Config& config, EmulatorContext& context) override {
    ExternalSettings settings = parse_external_settings(config);
    if (settings.binary.empty()) {
      throw std::runtime_error(
          "emulator.binary is required for kind external (the rocm-ernic server)");
    }
    if (auto placements = external_placements(config); !placements.empty()) {
      if (context.bring_up) {
        throw std::runtime_error(kPlacedUpRefusal);
      }
      return start_placed_external(settings, placements, context);
    }
    if (::access(settings.binary.c_str(), X_OK) != 0) {
      throw std::runtime_error(
          fmt::format("emulator.binary {} is not an executable file", settings.binary));
    }
    auto socket_dir = external_socket_dir(settings, context.run_token);
    auto log_dir = context.run_dir / "emulator";
    std::filesystem::create_directories(log_dir);
    if (!std::filesystem::exists(socket_dir)) {
      std::filesystem::create_directories(socket_dir);
      context.cleanup->push(fmt::format("remove {}", socket_dir.string()),
                            [socket_dir] { std::filesystem::remove_all(socket_dir); });
    }
    auto plans = plan_external_instances(settings, socket_dir, log_dir);
    check_socket_paths(plans);
    std::string version = version_of(settings.binary);
    ExternalInstances instances;
    try {
      // The manager first: workers connect to it.
      for (auto& plan : plans) {
        std::filesystem::remove(plan.socket);  // a stale socket would read as ready
        // Output goes to a file, not a pipe: an instance `ernicctl up` leaves running keeps
        // printing after ernicctl is gone.
        auto process = Subprocess::spawn({.argv = plan.argv,
                                          .env = plan.env,
                                          .netns_path = "",
                                          .stdin_file = "",
                                          .output_file = plan.console.string(),
                                          .may_outlive_ernicctl = context.bring_up},
                                         {});
        auto instance = std::make_shared<LocalInstance>(std::move(plan), std::move(process));
        instances.push_back(instance);
        context.cleanup->push(fmt::format("stop {}", instance->name()),
                              [instance, stop = settings.stop_timeout] { instance->stop(stop); });
        if (instance->plan().id == 1) {
          wait_ready(*instance, settings, Clock::now() + settings.ready_timeout);
        }
      }
      auto deadline = Clock::now() + settings.ready_timeout;
      for (std::size_t i = 1; i < instances.size(); ++i) {
        wait_ready(*instances[i], settings, deadline);
      }
    } catch (...) {
      for (const auto& instance : instances) {
        instance->stop(settings.stop_timeout);
      }
      throw;
    }
    // For a person reading the run directory; the running instances are held in memory, so a full
    // run directory must not stop them.
    if (auto reason =
            write_file_durably_or_reason(context.run_dir / "instances.json",
                                         instance_manifest_text(external_manifest(instances)));
        !reason.empty()) {
      std::cerr << "warning: " << reason << "\n";
    }
    return running_external(std::move(settings), std::move(instances), std::move(version));
  }
};

}  // namespace

EmulatorKind& external_emulator() {
  static ExternalEmulator kind;
  return kind;
}

}  // namespace ernic
