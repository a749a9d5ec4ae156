#include "hosts/libvirt/libvirt_guest_region.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <stdexcept>

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
