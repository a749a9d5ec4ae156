// The `embedded` provider: load-generator endpoints on this machine, each attached to one
// instance of the embedded emulator (`instance: N`), the way a guest is attached to its NIC.
#include <fmt/format.h>

#include "hosts/local_host.h"
#include "hosts/provider.h"
#include "hosts/registry.h"

namespace ernic {
namespace {

class EmbeddedProvider final : public HostProvider {
 public:
  std::string_view name() const override { return "embedded"; }
  std::string_view description() const override {
    return "A load-generator endpoint on this machine attached to an embedded emulator instance";
  }
  const ObjectSchema& host_schema() const override {
    static const ObjectSchema schema{.description = "", .fields = {}};
    return schema;
  }
  void check(const std::vector<HostSpec>& hosts, const YAML::Node& scenario,
             const std::string& file, Diagnostics& out) const override {
    std::string kind = scenario["emulator"] && scenario["emulator"]["kind"]
                           ? scenario["emulator"]["kind"].Scalar()
                           : "none";
    for (const auto& host : hosts) {
      if (!host.config["instance"]) {
        out.push_back(
            diagnostic_at(host.config, file, "instance",
                          fmt::format("embedded host {} needs `instance: N`, the emulator "
                                      "instance it is attached to",
                                      host.name)));
      } else if (kind != "embedded") {
        out.push_back(
            diagnostic_at(host.config["instance"], file, "instance",
                          fmt::format("embedded host {} needs `emulator: {{kind: embedded}}`, "
                                      "the scenario has kind {}",
                                      host.name, kind)));
      }
    }
  }
  std::vector<std::string> planned_addresses(const std::vector<HostSpec>& hosts,
                                             const YAML::Node&) const override {
    std::vector<std::string> addresses;
    for (const auto& host : hosts) {
      addresses.push_back(host.address.empty() ? "127.0.0.1" : host.address);
    }
    return addresses;
  }
  std::vector<std::string> describe(const std::vector<HostSpec>&,
                                    const ProviderContext&) const override {
    return {};
  }
  std::vector<std::unique_ptr<Host>> create(const std::vector<HostSpec>& hosts,
                                            ProviderContext& context) override {
    auto addresses = planned_addresses(hosts, context.scenario);
    std::vector<std::unique_ptr<Host>> created;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      created.push_back(std::make_unique<LocalHost>(hosts[i].name, addresses[i]));
    }
    return created;
  }
};

}  // namespace

HostProvider& embedded_provider() {
  static EmbeddedProvider provider;
  return provider;
}

}  // namespace ernic
