#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/cleanup_stack.h"
#include "base/config_value.h"
#include "base/program.h"
#include "base/schema.h"
#include "hosts/host.h"

namespace ernic {

class Status;

// One entry of the scenario's `hosts:` list.
struct HostSpec {
  std::string name;
  std::string provider;  // local, netns, ssh, libvirt, embedded
  std::string address;   // optional; providers fill it in when empty
  Config config;         // the whole entry, typed by the provider's host schema
};

// A host `ernicctl up` created, as it recorded it: the address and the facts its Host gave
// (and setup learned), which are all `run --attach` needs to reach it again.
struct AttachedHost {
  std::string name;
  std::string address;
  std::map<std::string, std::string> facts;
};

struct ProviderContext {
  std::filesystem::path run_dir;
  std::string run_token;  // short, unique per run: names namespaces, domains, bridges
  Config scenario;        // the scenario's top level, for the provider's settings section
  CleanupStack* cleanup = nullptr;
  Status* status = nullptr;
  // Commands that build hosts on this machine go through the run's runner, so that a dry run
  // lists them instead of running them.
  LocalCommandRunner* runner = nullptr;
};

// A platform: how hosts of one kind come to exist (LISA's platform layer). A provider creates
// all of its hosts at once, because some (netns, libvirt) build a network between them, and
// pushes their teardown onto the cleanup stack as each resource appears.
class HostProvider {
 public:
  virtual ~HostProvider() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // Keys a host entry of this provider may have besides name, provider and address.
  virtual const ObjectSchema& host_schema() const = 0;
  // Settings shared by all hosts of this provider, under the scenario's top-level key of the
  // provider's name (e.g. `netns: {subnet: ...}`); null when it has none.
  virtual const ObjectSchema* settings_schema() const { return nullptr; }
  // Addresses the hosts will get, for the dry run and for planning commands before the hosts
  // exist; "" where it is only known once the host is up.
  virtual std::vector<std::string> planned_addresses(const std::vector<HostSpec>& hosts,
                                                     const Config& /*scenario*/) const {
    std::vector<std::string> addresses;
    for (const auto& host : hosts) {
      addresses.push_back(host.address);
    }
    return addresses;
  }
  // Checks that go beyond the schema (e.g. a subnet large enough for the hosts); appended to
  // `out`, located by the values' own locations (Config::diagnostic).
  virtual void check(const std::vector<HostSpec>& /*hosts*/, const Config& /*scenario*/,
                     Diagnostics& /*out*/) const {}
  // Whether a host of this provider attached to an embedded instance (`instance: N`) is a VM that
  // reaches it through a guest region (libvirt): the instance then serves one for it.
  virtual bool reaches_instances_through_regions() const { return false; }
  // The machine a host runs on, as the scenario names it: "" for this machine, else that
  // machine's name or address (ssh: `ssh.host`; libvirt: the URI's host). A guest region is the
  // shared memory of one machine, so its guest and its instance must be on the same one.
  virtual std::string machine_of(const HostSpec& /*host*/) const { return ""; }
  // Checks of the hosts' machines that need them to answer (over the network), run before
  // anything is created; throws std::runtime_error naming the host and what it lacks.
  virtual void check_machines(const std::vector<HostSpec>& /*hosts*/,
                              const Config& /*scenario*/) const {}
  // Whether this provider's hosts run programs from this machine's filesystem (local, netns):
  // their tools are checked before anything starts.
  virtual bool shares_this_filesystem() const { return false; }
  // Programs this machine needs to create the provider's hosts (netns: ip).
  virtual std::vector<Program> programs() const { return {}; }
  // Whether create() acts on the world only through `ProviderContext::runner` (local, netns):
  // the dry run then calls create() itself and lists those commands. A provider driven through
  // an API (ssh, libvirt) says false, and the dry run prints describe() instead.
  virtual bool acts_only_through_runner() const { return false; }
  // Dry run, for providers driven through an API: the actions create() would take.
  virtual std::vector<std::string> describe(const std::vector<HostSpec>& /*hosts*/,
                                            const ProviderContext& /*context*/) const {
    return {};
  }
  virtual std::vector<std::unique_ptr<Host>> create(const std::vector<HostSpec>& hosts,
                                                    ProviderContext& context) = 0;
  // `ernicctl run --attach`: Hosts for what `up` created (`recorded`, in the order of `hosts`),
  // creating nothing and pushing no teardown. Throws naming the host when one is gone. A
  // provider whose create() makes nothing (local, ssh) attaches by creating.
  virtual std::vector<std::unique_ptr<Host>> attach(const std::vector<HostSpec>& hosts,
                                                    const std::vector<AttachedHost>& recorded,
                                                    ProviderContext& context);
  // `ernicctl status`: whether a host `ernicctl up` left is still there, judged from the facts
  // its Host gave: "up", "stopped", "gone", or "unknown" when the provider cannot tell.
  virtual std::string host_condition(const std::map<std::string, std::string>& /*facts*/) const {
    return "unknown";
  }
};

}  // namespace ernic
