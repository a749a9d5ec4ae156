#include "emulators/attached_instances.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>

#include "run/leftovers.h"
#include "supervisor.h"

namespace ernic {
namespace {
using nlohmann::json;

std::string text_at(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string describe_instance(const json& instance) {
  return fmt::format("instance {} ({}, pid {})", instance.value("id", 0),
                     instance.value("role", std::string("?")), instance.value("pid", 0L));
}

class AttachedInstances final : public RunningEmulator {
 public:
  AttachedInstances(std::string kind, json instances)
      : kind_(std::move(kind)), instances_(std::move(instances)) {}

  // A gone instance first: the peers that lost it only echo its death.
  std::string check_alive() override {
    for (const auto& instance : instances_) {
      if (!process_running(instance.value("pid", pid_t{0}))) {
        return fmt::format("{}, left running by `ernicctl up`, is gone; last log lines:{}",
                           describe_instance(instance),
                           emu::Supervisor::tail(text_at(instance, "log"), 10));
      }
    }
    for (const auto& instance : instances_) {
      const auto stats = emu::Supervisor::read_stats(text_at(instance, "stats"));
      if (auto lost = stats.find("mesh_nodes_lost"); lost != stats.end() && lost->second != "0") {
        return fmt::format("{} lost {} mesh peer(s); last log lines:{}",
                           describe_instance(instance), lost->second,
                           emu::Supervisor::tail(text_at(instance, "log"), 10));
      }
    }
    return "";
  }
  int instance_count() const override { return static_cast<int>(instances_.size()); }
  // Attached hosts keep the facts `up` recorded for them, instance facts included.
  HostFacts facts_for(int instance) const override {
    throw std::out_of_range(fmt::format("instance {} is attached, not started", instance));
  }
  json record() const override {
    return {{"kind", kind_}, {"attached", true}, {"instances", instances_}};
  }
  json manifest() const override { return {{"instances", instances_}}; }

 private:
  std::string kind_;
  json instances_;
};

}  // namespace

std::unique_ptr<RunningEmulator> attached_instances(std::string kind, json instances) {
  return std::make_unique<AttachedInstances>(std::move(kind), std::move(instances));
}

std::unique_ptr<RunningEmulator> EmulatorKind::attach(const nlohmann::json& instances,
                                                      EmulatorContext& /*context*/) {
  return attached_instances(std::string(name()), instances);
}

std::vector<std::string> rebuilt_instance_programs(const json& instances) {
  std::vector<std::string> rebuilt;
  for (const auto& instance : instances) {
    const std::string exe = fmt::format("/proc/{}/exe", instance.value("pid", 0L));
    std::error_code unreadable;
    std::string program = std::filesystem::read_symlink(exe, unreadable).string();
    if (unreadable) {
      continue;  // gone: check_alive() says so
    }
    const std::string kDeleted = " (deleted)";
    if (program.ends_with(kDeleted)) {
      program.resize(program.size() - kDeleted.size());
    }
    struct stat running {};
    struct stat on_disk {};
    if (::stat(exe.c_str(), &running) != 0) {
      continue;
    }
    if (::stat(program.c_str(), &on_disk) != 0 || on_disk.st_ino != running.st_ino ||
        on_disk.st_dev != running.st_dev) {
      rebuilt.push_back(fmt::format("{} runs {}, rebuilt since it started",
                                    describe_instance(instance), program));
    }
  }
  return rebuilt;
}

}  // namespace ernic
