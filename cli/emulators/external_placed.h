// The list form of the external kind's `instances`: each rocm-ernic server on the machine that
// owns its guests (`on: HOST`, a host of the scenario, or `local`), started through that host.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "emulators/emulator_kind.h"
#include "emulators/external.h"
#include "emulators/instance_machines.h"

namespace ernic {

// The schema of one entry: on, bind (the manager's only), binary.
std::shared_ptr<const ObjectSchema> external_placement_schema();
// The entries of the list form; empty for `instances: N`.
std::vector<Placement> external_placements(const Config& emulator);
// A worker's `bind`: the server takes no address for a worker, so it would be ignored.
void check_external_placements(const Config& emulator, Diagnostics& out);

// Dry run: per instance its machine's preparation and its command line, prefixed "on HOST: ".
std::vector<std::string> describe_placed_external(const ExternalSettings& settings,
                                                  const std::vector<Placement>& placements,
                                                  const EmulatorContext& context);
HostFacts planned_placed_external_facts(const ExternalSettings& settings,
                                        const std::vector<Placement>& placements,
                                        const EmulatorContext& context, int id);
// Checks every instance's binary on its machine, then starts the manager and the workers where
// they are placed, each awaited until its socket exists there and its log says it is ready;
// pushes each instance's stop (and each machine's directory removal, which first copies the
// logs and stats into the run directory) the moment it exists.
std::unique_ptr<RunningEmulator> start_placed_external(const ExternalSettings& settings,
                                                       const std::vector<Placement>& placements,
                                                       EmulatorContext& context);

}  // namespace ernic
