#include "commands/doctor_checks.h"

#include "benchmarks/benchmark.h"
#include "frontend/guest_region.h"
#include "hosts/provider.h"
#include "scenario/platform.h"
#include "setup/setup_step.h"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "commands/doctor_probe.h"
#include "hosts/libvirt/libvirt_accel.h"
#include "image/image_builder.h"

namespace ernic {
namespace {

constexpr unsigned long long kUnlimited = ~0ULL;

long parse_long(const std::optional<std::string>& text) {
  if (!text) {
    return -1;
  }
  std::istringstream in(*text);
  long value = -1;
  in >> value;
  return in ? value : -1;
}

// The soft limit (bytes, or kUnlimited) of "Max locked memory" in /proc/PID/limits.
std::optional<unsigned long long> soft_memlock_limit(const std::string& limits) {
  std::istringstream in(limits);
  std::string line;
  const std::string key = "Max locked memory";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) {
      continue;
    }
    std::istringstream words(line.substr(key.size()));
    std::string soft;
    words >> soft;
    if (soft == "unlimited") {
      return kUnlimited;
    }
    try {
      return std::stoull(soft);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
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

DoctorCheck check_socket_buffers(DoctorProbe& probe, bool apply_fixes) {
  DoctorCheck check{"socket buffers", DoctorCheck::Level::kOk, "", ""};
  std::vector<std::string> low;
  std::vector<std::string> found;
  for (const char* key : {"wmem_max", "rmem_max"}) {
    std::string file = fmt::format("/proc/sys/net/core/{}", key);
    long value = parse_long(probe.read_file(file));
    if (value < kMinimumSocketBuffer && apply_fixes && probe.is_local()) {
      probe.write_file(file, fmt::format("{}\n", kMinimumSocketBuffer));
      value = parse_long(probe.read_file(file));
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

DoctorCheck check_memlock(DoctorProbe& probe) {
  DoctorCheck check{"memlock", DoctorCheck::Level::kOk, "", ""};
  // The soft limit of the reading process: ernicctl here, a login session's `cat` there.
  auto limit = soft_memlock_limit(probe.read_file("/proc/self/limits").value_or(""));
  if (!limit) {
    check.level = DoctorCheck::Level::kWarning;
    check.detail = "/proc/self/limits has no readable \"Max locked memory\" line";
    check.fix = "ulimit -l shows the limit; RDMA needs it large (ulimit -l unlimited)";
    return check;
  }
  if (*limit == kUnlimited) {
    check.detail = "RLIMIT_MEMLOCK unlimited";
    return check;
  }
  check.detail = fmt::format("RLIMIT_MEMLOCK {} KiB", *limit / 1024);
  if (*limit < (64ULL << 20)) {
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

DoctorCheck check_tools(DoctorProbe& probe,
                        const std::vector<std::pair<std::string, std::string>>& program_packages) {
  DoctorCheck check{"tools", DoctorCheck::Level::kOk, "", ""};
  std::vector<std::string> missing;
  std::set<std::string> packages;
  for (const auto& [program, package] : program_packages) {
    if (!probe.has_program(program)) {
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

DoctorCheck check_accelerator(DoctorProbe& probe) {
  auto choice = choose_accelerator(probe.read_file("/proc/cpuinfo").value_or(""),
                                   probe.opens_read_write("/dev/kvm"));
  DoctorCheck check{"accelerator", DoctorCheck::Level::kOk, choice.reason, ""};
  if (choice.accelerator == Accelerator::kTcg) {
    check.level = DoctorCheck::Level::kWarning;
    check.fix =
        "for measured (not functional-only) numbers, run on a host with vmx/svm "
        "(enable virtualization in firmware, or nested virtualization for a VM)";
  }
  return check;
}

DoctorCheck check_libvirtd(DoctorProbe& probe, bool start_daemons, bool apply_fixes) {
  DoctorCheck check{"libvirtd", DoctorCheck::Level::kOk, "", ""};
  bool may_change = probe.is_local();
  start_daemons = start_daemons && may_change;
  LibvirtAnswer answer = probe.ask_libvirt(start_daemons);
  if (!answer.answers) {
    check.level = DoctorCheck::Level::kMissing;
    check.detail = answer.error;
    check.fix = !may_change ? "apt-get install libvirt-daemon-system, then virtlogd -d && "
                              "libvirtd -d as root there (doctor starts daemons only on this "
                              "machine)"
                : start_daemons
                    ? "apt-get install libvirt-daemon-system, then virtlogd -d && libvirtd -d "
                      "as root (or start the libvirtd service)"
                    : "virtlogd -d && libvirtd -d (or run ernicctl doctor without --no-start)";
    return check;
  }
  std::string started = answer.started.empty()
                            ? ""
                            : fmt::format(" (started {})", fmt::join(answer.started, " and "));
  check.detail = fmt::format("qemu:///system answers, libvirt {}{}", answer.version, started);
  // Debian's package leaves this to systemd-tmpfiles; without it every libvirt network fails
  // to start ("Failed to create file '/var/lib/libvirt/dnsmasq/NAME.macs.new'").
  const std::string dnsmasq = "/var/lib/libvirt/dnsmasq";
  if (!probe.is_directory(dnsmasq)) {
    if (may_change && (apply_fixes || start_daemons)) {
      probe.create_directories(dnsmasq);
    }
    if (!probe.is_directory(dnsmasq)) {
      check.level = DoctorCheck::Level::kMissing;
      check.detail += "; /var/lib/libvirt/dnsmasq is missing (libvirt networks cannot start)";
      check.fix = "mkdir -p /var/lib/libvirt/dnsmasq";
    }
  }
  return check;
}

DoctorCheck check_vfio_user(DoctorProbe& probe) {
  const std::string qemu = "qemu-system-x86_64";
  VfioUserSupport support;
  if (!probe.has_program(qemu)) {
    support = {false,
               fmt::format("{} is not installed (fix: apt-get install qemu-system-x86)", qemu)};
  } else if (auto help = probe.run({qemu, "-device", "help"}, std::chrono::seconds(30)); !help.ok) {
    support = {false, fmt::format("`{} -device help` failed: {}", qemu, help.failure)};
  } else {
    support = parse_vfio_user_support(help.output);
  }
  DoctorCheck check{"vfio-user", DoctorCheck::Level::kOk, support.reason, ""};
  if (!support.available) {
    check.level = DoctorCheck::Level::kWarning;
    check.fix =
        "install QEMU 10.1 or newer with vfio-user (needed only to attach rocm-ernic "
        "instances; soft-RoCE scenarios run without it)";
  }
  return check;
}

DoctorCheck check_guest_regions(DoctorProbe& probe) {
  const std::string qemu = "qemu-system-x86_64";
  DoctorCheck check{"guest regions", DoctorCheck::Level::kOk, "", ""};
  const auto help = probe.has_program(qemu)
                        ? probe.run({qemu, "-device", "help"}, std::chrono::seconds(30))
                        : ProbeOutput{false, "", qemu + " is not installed"};
  if (!help.ok || help.output.find("\"ivshmem-plain\"") == std::string::npos) {
    check.level = DoctorCheck::Level::kWarning;
    check.detail = help.ok ? "QEMU has no ivshmem-plain device"
                           : fmt::format("cannot list QEMU's devices: {}", help.failure);
    check.fix =
        "apt-get install qemu-system-x86 (7.2 has ivshmem-plain; needed only for guests on "
        "embedded instances)";
    return check;
  }
  // Each guest's region is a file in /dev/shm (frontend/guest_region.h, 128 MiB by default).
  const auto df = probe.run({"df", "-Pk", "/dev/shm"}, std::chrono::seconds(10));
  std::istringstream lines(df.output);
  std::string line;
  std::getline(lines, line);  // the header
  std::string filesystem, size, used, available;
  if (!df.ok || !std::getline(lines, line) ||
      !(std::istringstream(line) >> filesystem >> size >> used >> available)) {
    check.level = DoctorCheck::Level::kWarning;
    check.detail = "QEMU has ivshmem-plain; /dev/shm cannot be read";
    check.fix = "mount -t tmpfs tmpfs /dev/shm";
    return check;
  }
  const std::uint64_t free_mib = std::stoull(available) / 1024;
  check.detail = fmt::format(
      "QEMU has ivshmem-plain; /dev/shm has {} MiB free for guest regions (128 MiB a guest)",
      free_mib);
  if (free_mib < 2 * (emu::region::kDefaultSize >> 20)) {
    check.level = DoctorCheck::Level::kWarning;
    check.fix = "mount -o remount,size=1G /dev/shm";
  }
  return check;
}

DoctorCheck check_network_admin(DoctorProbe& probe) {
  DoctorCheck check{"bridge/TAP", DoctorCheck::Level::kOk, "", ""};
  // The reading process's capabilities: ernicctl's here, a login session's there.
  std::istringstream status(probe.read_file("/proc/self/status").value_or(""));
  std::string line;
  unsigned long long effective = 0;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      effective = std::stoull(line.substr(7), nullptr, 16);
    }
  }
  constexpr int kCapNetAdmin = 12;
  bool net_admin = (effective >> kCapNetAdmin) & 1ULL;
  bool tun_opens = probe.opens_read_write("/dev/net/tun");
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

std::vector<DoctorCheck> run_doctor_checks(DoctorProbe& probe, const DoctorOptions& options) {
  auto programs = programs_to_check(*options.platform);
  bool fixes = options.apply_fixes && probe.is_local();
  std::vector<std::pair<std::string, std::function<DoctorCheck()>>> checks = {
      {"accelerator", [&] { return check_accelerator(probe); }},
      {"libvirtd", [&] { return check_libvirtd(probe, options.start_daemons, fixes); }},
      {"vfio-user", [&] { return check_vfio_user(probe); }},
      {"guest regions", [&] { return check_guest_regions(probe); }},
      {"bridge/TAP", [&] { return check_network_admin(probe); }},
      {"memlock", [&] { return check_memlock(probe); }},
      {"socket buffers", [&] { return check_socket_buffers(probe, fixes); }},
      {"tools", [&] { return check_tools(probe, programs); }},
  };
  if (probe.is_local()) {
    checks.emplace_back("guest kernel", [] { return check_guest_kernel(); });
  }
  std::vector<DoctorCheck> results;
  for (const auto& [name, check] : checks) {
    try {
      results.push_back(check());
    } catch (const std::exception& error) {
      results.push_back({name, DoctorCheck::Level::kMissing,
                         fmt::format("could not be checked: {}", error.what()), ""});
    }
  }
  return results;
}

}  // namespace ernic
