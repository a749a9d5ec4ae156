#include "hosts/provider.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ernic {

std::vector<std::unique_ptr<Host>> HostProvider::attach(
    const std::vector<HostSpec>& hosts, const std::vector<AttachedHost>& /*recorded*/,
    ProviderContext& /*context*/) {
  throw std::runtime_error(
      fmt::format("{} hosts ({}...) cannot be attached to: run without --attach", name(),
                  hosts.empty() ? "" : hosts.front().name));
}

}  // namespace ernic
