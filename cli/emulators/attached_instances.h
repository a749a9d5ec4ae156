#pragma once

#include <memory>
#include <string>
#include <vector>

#include "emulators/emulator_kind.h"

namespace ernic {

// Emulator instances `ernicctl up` left running (their manifest entries: id, role, pid, log,
// stats, socket), watched by pid: gone, or having lost a mesh peer, is dead. Those placed on
// another machine (a `remote` entry) are watched there, over a login to it. Stopping them is
// `ernicctl down`'s business, so this never does.
std::unique_ptr<RunningEmulator> attached_instances(std::string kind,
                                                    std::vector<ManifestInstance> instances);

// Instances whose program was replaced on disk since they started (a rebuilt ernicctl or
// emulator server), e.g. "instance 1 (manager, pid 123) runs /path/ernicctl, rebuilt since it
// started". The kernel keeps the started file for /proc/PID/exe, so a rebuild that writes a new
// file shows as another inode than the path has now.
std::vector<std::string> rebuilt_instance_programs(const std::vector<ManifestInstance>& instances);

}  // namespace ernic
