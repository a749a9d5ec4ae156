#include "commands/doctor_checks.h"

#include "benchmarks/benchmark.h"
#include "hosts/provider.h"
#include "platform/platform.h"
#include "setup/setup_step.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "hosts/libvirt_accel.h"
#include "hosts/libvirt_connection.h"
#include "image/image_builder.h"
#include "image/local_process.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

long read_long(const fs::path& file) {
  std::ifstream in(file);
  long value = -1;
  in >> value;
  return in ? value : -1;
}

std::string mib(long bytes) {
  return fmt::format("{:.0f} MiB", bytes / 1048576.0);
}

}  // namespace

const char* doctor_level_name(DoctorCheck::Level level) {
  switch (level) {
    case DoctorCheck::Level::kOk:
      return "ok";
    case DoctorCheck::Level::kWarning:
      return "warning";
    case DoctorCheck::Level::kMissing:
      return "missing";
  }
  return "?";
}

DoctorCheck check_socket_buffers(const fs::path& proc_root, bool apply_fixes) {
  DoctorCheck check{"socket buffers", DoctorCheck::Level::kOk, "", ""};
  std::vector<std::string> low;
  std::vector<std::string> found;
  for (const char* key : {"wmem_max", "rmem_max"}) {
    fs::path file = proc_root / "sys/net/core" / key;
    long value = read_long(file);
    if (value < kMinimumSocketBuffer && apply_fixes) {
      std::ofstream(file) << kMinimumSocketBuffer << "\n";
      value = read_long(file);
    }
    found.push_back(
        fmt::format("net.core.{} = {}", key, value < 0 ? "unreadable" : std::to_string(value)));
    if (value < kMinimumSocketBuffer) {
      low.push_back(fmt::format("net.core.{}={}", key, kMinimumSocketBuffer));
    }
  }
  check.detail = fmt::format("{} (need at least {} for large bidirectional mesh traffic)",
                             fmt::join(found, ", "), mib(kMinimumSocketBuffer));
  if (!low.empty()) {
    check.level = DoctorCheck::Level::kMissing;
    check.fix = fmt::format("sysctl -w {} (or ernicctl doctor --fix; persist in /etc/sysctl.d/)",
                            fmt::join(low, " "));
  }
  return check;
}

DoctorCheck check_memlock() {
  DoctorCheck check{"memlock", DoctorCheck::Level::kOk, "", ""};
  rlimit limit{};
  ::getrlimit(RLIMIT_MEMLOCK, &limit);
  if (limit.rlim_cur == RLIM_INFINITY) {
    check.detail = "RLIMIT_MEMLOCK unlimited";
    return check;
  }
  check.detail = fmt::format("RLIMIT_MEMLOCK {} KiB", limit.rlim_cur / 1024);
  if (limit.rlim_cur < (64UL << 20)) {
    check.level = DoctorCheck::Level::kWarning;
    check.detail +=
        " (RDMA on this host pins memory: a small limit fails with a misleading "
        "\"Couldn't create CQ\"; guests built by ernicctl set their own)";
    check.fix =
        "ulimit -l unlimited, or '* - memlock unlimited' in "
        "/etc/security/limits.d/90-rdma-memlock.conf";
  }
  return check;
}

DoctorCheck check_tools(const std::vector<std::pair<std::string, std::string>>& program_packages) {
  DoctorCheck check{"tools", DoctorCheck::Level::kOk, "", ""};
  std::vector<std::string> missing;
  std::set<std::string> packages;
  for (const auto& [program, package] : program_packages) {
    if (!local_program_exists(program)) {
      missing.push_back(program);
      packages.insert(package);
    }
  }
  if (missing.empty()) {
    check.detail = fmt::format("{} tools found", program_packages.size());
    return check;
  }
  check.level = DoctorCheck::Level::kMissing;
  check.detail = fmt::format("not found: {}", fmt::join(missing, ", "));
  check.fix = fmt::format("apt-get install {}", fmt::join(packages, " "));
  return check;
}

DoctorCheck check_accelerator() {
  auto choice = detect_local_accelerator();
  DoctorCheck check{"accelerator", DoctorCheck::Level::kOk, choice.reason, ""};
  if (choice.accelerator == Accelerator::kTcg) {
    check.level = DoctorCheck::Level::kWarning;
    check.fix =
        "for measured (not functional-only) numbers, run on a host with vmx/svm "
        "(enable virtualization in firmware, or nested virtualization for a VM)";
  }
  return check;
}

