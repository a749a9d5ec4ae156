#include "hosts/libvirt/libvirt_guest_region.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include "base/local_process.h"
#include "hosts/libvirt/libvirt_connection.h"
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
  if (uri.rfind("test://", 0) == 0) {
    return "";
  }
  if (!is_local_system_uri(uri)) {
    return fmt::format(
        "hosts.{}: a guest on the libvirt host {} cannot be served by an embedded instance on "
        "this machine (its guest region is this machine's shared memory); run it on this "
        "machine's libvirt (qemu:///system)",
        host, uri);
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
  const std::string& help = qemu_device_help ? *qemu_device_help : probed;
  if (help.find("name \"ivshmem-plain\"") == std::string::npos) {
    return fmt::format(
        "hosts.{}: QEMU on this machine has no ivshmem-plain device, which guests on embedded "
        "instances need ({}); QEMU 7.2 (Debian 12) has it",
        host, help.substr(0, help.find('\n')));
  }
  return "";
}

void attach_guest_region(const std::string& host, const std::string& run_token, int instance,
                         const std::optional<FileOwner>& owner, DomainSpec& spec) {
  const std::filesystem::path region = emu::guest_region_path(run_token, instance);
  std::error_code error;
  const auto size = std::filesystem::file_size(region, error);
  if (error) {
    throw std::runtime_error(fmt::format(
        "hosts.{}: emulator instance {} has no guest region {} ({}): was it started for this "
        "run?",
        host, instance, region.string(), error.message()));
  }
  if (owner && chown(region.c_str(), owner->uid, owner->gid) != 0) {
    throw std::runtime_error(
        fmt::format("hosts.{}: cannot hand the guest region {} to QEMU's "
                    "user {}:{}: {}",
                    host, region.string(), owner->uid, owner->gid, std::strerror(errno)));
  }
  spec.guest_region = region.filename().string();
  spec.guest_region_mib = size >> 20;
}

}  // namespace ernic
