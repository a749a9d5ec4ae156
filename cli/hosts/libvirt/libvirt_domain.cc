#include "hosts/libvirt/libvirt_domain.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "image/recipe.h"

namespace ernic {

const char* accelerator_name(Accelerator accelerator) {
  return accelerator == Accelerator::kKvm ? "kvm" : "tcg";
}

std::string xml_escape(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&apos;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

std::string domain_xml(const DomainSpec& spec) {
  if (spec.name.empty()) {
    throw std::invalid_argument("domain: a name is required");
  }
  if (spec.disk.empty()) {
    throw std::invalid_argument(fmt::format("domain {}: no disk", spec.name));
  }
  if (spec.network.empty() == spec.bridge.empty()) {
    throw std::invalid_argument(fmt::format(
        "domain {}: give exactly one of a libvirt network and a host bridge", spec.name));
  }
  if (spec.vcpus < 1 || spec.memory_mib < 64) {
    throw std::invalid_argument(
        fmt::format("domain {}: needs at least 1 vCPU and 64 MiB of memory", spec.name));
  }
  if (spec.kernel.empty() && !spec.initrd.empty()) {
    throw std::invalid_argument(fmt::format("domain {}: an initrd needs a kernel", spec.name));
  }
  bool shared_memory = spec.shared_memory || !spec.vfio_user_socket.empty();
  bool kvm = spec.accelerator == Accelerator::kKvm;
  auto e = [](const auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::filesystem::path>) {
      return xml_escape(value.string());
    } else {
      return xml_escape(value);
    }
  };

  std::string xml;
  xml += fmt::format("<domain type='{}'{}>\n", kvm ? "kvm" : "qemu",
                     spec.vfio_user_socket.empty()
                         ? ""
                         : " xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'");
  xml += fmt::format("  <name>{}</name>\n", e(spec.name));
  xml += fmt::format("  <memory unit='MiB'>{}</memory>\n", spec.memory_mib);
  xml += fmt::format("  <vcpu placement='static'>{}</vcpu>\n", spec.vcpus);
  if (shared_memory) {
    xml +=
        "  <memoryBacking>\n    <source type='memfd'/>\n    <access mode='shared'/>\n"
        "  </memoryBacking>\n";
  }
  xml += "  <os>\n    <type arch='x86_64' machine='q35'>hvm</type>\n";
  if (!spec.kernel.empty()) {
    xml += fmt::format("    <kernel>{}</kernel>\n", e(spec.kernel));
    if (!spec.initrd.empty()) {
      xml += fmt::format("    <initrd>{}</initrd>\n", e(spec.initrd));
    }
    if (!spec.kernel_cmdline.empty()) {
      xml += fmt::format("    <cmdline>{}</cmdline>\n", e(spec.kernel_cmdline));
    }
  } else {
    xml += "    <boot dev='hd'/>\n";
  }
  xml += "  </os>\n";
  // Without ACPI libvirt passes -no-acpi and `virsh shutdown` does nothing.
  xml += "  <features>\n    <acpi/>\n    <apic/>\n  </features>\n";
  // KVM only when it really works (decided by the caller from CPU flags, never from /dev/kvm);
  // under TCG `maximum` gives the guest every feature QEMU can emulate.
  xml += kvm ? "  <cpu mode='host-passthrough'/>\n" : "  <cpu mode='maximum'/>\n";
  xml += "  <clock offset='utc'/>\n";
  xml +=
      "  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>restart</on_reboot>\n"
      "  <on_crash>destroy</on_crash>\n";
  xml += "  <devices>\n";
  if (!spec.emulator_binary.empty()) {
    xml += fmt::format("    <emulator>{}</emulator>\n", e(spec.emulator_binary));
  }
  // cache='unsafe': the overlay is thrown away at teardown, so host flushes buy nothing.
  xml += fmt::format(
      "    <disk type='file' device='disk'>\n"
      "      <driver name='qemu' type='{}' cache='unsafe'/>\n"
      "      <source file='{}'/>\n"
      "      <target dev='vda' bus='virtio'/>\n"
      "    </disk>\n",
      e(spec.disk_format), e(spec.disk));
  if (!spec.network.empty()) {
    xml += fmt::format("    <interface type='network'>\n      <source network='{}'/>\n",
                       e(spec.network));
  } else {
    xml +=
        fmt::format("    <interface type='bridge'>\n      <source bridge='{}'/>\n", e(spec.bridge));
  }
  if (!spec.mac.empty()) {
    xml += fmt::format("      <mac address='{}'/>\n", e(spec.mac));
  }
  xml += "      <model type='virtio'/>\n    </interface>\n";
  xml += "    <serial type='pty'>\n";
  if (!spec.serial_log.empty()) {
    xml += fmt::format("      <log file='{}' append='off'/>\n", e(spec.serial_log));
  }
  xml += "      <target port='0'/>\n    </serial>\n";
  xml += "    <console type='pty'>\n      <target type='serial' port='0'/>\n    </console>\n";
  // Early sshd key exchange waits for entropy; a slow TCG guest has little of its own.
  xml +=
      "    <rng model='virtio'>\n      <backend model='random'>/dev/urandom</backend>\n"
      "    </rng>\n";
  // No <graphics type='none'/>: libvirt 9.0 rejects it. A 'none' video model and no graphics
  // element give a headless guest.
  xml += "    <video>\n      <model type='none'/>\n    </video>\n";
  xml += "    <memballoon model='none'/>\n";
  if (!spec.guest_region.empty()) {
    // ivshmem-plain (QEMU 7.2 has it; no interrupts, so both sides poll): BAR 2 is the file.
    xml += fmt::format(
        "    <shmem name='{}'>\n      <model type='ivshmem-plain'/>\n      <size "
        "unit='M'>{}</size>\n    </shmem>\n",
        e(spec.guest_region), spec.guest_region_mib);
  }
  xml += "  </devices>\n";
  if (!spec.vfio_user_socket.empty()) {
    nlohmann::json device = {{"driver", "vfio-user-pci"},
                             {"socket", {{"type", "unix"}, {"path", spec.vfio_user_socket}}}};
    xml += "  <qemu:commandline>\n    <qemu:arg value='-device'/>\n";
    xml += fmt::format("    <qemu:arg value='{}'/>\n", e(device.dump()));
    xml += "  </qemu:commandline>\n";
  }
  xml += "</domain>\n";
  return xml;
}

std::string network_xml(const NetworkSpec& spec) {
  if (spec.name.empty() || spec.bridge.empty() || spec.host_address.empty()) {
    throw std::invalid_argument("network: name, bridge and host address are required");
  }
  if (spec.bridge.size() > 15) {
    throw std::invalid_argument(fmt::format(
        "network {}: bridge name {} is longer than 15 characters", spec.name, spec.bridge));
  }
  std::string xml = "<network>\n";
  xml += fmt::format("  <name>{}</name>\n", xml_escape(spec.name));
  xml += fmt::format("  <bridge name='{}' stp='off' delay='0'/>\n", xml_escape(spec.bridge));
  bool dhcp = !spec.dhcp_start.empty();
  if (!dhcp) {
    // Static addresses only: no dnsmasq process at all.
    xml += "  <dns enable='no'/>\n";
  }
  xml +=
      fmt::format("  <ip address='{}' prefix='{}'>\n", xml_escape(spec.host_address), spec.prefix);
  if (dhcp) {
    xml += fmt::format("    <dhcp>\n      <range start='{}' end='{}'/>\n    </dhcp>\n",
                       xml_escape(spec.dhcp_start), xml_escape(spec.dhcp_end));
  }
  xml += "  </ip>\n</network>\n";
  return xml;
}

std::string storage_pool_xml(const std::string& name, const std::filesystem::path& dir) {
  return fmt::format(
      "<pool type='dir'>\n  <name>{}</name>\n  <target>\n    <path>{}</path>\n"
      "    <permissions>\n      <mode>0755</mode>\n    </permissions>\n  </target>\n</pool>\n",
      xml_escape(name), xml_escape(dir.string()));
}

std::string overlay_volume_xml(const std::string& name, const std::filesystem::path& base,
                               const std::string& base_format, std::uint64_t capacity_bytes) {
  return fmt::format(
      "<volume>\n  <name>{}</name>\n  <capacity unit='bytes'>{}</capacity>\n"
      "  <target>\n    <format type='qcow2'/>\n  </target>\n"
      "  <backingStore>\n    <path>{}</path>\n    <format type='{}'/>\n  </backingStore>\n"
      "</volume>\n",
      xml_escape(name), capacity_bytes, xml_escape(base.string()), xml_escape(base_format));
}

std::string guest_mac(const std::string& run_token, int index) {
  std::string digest = sha256_hex(fmt::format("{}/{}", run_token, index));
  return fmt::format("52:54:00:{}:{}:{}", digest.substr(0, 2), digest.substr(2, 2),
                     digest.substr(4, 2));
}

}  // namespace ernic
