#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ernic::emu {

// The environment under which an unmodified verbs program (perftest, ibv_rc_pingpong, qperf, a
// user's own) finds an instance's device: libibverbs reads the instance's sysfs folder
// (SYSFS_PATH), loads the ERNIC provider (RDMAV_DRIVERS) and, with the device's node answered
// by the preloaded shim (LD_PRELOAD), opens it. Nothing outside the run's own files changes.
struct VerbsEnvironment {
  std::string sysfs_path;
  std::string drivers;  // libibverbs appends -rdmav34.so to this absolute prefix
  std::string preload;

  std::vector<std::pair<std::string, std::string>> variables() const;
  // `env K=V ... ` to put before a command line, quoted for a POSIX shell.
  std::string command_prefix() const;
};

// In a guest served through a guest region: where the image carries the provider (ernicctl image
// build installs it there) and where the run describes the instance's device.
inline constexpr const char* kGuestVerbsLibraryDir = "/usr/lib/ernicctl";
inline constexpr const char* kGuestVerbsSysfs = "/run/ernic/sysfs";

// Where this executable's build or installation put the provider: <bindir>/../lib/ernicctl.
std::string verbs_library_dir();
VerbsEnvironment verbs_environment(const std::string& sysfs_path,
                                   const std::string& library_dir = verbs_library_dir());

}  // namespace ernic::emu
