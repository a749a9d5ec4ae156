#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "hosts/libvirt/libvirt_accel.h"
#include "hosts/libvirt/libvirt_config.h"
#include "hosts/libvirt/libvirt_guest.h"
#include "hosts/libvirt/libvirt_resources.h"
#include "image/guest_image.h"

namespace ernic {

// One guest on its way up: what create() decided for it, and what its stages measured.
struct BootingGuest {
  LibvirtGuestConfig config;
  GuestImage image;
  std::string domain;
  std::string mac;
  std::string address;  // empty until the DHCP lease is seen, with dhcp: true
  std::filesystem::path serial_log;
  AcceleratorChoice accelerator;
  std::string emulated_nic = "none";
  std::optional<GuestJump> jump;  // the guest's SSH is reached through this host (remote URIs)
  std::chrono::steady_clock::time_point started;
  std::map<std::string, double> stage_seconds;
};

// "root" when the guest logs in as root (and its image allows it), else the image's user.
std::string login_user(const BootingGuest& guest);

// Waits through the readiness stages, each with its own deadline counted from the end of the
// one before: `running` (libvirt's state), `address` (static, or the DHCP lease), `ssh` (sshd's
// banner) and `host_key` (one of the image's host keys, then a login with its key). A failure
// throws naming the stage, the domain's state and the serial console's last lines; a host key
// mismatch fails at once; `stopped` returning true (Ctrl-C) ends the wait with an error.
void wait_until_ready(BootingGuest& guest, virConnectPtr connection,
                      const std::function<bool()>& stopped);

// The ready guest as a Host reached over SSH, with its facts (accelerator, T_init, stage
// times, how to log in later). Appends its host keys under its address to `known_hosts`.
std::unique_ptr<LibvirtGuest> make_ready_guest(const BootingGuest& guest,
                                               const LibvirtConnectionPtr& connection,
                                               const std::filesystem::path& known_hosts,
                                               const SshHostFactory& ssh_factory);

}  // namespace ernic
