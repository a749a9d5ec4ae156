// A started guest's readiness stages, and the Host it becomes once they have all passed.
#include "hosts/libvirt/libvirt_boot.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "hosts/libvirt/libvirt_readiness.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string serial_tail(const fs::path& log, std::size_t lines = 12) {
  std::ifstream in(log);
  if (!in) {
    return {};
  }
  std::vector<std::string> kept;
  std::string line;
  while (std::getline(in, line)) {
    // Boot status lines are full of terminal escapes; keep them readable.
    line = std::regex_replace(line, std::regex("\x1b\\[[0-9;]*[A-Za-z]"), "");
    kept.push_back(line);
    if (kept.size() > lines) {
      kept.erase(kept.begin());
    }
  }
  std::string text;
  for (const auto& kept_line : kept) {
    text += "    " + kept_line + "\n";
  }
  return text;
}

std::string state_text(int state) {
  return state < 0 ? "gone" : domain_state_name(state);
}

// One guest's stages: each polled until it passes or its own deadline ends, the time it took
// recorded; every failure says which stage, how the domain is and what its console last said.
class ReadinessStages {
 public:
  ReadinessStages(BootingGuest& guest, virConnectPtr connection,
                  const std::function<bool()>& stopped)
      : guest_(guest), connection_(connection), stopped_(stopped) {}

  void wait(const std::string& stage, std::chrono::seconds timeout,
            std::chrono::milliseconds interval, const std::function<std::string()>& attempt) {
    stage_start_ = SteadyClock::now();
    auto deadline = stage_start_ + timeout;
    while (true) {
      if (stopped_()) {
        throw std::runtime_error(
            fmt::format("{}: interrupted while waiting for stage '{}'", guest_.config.name, stage));
      }
      std::string why = attempt();
      if (why.empty()) {
        break;
      }
      if (stage != "running") {
        int state = domain_state(connection_, guest_.domain);
        if (state != VIR_DOMAIN_RUNNING) {
          fail(stage, timeout,
               fmt::format("the domain stopped ({}) while waiting: {}", state_text(state), why));
        }
      }
      if (SteadyClock::now() >= deadline) {
        fail(stage, timeout, why);
      }
      std::this_thread::sleep_for(interval);
    }
    guest_.stage_seconds[stage] =
        std::chrono::duration<double>(SteadyClock::now() - stage_start_).count();
  }

  [[noreturn]] void fail(const std::string& stage, std::chrono::seconds timeout,
                         const std::string& why) const {
    std::string tail = serial_tail(guest_.serial_log);
    throw std::runtime_error(fmt::format(
        "{}: readiness stage '{}' failed after {:.0f} s (timeout {} s): {}\n  domain {} is {}; "
        "serial console {}{}{}",
        guest_.config.name, stage,
        std::chrono::duration<double>(SteadyClock::now() - stage_start_).count(), timeout.count(),
        why, guest_.domain, state_text(domain_state(connection_, guest_.domain)),
        guest_.serial_log.string(), tail.empty() ? "" : ", last lines:\n", tail));
  }

 private:
  BootingGuest& guest_;
  virConnectPtr connection_;
  const std::function<bool()>& stopped_;
  SteadyClock::time_point stage_start_ = SteadyClock::now();
};

}  // namespace

std::string login_user(const BootingGuest& guest) {
  return guest.config.login == "root" ? "root" : guest.image.user;
}

