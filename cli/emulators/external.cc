// `emulator: {kind: external, binary: PATH}`: the real rocm-ernic server, a manager and N-1
// workers on the TCP mesh, each told which GIDs its guest owns.
#include "emulators/external.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <deque>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "common/subprocess.h"
#include "common/units.h"
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

namespace {

// What a host attached to the planned instance learns of it.
HostFacts facts_of(const ExternalInstancePlan& plan) {
  return {{"emulator_socket", plan.socket.string()},
          {"emulator_instance", std::to_string(plan.id)},
          {"emulator_role", plan.role},
          {"emulator_mac", plan.mac},
          {"emulator_gids", plan.gids},
          {"emulator_guest_ip", plan.guest_ip},
          {"emulator_tap", plan.tap}};
}

std::filesystem::path socket_dir_of(const ExternalSettings& settings,
                                    const EmulatorContext& context) {
  return settings.socket_dir.empty() ? std::filesystem::temp_directory_path() /
                                           fmt::format("ernic-ext-{}", context.run_token)
                                     : std::filesystem::path(settings.socket_dir);
}

}  // namespace

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

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string last_lines(const std::string& text, std::size_t count) {
  std::deque<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > count) {
      lines.pop_front();
    }
  }
  std::string out;
  for (const auto& line : lines) {
    out += "    " + line + "\n";
  }
  return out;
}

bool socket_file_exists(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_socket(path, error);
}

struct Instance {
  ExternalInstancePlan plan;
  std::unique_ptr<Subprocess> process;

  std::string name() const {
    return fmt::format("external emulator instance {} ({}, pid {})", plan.id, plan.role,
                       process ? process->pid() : -1);
  }
  // The log file and the process's own output, whichever the server wrote to.
  std::string log_tail() const {
    std::string tail =
        last_lines(read_file(plan.log), 10) + last_lines(read_file(plan.console), 10);
    return tail.empty() ? "    (no log output)\n" : tail;
  }
  std::string exit_description() const {
    if (process->term_signal() != 0) {
      return fmt::format("was killed by signal {}", process->term_signal());
    }
    return fmt::format("exited with status {}", process->exit_code());
  }
  bool log_matches(const std::regex& pattern) const {
    auto matches = [&](const std::string& text) {
      std::istringstream in(text);
      for (std::string line; std::getline(in, line);) {
        if (std::regex_search(line, pattern)) {
          return true;
        }
      }
      return false;
    };
    return matches(read_file(plan.log)) || matches(read_file(plan.console));
  }
};

using Instances = std::vector<std::shared_ptr<Instance>>;

void wait_ready(Instance& instance, const ExternalSettings& settings,
                std::chrono::steady_clock::time_point deadline) {
  const std::regex pattern(settings.ready_pattern);
  while (true) {
    bool socket_there = socket_file_exists(instance.plan.socket);
    bool logged = instance.log_matches(pattern);
    if (socket_there && logged) {
      return;
    }
    if (!instance.process->running()) {
      instance.process->finish_output();
      throw std::runtime_error(fmt::format("{} {} before it was ready; last log lines:\n{}",
                                           instance.name(), instance.exit_description(),
                                           instance.log_tail()));
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      throw std::runtime_error(
          fmt::format("{} was not ready within {}: socket {} {}, {} line matching '{}' in its log; "
                      "last log lines:\n{}",
                      instance.name(), format_duration(settings.ready_timeout),
                      instance.plan.socket.string(), socket_there ? "exists" : "does not exist",
                      logged ? "a" : "no", settings.ready_pattern, instance.log_tail()));
    }
    // Doubles as the poll interval: returns early when the process exits.
    if (instance.process->wait_until(std::min(deadline, now + std::chrono::milliseconds(50))) ==
        Subprocess::WaitEnd::kInterrupted) {
      throw std::runtime_error(fmt::format("interrupted while waiting for {}", instance.name()));
    }
  }
}

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

nlohmann::json manifest_of(const Instances& instances) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& instance : instances) {
    list.push_back({{"id", instance->plan.id},
                    {"role", instance->plan.role},
                    {"pid", instance->process->pid()},
                    {"mac", instance->plan.mac},
                    {"socket", instance->plan.socket.string()},
                    {"gids", instance->plan.gids},
                    {"log", instance->plan.log.string()},
                    {"stats", instance->plan.stats.string()},
                    // Filled in by whoever attaches a guest (`ernicctl up`).
                    {"vm", {{"attached", false}}}});
  }
  return {{"instances", list}};
}

class RunningExternal final : public RunningEmulator {
 public:
  RunningExternal(ExternalSettings settings, Instances instances, std::string version)
      : settings_(std::move(settings)),
        instances_(std::move(instances)),
        version_(std::move(version)) {}

