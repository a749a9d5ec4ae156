#include "commands/doctor_checks.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <stdexcept>

#include "builtin_platform.h"
#include "commands/doctor_probe.h"
#include "commands/doctor_targets.h"
#include "scenario/platform.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

// A machine made of maps: what is not in them is not there.
class FakeProbe : public DoctorProbe {
 public:
  bool local = true;
  std::map<std::string, std::string> files;
  std::set<std::string> directories;
  std::set<std::string> devices;  // open read-write
  std::set<std::string> programs;
  std::map<std::string, ProbeOutput> commands;  // by argv joined with spaces
  LibvirtAnswer libvirt;
  bool broken = false;  // every look throws, like a host that stopped answering

  std::vector<std::string> writes;  // "path=content"
  std::vector<std::string> created;
  std::vector<bool> libvirt_start_requests;

  bool is_local() const override { return local; }
  std::optional<std::string> read_file(const std::string& path) override {
    look();
    auto found = files.find(path);
    return found == files.end() ? std::nullopt : std::optional<std::string>(found->second);
  }
  ProbeOutput run(const std::vector<std::string>& argv, std::chrono::seconds) override {
    look();
    std::string line;
    for (const auto& word : argv) {
      line += (line.empty() ? "" : " ") + word;
    }
    auto found = commands.find(line);
    return found == commands.end() ? ProbeOutput{false, "", "exit status 127"} : found->second;
  }
  bool is_directory(const std::string& path) override {
    look();
    return directories.count(path) > 0;
  }
  bool opens_read_write(const std::string& path) override {
    look();
    return devices.count(path) > 0;
  }
  bool has_program(const std::string& program) override {
    look();
    return programs.count(program) > 0;
  }
  LibvirtAnswer ask_libvirt(bool start_daemons) override {
    look();
    libvirt_start_requests.push_back(start_daemons);
    return libvirt;
  }
  void write_file(const std::string& path, const std::string& content) override {
    writes.push_back(path + "=" + content);
    files[path] = content;
  }
  void create_directories(const std::string& path) override {
    created.push_back(path);
    directories.insert(path);
  }

 private:
  void look() const {
    if (broken) {
      throw std::runtime_error("ssh to g1 (root@10.0.0.5:22): connection lost");
    }
  }
};

TEST_CASE("doctor: socket buffers below 16 MiB are missing, with the sysctl that fixes them",
          "[doctor]") {
  FakeProbe probe;
  probe.files["/proc/sys/net/core/wmem_max"] = "4194304\n";
  probe.files["/proc/sys/net/core/rmem_max"] = "33554432\n";
  auto low = check_socket_buffers(probe, false);
  CHECK(low.level == DoctorCheck::Level::kMissing);
  CHECK(low.detail.find("net.core.wmem_max = 4194304, net.core.rmem_max = 33554432") == 0);
  CHECK(low.fix.find("net.core.wmem_max=16777216") != std::string::npos);
  CHECK(low.fix.find("rmem_max") == std::string::npos);  // that one is large enough
  CHECK(probe.writes.empty());

  auto fixed = check_socket_buffers(probe, true);
  CHECK(fixed.level == DoctorCheck::Level::kOk);
  CHECK(probe.writes == std::vector<std::string>{"/proc/sys/net/core/wmem_max=16777216\n"});
}

TEST_CASE("doctor: fixes are never applied to a remote machine", "[doctor]") {
  FakeProbe probe;
  probe.local = false;
  probe.files["/proc/sys/net/core/wmem_max"] = "212992\n";
  probe.files["/proc/sys/net/core/rmem_max"] = "212992\n";
  CHECK(check_socket_buffers(probe, true).level == DoctorCheck::Level::kMissing);
  probe.libvirt = {true, "9.0.0", "", {}};
  auto libvirtd = check_libvirtd(probe, true, true);
  CHECK(probe.writes.empty());
  CHECK(probe.created.empty());
  CHECK(probe.libvirt_start_requests == std::vector<bool>{false});  // daemons start only here
  CHECK(libvirtd.level == DoctorCheck::Level::kMissing);
  CHECK(libvirtd.detail.find("/var/lib/libvirt/dnsmasq is missing") != std::string::npos);
}

