// The list form of the embedded emulator's `instances`: each instance on the machine that owns
// its guests (`on: HOST`, a host of the scenario, or `local`), started through that host.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "emulators/emulator_kind.h"
#include "supervisor.h"

namespace ernic {

// What the `on:` of an instance says for this machine (also the default).
inline constexpr const char* kThisMachine = "local";

struct Placement {
  int id = 0;            // 1 = the manager
  std::string on;        // a host of the scenario, or kThisMachine
  std::string bind;      // mesh address the others reach it at; "" = its host's address
  std::string ernicctl;  // the program on that host; "" = `ernicctl` in its PATH, then ours
  bool local() const { return on == kThisMachine; }
};

// The schema of one entry of the list.
std::shared_ptr<const ObjectSchema> placement_schema();
// The entries of the list form, in id order; empty for `instances: N`.
std::vector<Placement> placements_of(const Config& emulator);
// An `on:` that names no host of the scenario: located, with "did you mean".
void check_placements(const Config& emulator, const std::vector<std::string>& host_names,
                      Diagnostics& out);

// The path of the running ernicctl.
std::string own_executable();
// What a load-generator endpoint attached to the instance needs to reach it: its socket on the
// instance's machine and the ernicctl there.
HostFacts instance_facts(const emu::InstanceInfo& info, const std::string& ernicctl);

// Everything start_placed() does, decided before anything starts (describe() prints it).
struct PlacedPlan {
  // Token, log level, mesh port, ready timeout; `dir` is this machine's directory of the run.
  emu::SupervisorConfig common;
  std::vector<Placement> placements;
  std::filesystem::path run_dir;  // logs arrive in run_dir/emulator, stats are copied there
};

// Dry run: every action, in order, prefixed "on HOST: " for instances on other machines.
std::vector<std::string> describe_placed(const PlacedPlan& plan, const EmulatorContext& context);
HostFacts planned_placed_facts(const PlacedPlan& plan, const EmulatorContext& context, int id);
// Starts every instance where it is placed, each awaited until it logged its ready line (the
// manager also its mesh port); pushes each instance's stop (and each host's directory removal,
// which first copies the stats into the run directory) the moment it exists.
std::unique_ptr<RunningEmulator> start_placed(const PlacedPlan& plan, EmulatorContext& context);

}  // namespace ernic
