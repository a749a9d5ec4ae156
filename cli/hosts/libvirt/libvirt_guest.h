#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "hosts/host.h"
#include "hosts/libvirt/libvirt_config.h"

namespace ernic {

class LibvirtConnection;

// How a booted guest is reached over SSH: what the ssh transport needs to build a Host.
struct GuestSshTarget {
  std::string name;
  std::string address;
  std::uint16_t port = 22;
  std::string user;
  std::filesystem::path private_key;
  // Holds the guest's host keys under its address, taken from the image (no trust on first use).
  std::filesystem::path known_hosts;
  // Guests of a remote libvirt host are reached through it (or the scenario's `jump:`).
  std::optional<GuestJump> jump;
};

// The SSH options every connection to the guest uses (the Host, the readiness probes): strict
// against the image's host keys, through the jump when there is one.
SshConnectOptions guest_ssh_options(const GuestSshTarget& target);

// Makes the Host that runs commands on a ready guest (the ssh provider's SshHost). Returns
// nullptr when no SSH transport is available; the guest's start() then says so.
using SshHostFactory = std::function<std::unique_ptr<Host>(const GuestSshTarget&)>;
SshHostFactory default_ssh_host_factory();

// A guest booted by the libvirt provider. Commands go over SSH (the transport from the
// factory); the guest adds what only libvirt knows: its domain, accelerator and T_init.
class LibvirtGuest : public Host {
 public:
  LibvirtGuest(std::shared_ptr<LibvirtConnection> connection, std::string domain_name,
               GuestSshTarget target, std::unique_ptr<Host> transport,
               std::map<std::string, std::string> facts, double t_init_s);

  const std::string& name() const override { return target_.name; }
  std::string address() const override { return target_.address; }
  std::string describe() const override;
  std::unique_ptr<RunningCommand> start(const CommandSpec& spec, OutputSink* sink) override;
  void upload(std::string_view content, const std::string& path, int mode) override;
  bool is_listening(std::uint16_t port) override;
  std::string check_alive() override;
  bool has_program(const std::string& program) override;

  // Seconds from starting the domain to its host key verified (rung 1 of the ladder).
  double t_init_s() const { return t_init_s_; }
  // accelerator (kvm|tcg), accelerator_reason, t_init_s, domain, uri, image, kernel, vcpus,
  // memory_mib, emulated_nic, stage_*_s: for history records.
  const std::map<std::string, std::string>& facts() const { return facts_; }
  std::map<std::string, std::string> platform_facts() const override { return facts_; }
  const GuestSshTarget& ssh_target() const { return target_; }
  const std::string& domain_name() const { return domain_name_; }

 private:
  Host& transport();

  std::shared_ptr<LibvirtConnection> connection_;
  std::string domain_name_;
  GuestSshTarget target_;
  std::unique_ptr<Host> transport_;
  std::map<std::string, std::string> facts_;
  double t_init_s_;
};

}  // namespace ernic
