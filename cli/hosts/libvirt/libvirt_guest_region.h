#pragma once

// A guest served by an embedded emulator instance on its machine: the instance's guest region
// (a shared-memory file there, frontend/guest_region.h) becomes the guest's ivshmem-plain device.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "base/config_value.h"
#include "hosts/libvirt/libvirt_config.h"
#include "hosts/libvirt/libvirt_domain.h"
#include "hosts/ssh/ssh_connection.h"

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
// can: this machine's QEMU must have ivshmem-plain (probed once per process; `qemu_device_help`
// stands in for `qemu-system-x86_64 -device help` in tests). Another machine's is not probed.
std::string guest_region_unsupported(const std::string& host, const std::string& uri,
                                     const std::optional<std::string>& qemu_device_help = {});
// Why guest `host` cannot be served through a guest region by the QEMU on `machine` whose
// `-device help` printed `qemu_device_help`, or "" when it can.
std::string ivshmem_missing(const std::string& host, const std::string& machine,
                            const std::string& qemu_device_help);

// Hands a guest region's file to QEMU's user (`owner`; libvirt relabels disks, not shared
// memory) on the machine QEMU runs on, and returns the file's size in bytes. Throws
// std::runtime_error with the cause when the file does not exist or cannot be handed over.
using RegionHandOver = std::function<std::uint64_t(const std::filesystem::path& region,
                                                   const std::optional<FileOwner>& owner)>;
// This machine's file, handed over by chown(2).
RegionHandOver local_region_hand_over();
// A file of the libvirt host `login` reaches (a qemu+ssh:// URI's own login): `chown` and `stat`
// over SSH.
RegionHandOver remote_region_hand_over(GuestJump login);
// Runs `script` with sh on the libvirt host `login` reaches, over a new SSH session; its stdout.
// Throws std::runtime_error naming the host, the script and what it printed when it fails.
std::string run_on_libvirt_host(const GuestJump& login, const std::string& script);

// Gives the domain `spec` instance `instance`'s guest region of run `run_token`, which the
// instance created on QEMU's machine, handed over to QEMU's user there (`owner`) and sized as the
// file. Throws std::runtime_error naming the host and the file when that fails.
void attach_guest_region(const std::string& host, const std::string& run_token, int instance,
                         const std::optional<FileOwner>& owner, const RegionHandOver& hand_over,
                         DomainSpec& spec);

}  // namespace ernic
