#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ernic {

struct Platform;
class DoctorProbe;

// One thing `ernicctl doctor` looks at on a machine.
struct DoctorCheck {
  enum class Level { kOk, kWarning, kMissing };
  std::string name;
  Level level = Level::kOk;
  std::string detail;  // what was found
  std::string fix;     // the command or change that closes the gap; empty when ok
};

const char* doctor_level_name(DoctorCheck::Level level);

struct DoctorOptions {
  // Start virtlogd and libvirtd when they are not running (no systemd here to do it). This
  // machine only.
  bool start_daemons = true;
  // Apply the fixes that are safe to apply (sysctl limits, libvirt's dnsmasq folder). This
  // machine only.
  bool apply_fixes = false;
  // Whose programs the tools check looks for: every tool, provider and setup step's own list.
  const Platform* platform = nullptr;
};

// The programs the platform's components declare they need, once each, in platform order,
// after the ones guest images and libvirt guests need.
std::vector<std::pair<std::string, std::string>> programs_to_check(const Platform& platform);

// Each check on its own, reading the machine only through `probe`, so tests can feed them a
// fake machine. `apply_fixes` and `start_daemons` are ignored on a remote probe.
DoctorCheck check_socket_buffers(DoctorProbe& probe, bool apply_fixes);
DoctorCheck check_memlock(DoctorProbe& probe);
DoctorCheck check_tools(DoctorProbe& probe,
                        const std::vector<std::pair<std::string, std::string>>& program_packages);
DoctorCheck check_accelerator(DoctorProbe& probe);
DoctorCheck check_libvirtd(DoctorProbe& probe, bool start_daemons, bool apply_fixes);
DoctorCheck check_vfio_user(DoctorProbe& probe);
// What guests on embedded instances need: QEMU's ivshmem-plain device and room in /dev/shm.
DoctorCheck check_guest_regions(DoctorProbe& probe);
DoctorCheck check_network_admin(DoctorProbe& probe);
// Guest images are built (and their kernel taken from /boot) on the machine that runs
// ernicctl, so this one looks only there.
DoctorCheck check_guest_kernel();

// All checks of the probe's machine, in the order they are printed: every one for this
// machine, all but the guest kernel for a remote one. A check that throws (the machine stopped
// answering) becomes a `missing` check naming the error.
std::vector<DoctorCheck> run_doctor_checks(DoctorProbe& probe, const DoctorOptions& options);

// The smallest socket buffer limit (bytes) scenarios need: large bidirectional mesh traffic.
inline constexpr long kMinimumSocketBuffer = 16L * 1024 * 1024;

}  // namespace ernic