DoctorCheck check_libvirtd(bool start_daemons, bool apply_fixes) {
  DoctorCheck check{"libvirtd", DoctorCheck::Level::kOk, "", ""};
  try {
    std::string started;
    if (start_daemons) {
      LibvirtDaemons daemons;
      daemons.ensure_running(std::chrono::seconds(60));
      if (!daemons.started().empty()) {
        started = fmt::format(" (started {})", fmt::join(daemons.started(), " and "));
      }
    }
    LibvirtConnection connection("qemu:///system");
    unsigned long version = 0;
    virConnectGetLibVersion(connection.get(), &version);
    check.detail = fmt::format("qemu:///system answers, libvirt {}.{}.{}{}", version / 1000000,
                               version / 1000 % 1000, version % 1000, started);
  } catch (const std::exception& error) {
    check.level = DoctorCheck::Level::kMissing;
    check.detail = error.what();
    check.fix = start_daemons
                    ? "apt-get install libvirt-daemon-system, then virtlogd -d && libvirtd -d "
                      "as root (or start the libvirtd service)"
                    : "virtlogd -d && libvirtd -d (or run ernicctl doctor without --no-start)";
    return check;
  }
  // Debian's package leaves this to systemd-tmpfiles; without it every libvirt network fails
  // to start ("Failed to create file '/var/lib/libvirt/dnsmasq/NAME.macs.new'").
  fs::path dnsmasq = "/var/lib/libvirt/dnsmasq";
  if (!fs::is_directory(dnsmasq)) {
    std::error_code ignored;
    if (apply_fixes || start_daemons) {
      fs::create_directories(dnsmasq, ignored);
    }
    if (!fs::is_directory(dnsmasq)) {
      check.level = DoctorCheck::Level::kMissing;
      check.detail += "; /var/lib/libvirt/dnsmasq is missing (libvirt networks cannot start)";
      check.fix = "mkdir -p /var/lib/libvirt/dnsmasq";
    }
  }
  return check;
}

DoctorCheck check_vfio_user() {
  auto support = detect_vfio_user_support();
  DoctorCheck check{"vfio-user", DoctorCheck::Level::kOk, support.reason, ""};
  if (!support.available) {
    check.level = DoctorCheck::Level::kWarning;
    check.fix =
        "install QEMU 10.1 or newer with vfio-user (needed only to attach rocm-ernic "
        "instances; soft-RoCE scenarios run without it)";
  }
  return check;
}

DoctorCheck check_network_admin(const fs::path& proc_root) {
  DoctorCheck check{"bridge/TAP", DoctorCheck::Level::kOk, "", ""};
  std::ifstream status(proc_root / "self/status");
  std::string line;
  unsigned long long effective = 0;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      effective = std::stoull(line.substr(7), nullptr, 16);
    }
  }
  constexpr int kCapNetAdmin = 12;
  bool net_admin = (effective >> kCapNetAdmin) & 1ULL;
  int tun = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  bool tun_opens = tun >= 0;
  if (tun_opens) {
    ::close(tun);
  }
  check.detail = fmt::format("CAP_NET_ADMIN {}, /dev/net/tun {}", net_admin ? "yes" : "no",
                             tun_opens ? "opens" : "does not open");
  if (!net_admin || !tun_opens) {
    check.level = DoctorCheck::Level::kMissing;
    check.fix = !net_admin ? "run as root (bridges, TAPs and namespaces need CAP_NET_ADMIN)"
                           : "modprobe tun; mkdir -p /dev/net && mknod /dev/net/tun c 10 200";
  }
  return check;
}

DoctorCheck check_guest_kernel() {
  DoctorCheck check{"guest kernel", DoctorCheck::Level::kOk, "", ""};
  try {
    ImageRecipe recipe;
    check.detail = fmt::format("{} in /boot with its initrd and modules (direct kernel boot)",
                               resolve_kernel_version(recipe));
  } catch (const std::exception& error) {
    check.level = DoctorCheck::Level::kMissing;
    check.detail = error.what();
    check.fix = "apt-get install linux-image-amd64";
  }
  return check;
}

std::vector<std::pair<std::string, std::string>> programs_to_check(const Platform& platform) {
  // Guest images and libvirt guests; everything else comes from the components that need it.
  std::vector<std::pair<std::string, std::string>> programs = {
      {"qemu-system-x86_64", "qemu-system-x86"},
      {"qemu-img", "qemu-utils"},
      {"virsh", "libvirt-clients"},
      {"ssh", "openssh-client"},
      {"ssh-keygen", "openssh-client"},
      {"debootstrap", "debootstrap"},
      {"mkfs.ext4", "e2fsprogs"},
  };
  auto add = [&](const std::vector<Program>& needed) {
    for (const auto& program : needed) {
      std::pair<std::string, std::string> entry{program.name, program.debian_package};
      if (std::find(programs.begin(), programs.end(), entry) == programs.end()) {
        programs.push_back(std::move(entry));
      }
    }
  };
  for (const Benchmark* tool : platform.tools) {
    add(tool->programs());
  }
  for (const HostProvider* provider : platform.providers) {
    add(provider->programs());
  }
  for (const SetupStep* step : platform.setup_steps) {
    add(step->programs());
  }
  return programs;
}

std::vector<DoctorCheck> run_doctor_checks(const DoctorOptions& options) {
  auto programs = programs_to_check(*options.platform);
  return {
      check_accelerator(),   check_libvirtd(options.start_daemons, options.apply_fixes),
      check_vfio_user(),     check_network_admin(options.proc_root),
      check_memlock(),       check_socket_buffers(options.proc_root, options.apply_fixes),
      check_tools(programs), check_guest_kernel(),
  };
}

}  // namespace ernic
