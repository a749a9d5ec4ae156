// The `local` provider: this machine itself, for tools that run here directly.
#include "hosts/local_host.h"
#include "hosts/provider.h"
#include "hosts/registry.h"

namespace ernic {
namespace {

class LocalProvider final : public HostProvider {
 public:
  std::string_view name() const override { return "local"; }
  std::string_view description() const override {
    return "This machine; commands run as child processes of ernicctl";
  }
  const ObjectSchema& host_schema() const override {
    static const ObjectSchema schema{.description = "", .fields = {}};
    return schema;
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

HostProvider& local_provider() {
  static LocalProvider provider;
  return provider;
}

}  // namespace ernic
