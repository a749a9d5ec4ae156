#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ernic {

struct Platform;

// One thing `ernicctl doctor` looks at on this machine.
struct DoctorCheck {
  enum class Level { kOk, kWarning, kMissing };
  std::string name;
  Level level = Level::kOk;
  std::string detail;  // what was found
  std::string fix;     // the command or change that closes the gap; empty when ok
};

const char* doctor_level_name(DoctorCheck::Level level);

struct DoctorOptions {
  // Start virtlogd and libvirtd when they are not running (no systemd here to do it).
  bool start_daemons = true;
  // Apply the fixes that are safe to apply (sysctl limits, libvirt's dnsmasq folder).
  bool apply_fixes = false;
  std::filesystem::path proc_root = "/proc";  // tests point this at a fake tree
  // Whose programs the tools check looks for: every tool, provider and setup step's own list.
  const Platform* platform = nullptr;
};

// The programs the platform's components declare they need, once each, in platform order,
// after the ones guest images and libvirt guests need.
std::vector<std::pair<std::string, std::string>> programs_to_check(const Platform& platform);

// Each check on its own, so tests can feed them fake inputs.
DoctorCheck check_socket_buffers(const std::filesystem::path& proc_root, bool apply_fixes);
DoctorCheck check_memlock();
DoctorCheck check_tools(const std::vector<std::pair<std::string, std::string>>& program_packages);
DoctorCheck check_accelerator();
DoctorCheck check_libvirtd(bool start_daemons, bool apply_fixes);
DoctorCheck check_vfio_user();
DoctorCheck check_network_admin(const std::filesystem::path& proc_root);
DoctorCheck check_guest_kernel();

// All checks, in the order they are printed.
std::vector<DoctorCheck> run_doctor_checks(const DoctorOptions& options);

// The smallest socket buffer limit (bytes) scenarios need: large bidirectional mesh traffic.
inline constexpr long kMinimumSocketBuffer = 16L * 1024 * 1024;

}  // namespace ernic
