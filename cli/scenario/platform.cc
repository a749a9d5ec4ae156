#include "scenario/platform.h"

#include "benchmarks/benchmark.h"
#include "emulators/emulator_kind.h"
#include "hosts/provider.h"
#include "setup/setup_step.h"

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

std::vector<int> guest_region_instances(const Platform& platform,
                                        const std::vector<HostSpec>& hosts) {
  std::vector<int> instances;
  for (const auto& spec : hosts) {
    const HostProvider* provider = platform.provider(spec.provider);
    if (spec.config.has("instance") && provider != nullptr &&
        provider->reaches_instances_through_regions()) {
      instances.push_back(static_cast<int>(spec.config.integer("instance", 0)));
    }
  }
  return instances;
}

}  // namespace ernic
