#include "platform/platform.h"

#include "benchmarks/benchmark.h"
#include "benchmarks/registry.h"
#include "emulators/emulator_kind.h"
#include "emulators/registry.h"
#include "hosts/libvirt_provider.h"
#include "hosts/registry.h"
#include "hosts/ssh_provider.h"
#include "setup/setup_step.h"
#include "setup/steps.h"

namespace ernic {
namespace {

template <typename Component, typename Name>
Component find_named(const std::vector<Component>& components, std::string_view wanted,
                     Name name_of) {
  for (Component component : components) {
    if (name_of(*component) == wanted) {
      return component;
    }
  }
  return nullptr;
}

}  // namespace

HostProvider* Platform::provider(std::string_view name) const {
  return find_named(providers, name, [](const HostProvider& p) { return p.name(); });
}

EmulatorKind* Platform::emulator_kind(std::string_view name) const {
  return find_named(emulator_kinds, name, [](const EmulatorKind& k) { return k.name(); });
}

const SetupStep* Platform::setup_step(std::string_view kind) const {
  return find_named(setup_steps, kind, [](const SetupStep& s) { return s.kind(); });
}

const Benchmark* Platform::tool(std::string_view name) const {
  return find_named(tools, name, [](const Benchmark& b) { return b.tool(); });
}

Platform builtin_platform() {
  return Platform{
      .providers = {&local_provider(), &netns_provider(), &embedded_provider(),
                    &ssh_host_provider(), &libvirt_provider()},
      .emulator_kinds = {&no_emulator(), &embedded_emulator(), &external_emulator()},
      // The order a user usually lists them in: packages and kernel settings, then the device.
      .setup_steps = {&packages_step(), &sysctl_step(), &memlock_step(), &soft_roce_step(),
                      &rdma_device_step(), &gid_index_step(), &command_step()},
      .tools = builtin_tools(),
  };
}

}  // namespace ernic
