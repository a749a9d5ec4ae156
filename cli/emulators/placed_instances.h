// The list form of the embedded emulator's `instances`: each instance on the machine that owns
// its guests (`on: HOST`, a host of the scenario, or `local`), started through that host.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "emulators/emulator_kind.h"
#include "emulators/instance_machines.h"
#include "supervisor.h"

namespace ernic {

// The schema of one entry of the embedded kind's list (on, bind, ernicctl).
std::shared_ptr<const ObjectSchema> embedded_placement_schema();
// The entries of the embedded kind's list form; empty for `instances: N`.
std::vector<Placement> embedded_placements(const Config& emulator);

// The path of the running ernicctl.
std::string own_executable();
// What a host attached to the instance needs to reach it: for the load generator its socket on
// the instance's machine and the ernicctl there; for unmodified verbs programs its verbs device,
// the folder describing it and the verbs provider's folder beside that ernicctl
// (`verbs_library_dir`, empty when `ernicctl` is found in PATH and its folder is unknown;
// RunningPlaced also empties it for an ernicctl the run copied there, which has none).
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
