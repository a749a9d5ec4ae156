#include "hosts/local_provider.h"

#include "hosts/local_host.h"
#include "hosts/registry.h"

namespace ernic {

const ObjectSchema& LocalProvider::host_schema() const {
  static const ObjectSchema schema{.description = "", .fields = {}};
  return schema;
}

std::vector<std::string> LocalProvider::planned_addresses(const std::vector<HostSpec>& hosts,
                                                          const Config& /*scenario*/) const {
  std::vector<std::string> addresses;
  for (const auto& host : hosts) {
    addresses.push_back(host.address.empty() ? "127.0.0.1" : host.address);
  }
  return addresses;
}

std::vector<std::unique_ptr<Host>> LocalProvider::create(const std::vector<HostSpec>& hosts,
                                                         ProviderContext& context) {
  auto addresses = planned_addresses(hosts, context.scenario);
  std::vector<std::unique_ptr<Host>> created;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    created.push_back(std::make_unique<LocalHost>(hosts[i].name, addresses[i]));
  }
  return created;
}

std::vector<std::unique_ptr<Host>> LocalProvider::attach(const std::vector<HostSpec>& hosts,
                                                         const std::vector<AttachedHost>& recorded,
                                                         ProviderContext& /*context*/) {
  std::vector<std::unique_ptr<Host>> attached;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    attached.push_back(std::make_unique<LocalHost>(hosts[i].name, recorded[i].address));
  }
  return attached;
}

HostProvider& local_provider() {
  static LocalProvider provider;
  return provider;
}

}  // namespace ernic