  std::string check_alive() override {
    std::string report;
    for (const auto& instance : instances_) {
      if (!instance->process->running()) {
        instance->process->finish_output(std::chrono::milliseconds(500));
        report += fmt::format("{}{} {}; last log lines:\n{}", report.empty() ? "" : "\n",
                              instance->name(), instance->exit_description(), instance->log_tail());
      }
    }
    return report;
  }
  int instance_count() const override { return static_cast<int>(instances_.size()); }
  HostFacts facts_for(int id) const override {
    for (const auto& instance : instances_) {
      if (instance->plan.id == id) {
        return facts_of(instance->plan);
      }
    }
    throw std::out_of_range(fmt::format("no emulator instance {}", id));
  }
  nlohmann::json manifest() const override { return manifest_of(instances_); }
  bool detach() override {
    // Only instances started for `ernicctl up` can outlive ernicctl.
    for (const auto& instance : instances_) {
      if (!instance->process->may_outlive_ernicctl()) {
        return false;
      }
    }
    for (const auto& instance : instances_) {
      instance->process->release();
    }
    return true;
  }
  nlohmann::json record() const override {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& instance : instances_) {
      list.push_back({{"id", instance->plan.id},
                      {"role", instance->plan.role},
                      {"mac", instance->plan.mac},
                      {"gids", instance->plan.gids},
                      {"log", instance->plan.log.filename().string()},
                      {"stats", instance->plan.stats.filename().string()}});
    }
    nlohmann::json record = {
        {"kind", "external"}, {"binary", settings_.binary}, {"instances", list}};
    record["version"] = version_.empty() ? nlohmann::json(nullptr) : nlohmann::json(version_);
    return record;
  }

 private:
  ExternalSettings settings_;
  Instances instances_;
  std::string version_;
};

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
           .description = "Instances: instance 1 is the manager, the rest workers",
           .default_text = "2",
           .minimum = 1,
           .maximum = 64},
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
    return "The rocm-ernic server (binary): a manager and workers over its TCP mesh on this "
           "machine";
  }
  const ObjectSchema& schema() const override { return external_schema(); }
  int instance_count(const Config& config) const override {
    return static_cast<int>(config.integer("instances", 2));
  }
  std::vector<std::string> describe(const Config& config,
                                    const EmulatorContext& context) const override {
    ExternalSettings settings = parse_external_settings(config);
    std::vector<std::string> lines;
    for (const auto& plan : plan_external_instances(settings, socket_dir_of(settings, context),
                                                    context.run_dir / "emulator")) {
      CommandSpec spec{.argv = {}, .timeout = {}, .env = plan.env};
      for (const auto& arg : plan.argv) {
        spec.argv.push_back(arg);
      }
      lines.push_back(spec.display());
    }
    return lines;
  }
  HostFacts planned_facts(const Config& config, const EmulatorContext& context,
                          int instance) const override {
    ExternalSettings settings = parse_external_settings(config);
    for (const auto& plan : plan_external_instances(settings, socket_dir_of(settings, context),
                                                    context.run_dir / "emulator")) {
      if (plan.id == instance) {
        return facts_of(plan);
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
    if (::access(settings.binary.c_str(), X_OK) != 0) {
      throw std::runtime_error(
          fmt::format("emulator.binary {} is not an executable file", settings.binary));
    }
    auto socket_dir = socket_dir_of(settings, context);
    auto log_dir = context.run_dir / "emulator";
    std::filesystem::create_directories(log_dir);
    if (!std::filesystem::exists(socket_dir)) {
      std::filesystem::create_directories(socket_dir);
      context.cleanup->push(fmt::format("remove {}", socket_dir.string()),
                            [socket_dir] { std::filesystem::remove_all(socket_dir); });
    }
    auto plans = plan_external_instances(settings, socket_dir, log_dir);
    for (const auto& plan : plans) {
      if (plan.socket.string().size() >= 108) {
        throw std::runtime_error(
            fmt::format("socket path {} is longer than a UNIX socket allows (107 bytes); "
                        "set emulator.socket_dir to a shorter directory",
                        plan.socket.string()));
      }
    }
    std::string version = version_of(settings.binary);
    Instances instances;
    auto stop_all = [&instances, &settings] {
      for (const auto& instance : instances) {
        instance->process->terminate(settings.stop_timeout);
      }
    };
    try {
      auto deadline_from_now = [&] {
        return std::chrono::steady_clock::now() + settings.ready_timeout;
      };
      // The manager first: workers connect to it.
      for (auto& plan : plans) {
        auto instance = std::make_shared<Instance>();
        instance->plan = std::move(plan);
        std::filesystem::remove(instance->plan.socket);  // a stale socket would read as ready
        // Output goes to a file, not a pipe: an instance `ernicctl up` leaves running keeps
        // printing after ernicctl is gone.
        instance->process = Subprocess::spawn({.argv = instance->plan.argv,
                                               .env = instance->plan.env,
                                               .netns_path = "",
                                               .stdin_file = "",
                                               .output_file = instance->plan.console.string(),
                                               .may_outlive_ernicctl = context.bring_up},
                                              {});
        instances.push_back(instance);
        context.cleanup->push(
            fmt::format("stop {}", instance->name()),
            [instance, stop = settings.stop_timeout] { instance->process->terminate(stop); });
        if (instance->plan.id == 1) {
          wait_ready(*instance, settings, deadline_from_now());
        }
      }
      auto deadline = deadline_from_now();
      for (std::size_t i = 1; i < instances.size(); ++i) {
        wait_ready(*instances[i], settings, deadline);
      }
    } catch (...) {
      stop_all();
      throw;
    }
    std::ofstream(context.run_dir / "instances.json") << manifest_of(instances).dump(2) << "\n";
    return std::make_unique<RunningExternal>(std::move(settings), std::move(instances),
                                             std::move(version));
  }
};

}  // namespace

EmulatorKind& external_emulator() {
  static ExternalEmulator kind;
  return kind;
}

}  // namespace ernic