void wait_until_ready(BootingGuest& guest, virConnectPtr connection,
                      const std::function<bool()>& stopped) {
  const StageTimeouts& timeouts = guest.config.timeouts;
  ReadinessStages stages(guest, connection, stopped);

  stages.wait("running", timeouts.running, std::chrono::milliseconds(200), [&] {
    int state = domain_state(connection, guest.domain);
    if (state == VIR_DOMAIN_RUNNING) {
      return std::string();
    }
    if (state == VIR_DOMAIN_SHUTOFF || state == VIR_DOMAIN_CRASHED || state < 0) {
      stages.fail("running", timeouts.running, "the domain is " + state_text(state));
    }
    return "the domain is " + state_text(state);
  });

  stages.wait("address", timeouts.address, std::chrono::seconds(1), [&] {
    if (guest.address.empty()) {
      guest.address = domain_lease_address(connection, guest.domain);
    }
    return guest.address.empty() ? fmt::format("no DHCP lease for MAC {} yet", guest.mac)
                                 : std::string();
  });

  std::string user = login_user(guest);
  // The probes take the route the guest's Host will: through the jump host when there is one.
  std::optional<SshConnectOptions> via;
  if (guest.jump) {
    via = guest_ssh_options(
        {guest.config.name, guest.address, 22, user, guest.image.private_key, {}, guest.jump});
    via->connect_timeout = std::chrono::seconds(10);
  }
  const SshConnectOptions* route = via ? &*via : nullptr;
  stages.wait("ssh", timeouts.ssh, std::chrono::seconds(1), [&] {
    return probe_ssh_banner(guest.address, 22, std::chrono::milliseconds(2000), route);
  });

  stages.wait("host_key", timeouts.host_key, std::chrono::seconds(2), [&] {
    std::string why =
        verify_host_key_and_login(guest.address, 22, guest.image.host_keys, user,
                                  guest.image.private_key, std::chrono::seconds(30), route);
    if (why.rfind("HOST KEY MISMATCH", 0) == 0) {
      stages.fail("host_key", timeouts.host_key, why);  // retrying cannot fix this
    }
    return why;
  });
}

std::unique_ptr<LibvirtGuest> make_ready_guest(const BootingGuest& guest,
                                               const LibvirtConnectionPtr& connection,
                                               const fs::path& known_hosts,
                                               const SshHostFactory& ssh_factory) {
  const LibvirtGuestConfig& config = guest.config;
  double t_init = std::chrono::duration<double>(SteadyClock::now() - guest.started).count();
  {
    // Appended, not replaced: the run's other guests add their keys to the same file.
    std::ofstream out(known_hosts, std::ios::app);
    for (const auto& key : guest.image.host_keys) {
      out << guest.address << " " << key.line() << "\n";
    }
    out.close();
    if (!out) {
      throw std::runtime_error(fmt::format("{}: cannot add its host keys to {}: {}", config.name,
                                           known_hosts.string(), std::strerror(errno)));
    }
  }
  std::string user = login_user(guest);
  GuestSshTarget target{config.name, guest.address, 22, user, guest.image.private_key,
                        known_hosts, guest.jump};
  std::map<std::string, std::string> facts{
      {"accelerator", accelerator_name(guest.accelerator.accelerator)},
      {"accelerator_reason", guest.accelerator.reason},
      {"t_init_s", fmt::format("{:.1f}", t_init)},
      {"domain", guest.domain},
      {"uri", config.uri},
      {"image", guest.image.manifest.string()},
      {"kernel", guest.image.kernel_version},
      {"vcpus", std::to_string(config.vcpus)},
      {"memory_mib", std::to_string(config.memory_mib)},
      {"emulated_nic", guest.emulated_nic},
      {"serial_log", guest.serial_log.string()},
      // How to log in later (`ernicctl ssh GUEST` after `ernicctl up`).
      {"ssh_user", user},
      {"ssh_key", fs::absolute(guest.image.private_key).string()},
      {"ssh_known_hosts", fs::absolute(known_hosts).string()},
  };
  if (guest.jump) {  // `ernicctl ssh` and attached runs go the same way
    facts["ssh_jump"] = guest.jump->host.display();
    facts["ssh_jump_key"] = guest.jump->host.key.string();
    facts["ssh_jump_known_hosts"] = guest.jump->known_hosts.string();
  }
  for (const auto& [stage, seconds] : guest.stage_seconds) {
    facts["stage_" + stage + "_s"] = fmt::format("{:.1f}", seconds);
  }
  return std::make_unique<LibvirtGuest>(connection, guest.domain, target, ssh_factory(target),
                                        std::move(facts), t_init);
}

}  // namespace ernic
