#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hosts/libvirt/libvirt_config.h"
#include "hosts/libvirt/libvirt_domain.h"
#include "hosts/libvirt/libvirt_guest.h"
#include "hosts/provider.h"

namespace ernic {

class LibvirtProvider : public HostProvider {
 public:
  explicit LibvirtProvider(SshHostFactory ssh_factory = default_ssh_host_factory());

  std::string_view name() const override { return "libvirt"; }
  std::string_view description() const override {
    return "Guests booted from a qcow2 image under libvirt (KVM when usable, else TCG)";
  }
  const ObjectSchema& host_schema() const override { return libvirt_host_schema(); }
  // The top-level `libvirt:` section's schema.
  static const ObjectSchema& run_schema() { return libvirt_run_schema(); }
  const ObjectSchema* settings_schema() const override { return &run_schema(); }
  // A guest attached to an embedded instance maps its guest region as an ivshmem device.
  bool reaches_instances_through_regions() const override { return true; }
  std::string machine_of(const HostSpec& host) const override;
  // QEMU on each remote libvirt host whose guests are served by embedded instances has
  // ivshmem-plain (`qemu-system-x86_64 -device help` over the URI's SSH login).
  void check_machines(const std::vector<HostSpec>& hosts, const Config& scenario) const override;
  // Static addresses (given or assigned from the subnet); "" for every guest with dhcp: true.
  std::vector<std::string> planned_addresses(const std::vector<HostSpec>& hosts,
                                             const Config& scenario) const override;
  void check(const std::vector<HostSpec>& hosts, const Config& scenario,
             Diagnostics& out) const override;
  std::vector<std::string> describe(const std::vector<HostSpec>& hosts,
                                    const ProviderContext& context) const override;
  // The network, pool, overlays and domains (each undo pushed as it exists), then the
  // readiness stages of every guest: see docs/guests.md.
  std::vector<std::unique_ptr<Host>> create(const std::vector<HostSpec>& hosts,
                                            ProviderContext& context) override;
  // The guests `up` booted, reached again by SSH with the keys it recorded; each domain must
  // still be running.
  std::vector<std::unique_ptr<Host>> attach(const std::vector<HostSpec>& hosts,
                                            const std::vector<AttachedHost>& recorded,
                                            ProviderContext& context) override;
  // A guest `up` left: its domain (facts `domain`, `uri`) up, stopped or gone.
  std::string host_condition(const std::map<std::string, std::string>& facts) const override;

  // Polled while guests boot: when it becomes true, create() stops waiting and throws (what it
  // made is already on the cleanup stack).
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }
  void set_progress(std::function<void(const std::string&)> progress) {
    progress_ = std::move(progress);
  }
  // Relative image paths in host entries are resolved against this (the scenario's folder).
  void set_base_dir(std::filesystem::path dir) { base_dir_ = std::move(dir); }

 private:
  void say(const std::string& line) const;
  bool stopped() const;

  SshHostFactory ssh_factory_;
  const std::atomic<bool>* stop_ = nullptr;
  std::function<void(const std::string&)> progress_;
  std::filesystem::path base_dir_ = ".";
};

// The registry's instance (cli/builtin_platform.cc lists it).
HostProvider& libvirt_provider();

}  // namespace ernic
