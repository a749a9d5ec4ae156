#include "emulators/external_running.h"

#include <fmt/format.h>

#include <deque>
#include <sstream>

#include "base/units.h"

namespace ernic {

bool has_matching_line(const std::string& text, const std::regex& pattern) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, pattern)) {
      return true;
    }
  }
  return false;
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

void wait_ready(ExternalInstance& instance, const ExternalSettings& settings,
                Clock::time_point deadline) {
  while (true) {
    const ExternalInstance::Readiness ready = instance.readiness(settings);
    if (ready.socket && ready.logged) {
      return;
    }
    if (std::string end = instance.ended(); !end.empty()) {
      throw std::runtime_error(fmt::format("{} {} before it was ready; last log lines:\n{}",
                                           instance.name(), end, instance.log_tail()));
    }
    auto now = Clock::now();
    if (now >= deadline) {
      throw std::runtime_error(
          fmt::format("{} was not ready within {}: socket {} {}, {} line matching '{}' in its log; "
                      "last log lines:\n{}",
                      instance.name(), format_duration(settings.ready_timeout),
                      instance.plan().socket.string(), ready.socket ? "exists" : "does not exist",
                      ready.logged ? "a" : "no", settings.ready_pattern, instance.log_tail()));
    }
    // Doubles as the poll interval: returns early when the instance ends.
    if (!instance.pause(std::min(deadline, now + std::chrono::milliseconds(50)))) {
      throw std::runtime_error(fmt::format("interrupted while waiting for {}", instance.name()));
    }
  }
}

InstanceManifest external_manifest(const ExternalInstances& instances) {
  InstanceManifest manifest;
  for (const auto& instance : instances) {
    const ExternalInstancePlan& plan = instance->plan();
    manifest.instances.push_back(
        ManifestInstance{.id = plan.id,
                         .role = plan.role,
                         .on = plan.on.empty() ? std::nullopt : std::optional<std::string>(plan.on),
                         .pid = static_cast<pid_t>(instance->pid()),
                         .mac = plan.mac,
                         .socket = plan.socket.string(),
                         .gids = plan.gids,
                         .log = plan.log.string(),
                         .stats = plan.stats.string(),
                         // Filled in by whoever attaches a guest (`ernicctl up`).
                         .vm = InstanceGuest{}});
  }
  return manifest;
}

HostFacts external_facts(const ExternalInstancePlan& plan) {
  return {{"emulator_socket", plan.socket.string()},
          {"emulator_instance", std::to_string(plan.id)},
          {"emulator_role", plan.role},
          {"emulator_mac", plan.mac},
          {"emulator_gids", plan.gids},
          {"emulator_guest_ip", plan.guest_ip},
          {"emulator_tap", plan.tap}};
}

namespace {

class RunningExternal final : public RunningEmulator {
 public:
  RunningExternal(ExternalSettings settings, ExternalInstances instances, std::string version)
      : settings_(std::move(settings)),
        instances_(std::move(instances)),
        version_(std::move(version)) {}

  std::string check_alive() override {
    std::string report;
    for (const auto& instance : instances_) {
      if (std::string end = instance->ended(); !end.empty()) {
        report += fmt::format("{}{} {}; last log lines:\n{}", report.empty() ? "" : "\n",
                              instance->name(), end, instance->log_tail());
      }
    }
    return report;
  }
  int instance_count() const override { return static_cast<int>(instances_.size()); }
  HostFacts facts_for(int id) const override {
    for (const auto& instance : instances_) {
      if (instance->plan().id == id) {
        return external_facts(instance->plan());
      }
    }
    throw std::out_of_range(fmt::format("no emulator instance {}", id));
  }
  InstanceManifest manifest() const override { return external_manifest(instances_); }
  bool detach() override {
    // All or none: an instance that cannot outlive ernicctl would leave a broken mesh.
    for (const auto& instance : instances_) {
      if (!instance->may_outlive_ernicctl()) {
        return false;
      }
    }
    for (const auto& instance : instances_) {
      instance->release();
    }
    return true;
  }
  nlohmann::json record() const override {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& instance : instances_) {
      const ExternalInstancePlan& plan = instance->plan();
      nlohmann::json entry = {{"id", plan.id},
                              {"role", plan.role},
                              {"mac", plan.mac},
                              {"gids", plan.gids},
                              {"log", plan.log.filename().string()},
                              {"stats", plan.stats.filename().string()}};
      if (!plan.on.empty()) {
        entry["on"] = plan.on;
        entry["binary"] = plan.argv.front();
        entry["backend"] = plan.argv.at(2);
      }
      list.push_back(std::move(entry));
    }
    nlohmann::json record = {
        {"kind", "external"}, {"binary", settings_.binary}, {"instances", list}};
    record["version"] = version_.empty() ? nlohmann::json(nullptr) : nlohmann::json(version_);
    return record;
  }

 private:
  ExternalSettings settings_;
  ExternalInstances instances_;
  std::string version_;
};

}  // namespace

std::unique_ptr<RunningEmulator> running_external(ExternalSettings settings,
                                                  ExternalInstances instances,
                                                  std::string version) {
  return std::make_unique<RunningExternal>(std::move(settings), std::move(instances),
                                           std::move(version));
}

}  // namespace ernic
