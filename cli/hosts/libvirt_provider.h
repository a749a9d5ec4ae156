#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hosts/libvirt_domain.h"
#include "hosts/provider.h"
#include "image/guest_image.h"

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
};

// Makes the Host that runs commands on a ready guest (the ssh provider's SshHost). Returns
// nullptr when no SSH transport is available; the guest's start() then says so.
using SshHostFactory = std::function<std::unique_ptr<Host>(const GuestSshTarget&)>;
SshHostFactory default_ssh_host_factory();

// Each readiness stage has its own deadline, counted from the end of the stage before.
struct StageTimeouts {
  std::chrono::seconds running{60};
  std::chrono::seconds address{120};
  std::chrono::seconds ssh{600};  // TCG boot under load
  std::chrono::seconds host_key{120};
};

// One `provider: libvirt` host entry, parsed.
struct LibvirtGuestConfig {
  std::string name;
  std::string address;  // empty: the provider assigns one from the subnet
  std::string uri = "qemu:///system";
  // A recipe (.yaml: built or taken from the image cache) or a manifest (.json: ours or
  // rocm-ernic's vm-info.json).
  std::string image = "images/debian12-rdma.yaml";
  std::string qcow2;  // overrides the manifest's disk
  int vcpus = 1;
  std::uint64_t memory_mib = 1024;
  bool kernel_boot = true;
  std::string accelerator = "auto";  // auto, kvm, tcg
  std::string login = "root";        // root (when the image allows it) or user
  std::string emulator_socket;       // an emulator instance's vfio-user socket
  StageTimeouts timeouts;
};

// The top-level `libvirt:` section: the network the run's guests share.
struct LibvirtRunConfig {
  std::string subnet = "192.168.77.0/24";
  std::string bridge;  // an existing host bridge instead of a network ernicctl creates
  bool dhcp = false;   // addresses from libvirt's dnsmasq instead of static ones
  std::filesystem::path image_cache = "/var/cache/ernicctl/images";
  std::filesystem::path pool_dir;  // overlays; empty: /var/lib/libvirt/images/ernic-TOKEN
};

// Throws std::runtime_error naming the host and the key.
LibvirtGuestConfig parse_libvirt_guest(const HostSpec& host, const std::filesystem::path& base_dir);
LibvirtRunConfig parse_libvirt_run(const YAML::Node& scenario);

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

class LibvirtProvider : public HostProvider {
 public:
  explicit LibvirtProvider(SshHostFactory ssh_factory = default_ssh_host_factory());

  std::string_view name() const override { return "libvirt"; }
  std::string_view description() const override {
    return "Guests booted from a qcow2 image under libvirt (KVM when usable, else TCG)";
  }
  const ObjectSchema& host_schema() const override;
  // The top-level `libvirt:` section's schema.
  static const ObjectSchema& run_schema();
  const ObjectSchema* settings_schema() const override { return &run_schema(); }
  // Static addresses (given or assigned from the subnet); "" for every guest with dhcp: true.
  std::vector<std::string> planned_addresses(const std::vector<HostSpec>& hosts,
                                             const YAML::Node& scenario) const override;
  void check(const std::vector<HostSpec>& hosts, const YAML::Node& scenario,
             const std::string& file, Diagnostics& out) const override;
  std::vector<std::string> describe(const std::vector<HostSpec>& hosts,
                                    const ProviderContext& context) const override;
  std::vector<std::unique_ptr<Host>> create(const std::vector<HostSpec>& hosts,
                                            ProviderContext& context) override;

  // Polled while guests boot: when it becomes true, create() stops waiting and throws (what it
  // made is already on the cleanup stack).
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }
  void set_progress(std::function<void(const std::string&)> progress) {
    progress_ = std::move(progress);
  }
  // Relative image paths in host entries are resolved against this (the scenario's folder).
  void set_base_dir(std::filesystem::path dir) { base_dir_ = std::move(dir); }

 private:
  SshHostFactory ssh_factory_;
  const std::atomic<bool>* stop_ = nullptr;
  std::function<void(const std::string&)> progress_;
  std::filesystem::path base_dir_ = ".";
};

// The registry's instance (cli/hosts/registry.cc lists it).
HostProvider& libvirt_provider();

// Guest addresses: the entry's own, or the subnet's .10, .11, ... in host order.
std::vector<std::string> assign_guest_addresses(const std::vector<std::string>& requested,
                                                const std::string& subnet);

}  // namespace ernic
