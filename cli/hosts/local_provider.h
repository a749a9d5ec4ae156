// The `local` provider: this machine itself. Other providers whose hosts are this machine under
// another role (the embedded emulator's load-generator endpoints) build on it.
#pragma once

#include "hosts/provider.h"

namespace ernic {

class LocalProvider : public HostProvider {
 public:
  std::string_view name() const override { return "local"; }
  std::string_view description() const override {
    return "This machine; commands run as child processes of ernicctl";
  }
  const ObjectSchema& host_schema() const override;
  // A host's `address`, 127.0.0.1 by default.
  std::vector<std::string> planned_addresses(const std::vector<HostSpec>& hosts,
                                             const Config& scenario) const override;
  bool shares_this_filesystem() const override { return true; }
  // Its hosts are this machine: creating them does nothing.
  bool acts_only_through_runner() const override { return true; }
  // This machine: up while ernicctl runs at all.
  std::string host_condition(const std::map<std::string, std::string>& /*facts*/) const override {
    return "up";
  }
  std::vector<std::unique_ptr<Host>> create(const std::vector<HostSpec>& hosts,
                                            ProviderContext& context) override;
  std::vector<std::unique_ptr<Host>> attach(const std::vector<HostSpec>& hosts,
                                            const std::vector<AttachedHost>& recorded,
                                            ProviderContext& context) override;
};

}  // namespace ernic
