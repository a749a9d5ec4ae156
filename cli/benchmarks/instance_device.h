// Unmodified verbs programs (perftest, ibv_rc_pingpong) on a host attached to an embedded
// emulator instance: the instance's verbs device, and the environment under which libibverbs
// finds it (emu::verbs_environment: the instance's sysfs folder, the ERNIC provider).
#pragma once

#include "benchmarks/benchmark.h"

namespace ernic {

// Whether the host is attached to an embedded emulator instance (emulators/placed_instances.h:
// instance_facts gives it the instance's socket and the ernicctl that runs it).
bool attached_to_instance(const HostFacts& facts);
// Whether the host reaches an embedded instance's verbs device: attached to it on this machine,
// or a guest it serves through a guest region (which runs no load generator).
bool has_instance_device(const HostFacts& facts);

// Points `spec` at the instance's verbs device: sets its environment and returns the device's
// name (for `-d`). Throws std::invalid_argument naming the cause when the facts do not say where
// the device is described or where the verbs provider is.
std::string use_instance_device(const HostFacts& facts, CommandSpec& spec);

// The GID index a verbs program passes (perftest's -x, ibv_rc_pingpong's -g): the `gid_index`
// fact of the gid-index setup step, else the scenario's `gid_index`, else on an instance's
// device its first GID (RoCE v2: "0"); empty when none applies.
std::string gid_index_for(const HostFacts& facts, const PointParams& params);

}  // namespace ernic