TEST_CASE("doctor: unreadable socket buffer limits are missing, not zero", "[doctor]") {
  FakeProbe probe;
  auto check = check_socket_buffers(probe, false);
  CHECK(check.level == DoctorCheck::Level::kMissing);
  CHECK(check.detail.find("net.core.wmem_max = unreadable") != std::string::npos);
}

TEST_CASE("doctor: memlock is the soft limit of /proc/self/limits", "[doctor]") {
  FakeProbe probe;
  const std::string header =
      "Limit                     Soft Limit           Hard Limit           Units\n";
  probe.files["/proc/self/limits"] =
      header + "Max locked memory         8388608              unlimited            bytes\n";
  auto small = check_memlock(probe);
  CHECK(small.level == DoctorCheck::Level::kWarning);
  CHECK(small.detail.find("RLIMIT_MEMLOCK 8192 KiB") == 0);
  CHECK(small.fix.find("ulimit -l unlimited") != std::string::npos);

  probe.files["/proc/self/limits"] =
      header + "Max locked memory         unlimited            unlimited            bytes\n";
  auto unlimited = check_memlock(probe);
  CHECK(unlimited.level == DoctorCheck::Level::kOk);
  CHECK(unlimited.detail == "RLIMIT_MEMLOCK unlimited");

  probe.files.erase("/proc/self/limits");
  CHECK(check_memlock(probe).level == DoctorCheck::Level::kWarning);
}

TEST_CASE("doctor: missing tools are named with the packages that install them", "[doctor]") {
  FakeProbe probe;
  probe.programs = {"sh"};
  auto check = check_tools(
      probe,
      {{"sh", "dash"}, {"ernic-no-such-tool", "ernic-pkg"}, {"ernic-other-missing", "ernic-pkg"}});
  CHECK(check.level == DoctorCheck::Level::kMissing);
  CHECK(check.detail == "not found: ernic-no-such-tool, ernic-other-missing");
  CHECK(check.fix == "apt-get install ernic-pkg");
  CHECK(check_tools(probe, {{"sh", "dash"}}).level == DoctorCheck::Level::kOk);
}

TEST_CASE("doctor: the accelerator from the machine's cpuinfo and /dev/kvm", "[doctor]") {
  FakeProbe probe;
  probe.files["/proc/cpuinfo"] = "processor\t: 0\nflags\t\t: fpu vme vmx sse\n";
  probe.devices = {"/dev/kvm"};
  auto kvm = check_accelerator(probe);
  CHECK(kvm.level == DoctorCheck::Level::kOk);
  CHECK(kvm.detail.find("KVM") != std::string::npos);
  probe.devices.clear();
  CHECK(check_accelerator(probe).level == DoctorCheck::Level::kWarning);
  probe.devices = {"/dev/kvm"};
  probe.files["/proc/cpuinfo"] = "flags\t\t: fpu vme sse\n";
  CHECK(check_accelerator(probe).detail.find("no vmx/svm") != std::string::npos);
}

TEST_CASE("doctor: network administration from the capability set and /dev/net/tun", "[doctor]") {
  FakeProbe probe;
  probe.devices = {"/dev/net/tun"};
  probe.files["/proc/self/status"] = "Name:\tx\nCapEff:\t0000000000000000\n";
  auto without = check_network_admin(probe);
  CHECK(without.level == DoctorCheck::Level::kMissing);
  CHECK(without.fix.find("root") != std::string::npos);
  probe.files["/proc/self/status"] = "Name:\tx\nCapEff:\t000001ffffffffff\n";
  auto with = check_network_admin(probe);
  CHECK(with.level == DoctorCheck::Level::kOk);
  CHECK(with.detail == "CAP_NET_ADMIN yes, /dev/net/tun opens");
  probe.devices.clear();
  auto no_tun = check_network_admin(probe);
  CHECK(no_tun.level == DoctorCheck::Level::kMissing);
  CHECK(no_tun.fix.find("mknod /dev/net/tun") != std::string::npos);
}

