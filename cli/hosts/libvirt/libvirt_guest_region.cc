#include "hosts/libvirt/libvirt_guest_region.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include "base/local_process.h"
#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/ssh/ssh_host.h"
#include "supervisor.h"

namespace ernic {

std::optional<FileOwner> qemu_dac_owner(const std::string& capabilities_xml,
                                        Accelerator accelerator) {
  const std::string type = accelerator == Accelerator::kKvm ? "kvm" : "qemu";
  const std::regex label{"<baselabel\\s+type=['\"]" + type +
                         "['\"]>\\s*\\+?(\\d+):\\+?(\\d+)\\s*</baselabel>"};
  std::smatch match;
  const auto dac = capabilities_xml.find("<model>dac</model>");
  if (dac == std::string::npos) {
    return std::nullopt;
  }
  const std::string after = capabilities_xml.substr(dac);
  if (!std::regex_search(after, match, label)) {
    return std::nullopt;
  }
  return FileOwner{static_cast<uid_t>(std::stoul(match[1].str())),
                   static_cast<gid_t>(std::stoul(match[2].str()))};
}

bool served_by_embedded_instance(const Config& scenario, int instance) {
  return instance > 0 && scenario.object("emulator").text("kind", "none") == "embedded";
}

std::string guest_region_unsupported(const std::string& host, const std::string& uri,
                                     const std::optional<std::string>& qemu_device_help) {
  // Another machine's QEMU is not probed from here: `ernicctl doctor HOST` checks it there. That
  // its instance runs on that machine is the scenario's check (check_guest_region_machines).
  if (uri.rfind("test://", 0) == 0 || !is_local_system_uri(uri)) {
    return "";
  }
  static const std::string probed = [] {
    const std::string qemu = "qemu-system-x86_64";
    if (!local_program_exists(qemu)) {
      return qemu + " is not installed (fix: apt-get install qemu-system-x86)";
    }
    LocalProcessOptions options;
    options.timeout = std::chrono::seconds(30);
    auto result = run_local({qemu, "-device", "help"}, options);
    return result.ok() ? result.output
                       : fmt::format("`{} -device help` failed: {}", qemu, result.describe());
  }();
  return ivshmem_missing(host, "this machine", qemu_device_help ? *qemu_device_help : probed);
}

std::string ivshmem_missing(const std::string& host, const std::string& machine,
                            const std::string& qemu_device_help) {
  if (qemu_device_help.find("name \"ivshmem-plain\"") == std::string::npos) {
    return fmt::format(
        "hosts.{}: QEMU on {} has no ivshmem-plain device, which guests on embedded instances "
        "need ({}); QEMU 7.2 (Debian 12) has it",
        host, machine, qemu_device_help.substr(0, qemu_device_help.find('\n')));
  }
  return "";
}

RegionHandOver local_region_hand_over() {
  return [](const std::filesystem::path& region,
            const std::optional<FileOwner>& owner) -> std::uint64_t {
    std::error_code error;
    const auto size = std::filesystem::file_size(region, error);
    if (error) {
      throw std::runtime_error(error.message());
    }
    if (owner && chown(region.c_str(), owner->uid, owner->gid) != 0) {
      throw std::runtime_error(fmt::format("cannot hand it to QEMU's user {}:{}: {}", owner->uid,
                                           owner->gid, std::strerror(errno)));
    }
    return size;
  };
}

std::string run_on_libvirt_host(const GuestJump& login, const std::string& script) {
  SshConnectOptions options;
  options.label = "libvirt host " + login.host.display();
  options.target = login.host;
  options.known_hosts = login.known_hosts;
  SshHost machine(options.label, login.host.host, options);
  const CommandResult result = machine
                                   .start(CommandSpec{.argv = {"sh", "-c", script},
                                                      .timeout = std::chrono::seconds(30),
                                                      .env = {}},
                                          nullptr)
                                   ->wait(Clock::now() + std::chrono::seconds(30));
  if (!result.ok()) {
    std::string said = result.output();
    while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) {
      said.pop_back();
    }
    throw std::runtime_error(
        fmt::format("on {}: `{}` {}: {}", login.host.display(), script, result.describe(), said));
  }
  return result.out;
}

RegionHandOver remote_region_hand_over(GuestJump login) {
  return [login = std::move(login)](const std::filesystem::path& region,
                                    const std::optional<FileOwner>& owner) -> std::uint64_t {
    const std::string quoted = shell_quote(region.string());
    std::string script = "stat -c %s " + quoted;
    if (owner) {
      script = fmt::format("chown {}:{} {} && {}", owner->uid, owner->gid, quoted, script);
    }
    return std::stoull(run_on_libvirt_host(login, script));
  };
}

void attach_guest_region(const std::string& host, const std::string& run_token, int instance,
                         const std::optional<FileOwner>& owner, const RegionHandOver& hand_over,
                         DomainSpec& spec) {
  const std::filesystem::path region = emu::guest_region_path(run_token, instance);
  std::uint64_t size = 0;
  try {
    size = hand_over(region, owner);
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format(
        "hosts.{}: emulator instance {}'s guest region {} on QEMU's machine: {} (was the "
        "instance started for this run, on that machine?)",
        host, instance, region.string(), error.what()));
  }
  spec.guest_region = region.filename().string();
  spec.guest_region_mib = size >> 20;
}

}  // namespace ernic
