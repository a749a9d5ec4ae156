#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ernic {

enum class Accelerator { kKvm, kTcg };

// "kvm" or "tcg": the value of the accelerator host fact and of history records.
const char* accelerator_name(Accelerator accelerator);

// Everything a guest domain is generated from. The generator is a pure function of this, so
// dry runs print it and tests validate every variant against libvirt's schema.
struct DomainSpec {
  std::string name;
  Accelerator accelerator = Accelerator::kTcg;
  int vcpus = 1;
  std::uint64_t memory_mib = 1024;
  // Guest RAM as a shared memfd: required by a vfio-user device server, which maps guest memory.
  bool shared_memory = false;

  std::filesystem::path disk;  // the guest's own overlay
  std::string disk_format = "qcow2";

  // Direct kernel boot when set; otherwise the disk boots itself.
  std::filesystem::path kernel;
  std::filesystem::path initrd;
  std::string kernel_cmdline;

  // Exactly one of network (a libvirt network) and bridge (a host bridge).
  std::string network;
  std::string bridge;
  std::string mac;  // 52:54:00:xx:xx:xx; empty lets libvirt choose

  std::filesystem::path serial_log;  // the serial console, written by virtlogd

  // An emulator instance's vfio-user socket; empty when no emulated NIC is attached.
  std::string vfio_user_socket;
  std::string emulator_binary;  // empty: libvirt's default QEMU
  // An embedded instance's guest region: an ivshmem-plain device whose memory is the
  // shared-memory file /dev/shm/NAME the instance maps; empty for none.
  std::string guest_region;
  std::uint64_t guest_region_mib = 0;
};

// The libvirt domain XML for `spec`. Throws std::invalid_argument for a spec libvirt would
// reject (no disk, both or neither of network and bridge, vfio-user without shared memory).
std::string domain_xml(const DomainSpec& spec);

// An isolated libvirt network (no forwarding): the guests' private test network.
struct NetworkSpec {
  std::string name;
  std::string bridge;        // at most 15 characters
  std::string host_address;  // the bridge's own address, e.g. 192.168.77.1
  int prefix = 24;
  // A DHCP range, for guests without a static address; empty: no dnsmasq at all.
  std::string dhcp_start;
  std::string dhcp_end;
};

std::string network_xml(const NetworkSpec& spec);

// A directory pool holding one run's overlays, and an overlay volume backed by the base image.
std::string storage_pool_xml(const std::string& name, const std::filesystem::path& dir);
std::string overlay_volume_xml(const std::string& name, const std::filesystem::path& base,
                               const std::string& base_format, std::uint64_t capacity_bytes);

// The MAC a guest gets: locally administered, in QEMU's 52:54:00 range, derived from the run
// token and the guest's index so that reruns do not collide.
std::string guest_mac(const std::string& run_token, int index);

// Escapes text for an XML attribute or element.
std::string xml_escape(const std::string& text);

}  // namespace ernic
