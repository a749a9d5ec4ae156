// The `embedded` provider: load-generator endpoints on this machine, each attached to one
// instance of the embedded emulator (`instance: N`), the way a guest is attached to its NIC.
#include <fmt/format.h>

#include "hosts/local_provider.h"
#include "hosts/registry.h"

namespace ernic {
namespace {

// Its hosts are local hosts; only what a scenario must say about them differs.
class EmbeddedProvider final : public LocalProvider {
 public:
  std::string_view name() const override { return "embedded"; }
  std::string_view description() const override {
    return "A load-generator endpoint on this machine attached to an embedded emulator instance";
  }
  void check(const std::vector<HostSpec>& hosts, const Config& scenario,
             Diagnostics& out) const override {
    std::string kind = scenario.object("emulator").text("kind", "none");
    for (const auto& host : hosts) {
      if (!host.config.has("instance")) {
        out.push_back(host.config.diagnostic(
            "instance", fmt::format("embedded host {} needs `instance: N`, the emulator "
                                    "instance it is attached to",
                                    host.name)));
      } else if (kind != "embedded") {
        out.push_back(host.config.diagnostic(
            "instance", fmt::format("embedded host {} needs `emulator: {{kind: embedded}}`, "
                                    "the scenario has kind {}",
                                    host.name, kind)));
      }
    }
  }
};

}  // namespace

HostProvider& embedded_provider() {
  static EmbeddedProvider provider;
  return provider;
}

}  // namespace ernic
