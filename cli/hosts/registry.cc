#include "hosts/registry.h"
#include "hosts/libvirt_provider.h"
#include "hosts/ssh_provider.h"

namespace ernic {

const std::vector<HostProvider*>& all_host_providers() {
  static const std::vector<HostProvider*> providers = {
      &local_provider(),    &netns_provider(),   &embedded_provider(),
      &ssh_host_provider(), &libvirt_provider(),
  };
  return providers;
}

HostProvider* find_host_provider(std::string_view name) {
  for (HostProvider* provider : all_host_providers()) {
    if (provider->name() == name) {
      return provider;
    }
  }
  return nullptr;
}

}  // namespace ernic
