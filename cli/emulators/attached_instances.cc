#include "emulators/attached_instances.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>

#include "base/subprocess.h"
#include "emulators/instance_machines.h"
#include "supervisor.h"

namespace ernic {
namespace {
// An SSH round trip per check: instances on other machines are looked at this often at most.
constexpr auto kRemoteCheckInterval = std::chrono::seconds(2);

class AttachedInstances final : public RunningEmulator {
 public:
  AttachedInstances(std::string kind, std::vector<ManifestInstance> instances)
      : kind_(std::move(kind)), instances_(std::move(instances)) {
    for (const auto& instance : instances_) {
      if (instance.remote) {
        remote_.push_back(*instance.remote);
      }
    }
  }

  // A gone instance first: the peers that lost it only echo its death.
  std::string check_alive() override {
    std::lock_guard lock(mutex_);
    for (const auto& instance : instances_) {
      if (!instance.remote && !process_running(instance.pid)) {
        return fmt::format("{}, left running by `ernicctl up`, is gone; last log lines:{}",
                           instance.describe(), emu::Supervisor::tail(instance.log, 10));
      }
    }
    if (std::string dead = check_remote(); !dead.empty()) {
      return dead;
    }
    for (const auto& instance : instances_) {
      if (instance.remote) {
        continue;
      }
      const auto stats = emu::Supervisor::read_stats(instance.stats);
      if (auto lost = stats.find("mesh_nodes_lost"); lost != stats.end() && lost->second != "0") {
        return fmt::format("{} lost {} mesh peer(s); last log lines:{}", instance.describe(),
                           lost->second, emu::Supervisor::tail(instance.log, 10));
      }
    }
    return "";
  }
  int instance_count() const override { return static_cast<int>(instances_.size()); }
  // Attached hosts keep the facts `up` recorded for them, instance facts included.
  HostFacts facts_for(int instance) const override {
    throw std::out_of_range(fmt::format("instance {} is attached, not started", instance));
  }
  nlohmann::json record() const override {
    return {{"kind", kind_}, {"attached", true}, {"instances", instances_}};
  }
  InstanceManifest manifest() const override { return InstanceManifest{.instances = instances_}; }

 private:
  // Instances on other machines, through a login to each (made again when it was lost): a
  // gone one first, then one that lost a mesh peer.
  std::string check_remote() {
    if (remote_.empty() || Clock::now() < next_remote_check_) {
      return "";
    }
    next_remote_check_ = Clock::now() + kRemoteCheckInterval;
    const RemoteInstance* checking = nullptr;
    try {
      for (const auto& remote : remote_) {
        checking = &remote;
        Host& host = machine(remote);
        if (std::string condition = remote_condition(host, remote); condition != "up") {
          return fmt::format("{}, left running by `ernicctl up`, is {}; {}", remote.describe(),
                             condition, last_lines(host, remote));
        }
      }
      for (const auto& remote : remote_) {
        checking = &remote;
        Host& host = machine(remote);
        const auto stats = remote_stats(host, remote.stats);
        if (auto lost = stats.find("mesh_nodes_lost"); lost != stats.end() && lost->second != "0") {
          return fmt::format("{} lost {} mesh peer(s); {}", remote.describe(), lost->second,
                             last_lines(host, remote));
        }
      }
    } catch (const std::exception& e) {
      machines_.clear();
      return fmt::format("{}, left running by `ernicctl up`, cannot be checked: {}",
                         checking->describe(), e.what());
    }
    return "";
  }
  Host& machine(const RemoteInstance& remote) {
    auto& host = machines_[remote.on];
    if (host == nullptr || !host->check_alive().empty()) {
      host = reconnect(remote);
    }
    return *host;
  }
  static std::string last_lines(Host& host, const RemoteInstance& remote) {
    return fmt::format("last log lines ({} on {}):\n{}", remote.log, remote.on,
                       trimmed(run_to_end(host, {"tail", "-n", "10", remote.log}).out));
  }

  std::string kind_;
  std::vector<ManifestInstance> instances_;
  std::vector<RemoteInstance> remote_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Host>> machines_;
  Clock::time_point next_remote_check_{};
};

}  // namespace

std::unique_ptr<RunningEmulator> attached_instances(std::string kind,
                                                    std::vector<ManifestInstance> instances) {
  return std::make_unique<AttachedInstances>(std::move(kind), std::move(instances));
}

std::unique_ptr<RunningEmulator> EmulatorKind::attach(
    const std::vector<ManifestInstance>& instances, EmulatorContext& /*context*/) {
  return attached_instances(std::string(name()), instances);
}

std::vector<std::string> rebuilt_instance_programs(const std::vector<ManifestInstance>& instances) {
  std::vector<std::string> rebuilt;
  for (const auto& instance : instances) {
    if (instance.remote) {
      continue;  // its pid is another machine's
    }
    const std::string exe = fmt::format("/proc/{}/exe", instance.pid);
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
      rebuilt.push_back(
          fmt::format("{} runs {}, rebuilt since it started", instance.describe(), program));
    }
  }
  return rebuilt;
}

}  // namespace ernic
