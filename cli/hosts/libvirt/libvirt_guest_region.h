#pragma once

// A guest served by an embedded emulator instance on this machine: the instance's guest region
// (a shared-memory file, frontend/guest_region.h) becomes the guest's ivshmem-plain device.
#include <sys/types.h>
#include <optional>
#include <string>

#include "base/config_value.h"
#include "hosts/libvirt/libvirt_domain.h"

namespace ernic {

// The user and group QEMU runs as under libvirt's DAC security driver, from the capabilities'
// <secmodel><model>dac</model><baselabel type='qemu|kvm'>+UID:+GID</baselabel>; nullopt when
// they name none (QEMU runs as whoever libvirtd runs as).
struct FileOwner {
  uid_t uid;
  gid_t gid;
};
std::optional<FileOwner> qemu_dac_owner(const std::string& capabilities_xml,
                                        Accelerator accelerator);

// Whether the host entry's guest is served by an embedded instance (`instance: N` with
// `emulator.kind: embedded` in the scenario's top level `scenario`).
bool served_by_embedded_instance(const Config& scenario, int instance);

// Why guest `host` (at libvirt `uri`) cannot be served through a guest region, or "" when it
// can: the region is this machine's shared memory, and QEMU must have ivshmem-plain (probed once
// per process; `qemu_device_help` stands in for `qemu-system-x86_64 -device help` in tests).
std::string guest_region_unsupported(const std::string& host, const std::string& uri,
                                     const std::optional<std::string>& qemu_device_help = {});

// Gives the domain `spec` instance `instance`'s guest region of run `run_token`, which the
// instance created: hands the file to QEMU's user (`owner`; libvirt relabels disks, not shared
// memory) and sizes the device as the file. Throws std::runtime_error naming the host and the
// file when it does not exist or cannot be handed over.
void attach_guest_region(const std::string& host, const std::string& run_token, int instance,
                         const std::optional<FileOwner>& owner, DomainSpec& spec);

}  // namespace ernic