TEST_CASE("doctor: vfio-user from the machine's qemu device list", "[doctor]") {
  FakeProbe probe;
  auto absent = check_vfio_user(probe);
  CHECK(absent.level == DoctorCheck::Level::kWarning);
  CHECK(absent.detail.find("qemu-system-x86_64 is not installed") != std::string::npos);
  probe.programs = {"qemu-system-x86_64"};
  probe.commands["qemu-system-x86_64 -device help"] = {
      true, "Misc devices:\nname \"vfio-user-pci\", bus PCI\n", ""};
  CHECK(check_vfio_user(probe).level == DoctorCheck::Level::kOk);
  probe.commands["qemu-system-x86_64 -device help"] = {false, "", "exit status 1"};
  CHECK(check_vfio_user(probe).detail.find("failed: exit status 1") != std::string::npos);
}

TEST_CASE("doctor: guest regions need QEMU's ivshmem-plain and room in /dev/shm", "[doctor]") {
  FakeProbe probe;
  CHECK(check_guest_regions(probe).level == DoctorCheck::Level::kWarning);
  probe.programs = {"qemu-system-x86_64"};
  probe.commands["qemu-system-x86_64 -device help"] = {true, "name \"virtio-net-pci\"\n", ""};
  auto no_device = check_guest_regions(probe);
  CHECK(no_device.level == DoctorCheck::Level::kWarning);
  CHECK(no_device.detail == "QEMU has no ivshmem-plain device");
  probe.commands["qemu-system-x86_64 -device help"] = {
      true, "name \"ivshmem-plain\", bus PCI, desc \"Inter-VM shared memory\"\n", ""};
  probe.commands["df -Pk /dev/shm"] = {true,
                                       "Filesystem 1024-blocks Used Available Capacity Mounted on\n"
                                       "tmpfs 12000000 0 12000000 0% /dev/shm\n",
                                       ""};
  auto ready = check_guest_regions(probe);
  CHECK(ready.level == DoctorCheck::Level::kOk);
  CHECK(ready.detail.find("11718 MiB free") != std::string::npos);
  probe.commands["df -Pk /dev/shm"] = {true,
                                       "Filesystem 1024-blocks Used Available Capacity Mounted on\n"
                                       "tmpfs 65536 0 65536 0% /dev/shm\n",
                                       ""};
  CHECK(check_guest_regions(probe).level == DoctorCheck::Level::kWarning);
}

TEST_CASE("doctor: libvirtd answers, and its dnsmasq folder is made on this machine", "[doctor]") {
  FakeProbe probe;
  probe.libvirt = {true, "9.0.0", "", {"virtlogd", "libvirtd"}};
  auto check = check_libvirtd(probe, true, false);
  CHECK(check.level == DoctorCheck::Level::kOk);
  CHECK(check.detail == "qemu:///system answers, libvirt 9.0.0 (started virtlogd and libvirtd)");
  CHECK(probe.created == std::vector<std::string>{"/var/lib/libvirt/dnsmasq"});
  CHECK(probe.libvirt_start_requests == std::vector<bool>{true});

  FakeProbe down;
  down.local = false;
  down.libvirt = {false, "", "virsh is not installed there", {}};
  auto missing = check_libvirtd(down, true, false);
  CHECK(missing.level == DoctorCheck::Level::kMissing);
  CHECK(missing.detail == "virsh is not installed there");
  CHECK(missing.fix.find("only on this machine") != std::string::npos);
}

TEST_CASE("doctor: a remote machine gets every check but the guest kernel; a lost one says why",
          "[doctor]") {
  Platform platform;
  DoctorOptions options;
  options.platform = &platform;
  FakeProbe remote;
  remote.local = false;
  auto checks = run_doctor_checks(remote, options);
  std::vector<std::string> names;
  for (const auto& check : checks) {
    names.push_back(check.name);
  }
  CHECK(names == std::vector<std::string>{"accelerator", "libvirtd", "vfio-user", "guest regions",
                                          "bridge/TAP", "memlock", "socket buffers", "tools"});
  remote.broken = true;
  for (const auto& check : run_doctor_checks(remote, options)) {
    CHECK(check.level == DoctorCheck::Level::kMissing);
    CHECK(check.detail == "could not be checked: ssh to g1 (root@10.0.0.5:22): connection lost");
  }
}

