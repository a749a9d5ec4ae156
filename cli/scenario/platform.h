#pragma once

#include <string_view>
#include <vector>

namespace ernic {

class Benchmark;
class EmulatorKind;
class HostProvider;
class SetupStep;
struct HostSpec;

// Everything a scenario can be made of: host providers, emulator kinds, setup steps and tools.
// main assembles it once (builtin_platform(), cli/builtin_platform.cc) and hands it by reference to
// the loader, the planner and the executor; nothing below main looks a component up globally, so
// tests build a Platform of fakes and drive the real code with it (ninja's Builder takes its
// collaborators).
struct Platform {
  std::vector<HostProvider*> providers;
  std::vector<EmulatorKind*> emulator_kinds;
  std::vector<const SetupStep*> setup_steps;
  std::vector<const Benchmark*> tools;

  // Null when the platform has no component of that name.
  HostProvider* provider(std::string_view name) const;
  EmulatorKind* emulator_kind(std::string_view name) const;
  const SetupStep* setup_step(std::string_view kind) const;
  const Benchmark* tool(std::string_view name) const;
};

// The emulator instances (`instance: N`) attached to hosts whose provider reaches them through
// a guest region (HostProvider::reaches_instances_through_regions): the embedded kind has each
// of them serve one (EmulatorContext::guest_instances), at every start and restart.
std::vector<int> guest_region_instances(const Platform& platform,
                                        const std::vector<HostSpec>& hosts);

}  // namespace ernic
