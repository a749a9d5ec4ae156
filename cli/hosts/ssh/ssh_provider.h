#pragma once

#include "hosts/provider.h"
#include "hosts/ssh/ssh_connection.h"

namespace ernic {

// The `ssh` host provider: hosts that already exist and are reached over SSH, e.g.
//   {name: g1, provider: ssh, address: 10.0.0.5,
//    ssh: {host: 192.168.122.5, port: 22, user: root, key: ~/.ssh/id_ed25519,
//          known_hosts: ~/.ssh/known_hosts, host_key_policy: strict,
//          jump: {host: gw, port: 22, user: root, key: ...},
//          connect_timeout: 10s, keepalive: 5s, alive_timeout: 5s}}
// `address` is the test-network address benchmarks use; ssh.host defaults to it.
class SshProvider : public HostProvider {
 public:
  std::string_view name() const override { return "ssh"; }
  std::string_view description() const override;
  const ObjectSchema& host_schema() const override;
  std::string machine_of(const HostSpec& host) const override;
  std::vector<std::string> planned_addresses(const std::vector<HostSpec>& hosts,
                                             const Config& scenario) const override;
  void check(const std::vector<HostSpec>& hosts, const Config& scenario,
             Diagnostics& out) const override;
  std::vector<std::string> describe(const std::vector<HostSpec>& hosts,
                                    const ProviderContext& context) const override;
  // Connects to every host in parallel; throws SshError listing every host that failed.
  std::vector<std::unique_ptr<Host>> create(const std::vector<HostSpec>& hosts,
                                            ProviderContext& context) override;
  // Connecting creates nothing: attaching is connecting again.
  std::vector<std::unique_ptr<Host>> attach(const std::vector<HostSpec>& hosts,
                                            const std::vector<AttachedHost>& /*recorded*/,
                                            ProviderContext& context) override {
    return create(hosts, context);
  }
};

HostProvider& ssh_host_provider();

// Reads a host entry's `ssh:` block (and `address`) into connection options. Throws
// SshError naming the host and the key when a value is unusable.
SshConnectOptions ssh_options_from_spec(const HostSpec& spec);

}  // namespace ernic