TEST_CASE("doctor: virsh's daemon version", "[doctor]") {
  CHECK(parse_virsh_daemon_version("Compiled against library: libvirt 9.0.0\nUsing library: "
                                   "libvirt 9.0.0\nRunning against daemon: 9.0.1\n") == "9.0.1");
  CHECK(parse_virsh_daemon_version("error: failed to connect to the hypervisor\n").empty());
}

TEST_CASE("doctor: HOST arguments become the ssh provider's connection options", "[doctor]") {
  DoctorSshFlags flags;
  flags.user = "ops";
  flags.key = "/keys/id";
  flags.known_hosts = "/keys/known";
  auto plain = doctor_target("10.0.0.5", flags);
  CHECK(plain.name == "10.0.0.5");
  CHECK(plain.options.target.display() == "ops@10.0.0.5:22");
  CHECK(plain.options.target.key == "/keys/id");
  CHECK(plain.options.known_hosts == "/keys/known");
  CHECK(plain.options.host_key_policy == HostKeyPolicy::kStrict);
  CHECK(doctor_target("root@gw:2222", flags).options.target.display() == "root@gw:2222");
  CHECK(doctor_target("[fe80::1]:23", flags).options.target.host == "fe80::1");
  flags.host_key_policy = "accept-new";
  flags.connect_timeout = "3s";
  auto tuned = doctor_target("gw", flags);
  CHECK(tuned.options.host_key_policy == HostKeyPolicy::kAcceptNew);
  CHECK(tuned.options.connect_timeout == std::chrono::seconds(3));

  CHECK_THROWS_WITH(doctor_target("gw:ssh", {}), Catch::Contains("port 'ssh' is not a number"));
  CHECK_THROWS_WITH(doctor_target("gw:70000", {}), Catch::Contains("port"));
  CHECK_THROWS_WITH(doctor_target("fe80::1", {}), Catch::Contains("brackets"));
  DoctorSshFlags bad;
  bad.host_key_policy = "trusting";
  CHECK_THROWS_WITH(doctor_target("gw", bad), Catch::Contains("host_key_policy"));
}

TEST_CASE("doctor --scenario: the ssh hosts and the machines of remote libvirt URIs, once each",
          "[doctor]") {
  const Platform platform = builtin_platform();
  auto loaded = load_scenario_text(platform, R"(name: d
hosts:
  - {name: g1, provider: ssh, address: 10.0.0.5, ssh: {user: admin, port: 2200, known_hosts: /k}}
  - {name: v1, provider: libvirt, libvirt: {uri: "qemu+ssh://ops@hv1:2222/system", image: i.yaml}}
  - {name: v2, provider: libvirt, libvirt: {uri: "qemu+ssh://ops@hv1:2222/system", image: i.yaml}}
  - {name: v3, provider: libvirt, libvirt: {uri: "qemu:///system", image: i.yaml}}
benchmarks:
  - {name: t, tool: iperf3, server: g1, client: v1, params: {duration: 1s}}
)",
                                   "d.yaml", {});
  INFO((loaded.diagnostics.empty() ? "" : loaded.diagnostics.front().message));
  REQUIRE(loaded.scenario);
  DoctorSshFlags flags;
  flags.key = "/keys/id";
  auto targets = doctor_targets_of(*loaded.scenario, flags);
  REQUIRE(targets.size() == 2);
  CHECK(targets[0].name == "g1");
  CHECK(targets[0].options.target.display() == "admin@10.0.0.5:2200");
  CHECK(targets[0].options.known_hosts == "/k");
  CHECK(targets[0].options.target.key.empty());  // its own ssh block, not the flags
  CHECK(targets[1].name == "ops@hv1:2222");
  CHECK(targets[1].options.target.display() == "ops@hv1:2222");
  CHECK(targets[1].options.target.key == "/keys/id");
}

}  // namespace
}  // namespace ernic
