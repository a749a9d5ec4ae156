#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include "builtin_platform.h"
#include "scenario/platform.h"

#include "hosts/ssh/ssh_host.h"
#include "scenario/scenario_schema.h"
#include "setup/setup_step.h"
#include "setup/steps.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

using testing::SshdOptions;
using testing::SshdServer;
using testing::TestNamespace;
using namespace std::chrono_literals;

class LogSink : public OutputSink {
 public:
  void on_output(OutputStream, std::string_view data) override { text.append(data); }
  std::string text;
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << content;
}

struct SshTarget {
  explicit SshTarget(bool pam_limits = false)
      : sshd(SshdOptions{ns.name(), ns.inside_address(), 0, pam_limits}),
        host("g1", ns.inside_address(), sshd.connect_options("g1")) {}
  TestNamespace ns{"setup"};
  SshdServer sshd;
  SshHost host;
};

// A directory laid out like sysfs: the ERNIC emulator's PCI device (1dd8:1002, subsystem
// 1dd8:5400) and a Soft-RoCE device with its GID table.
struct FakeSysfs {
  explicit FakeSysfs(const std::filesystem::path& base) : root(base / "sys") {
    auto ernic = root / "class/infiniband/ernic0/device";
    write_file(ernic / "vendor", "0x1dd8\n");
    write_file(ernic / "device", "0x1002\n");
    write_file(ernic / "subsystem_vendor", "0x1dd8\n");
    write_file(ernic / "subsystem_device", "0x5400\n");
    std::filesystem::create_directories(root / "class/infiniband/rxe0/ports/1");
  }
  // GID slots of rxe0 port 1 as the kernel lays them out: link-local v1 and v2, then the
  // IPv4-mapped address v1 and v2, then unused zero slots whose type cannot be read.
  void add_gids(const std::string& ipv4_mapped) {
    auto port = root / "class/infiniband/rxe0/ports/1";
    const std::string link_local = "fe80:0000:0000:0000:a0d1:ffff:fe00:0001";
    const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000";
    std::vector<std::pair<std::string, std::string>> slots = {{link_local, "IB/RoCE v1"},
                                                              {link_local, "RoCE v2"},
                                                              {ipv4_mapped, "IB/RoCE v1"},
                                                              {ipv4_mapped, "RoCE v2"}};
    for (std::size_t i = 0; i < 12; ++i) {
      write_file(port / "gids" / std::to_string(i),
                 (i < slots.size() ? slots[i].first : zero) + "\n");
      if (i < slots.size()) {
        write_file(port / "gid_attrs/types" / std::to_string(i), slots[i].second + "\n");
      }
    }
  }
  std::filesystem::path root;
};

// A `setup:` entry as the scenario loader hands it to the step.
Config step_config(const SetupStep& step, const std::string& yaml) {
  return make_config(YAML::Load(yaml), step_schema_for(builtin_platform(), step), "s.yaml",
                     "setup[0]");
}

std::string setup_error(const SetupStep& step, const Config& config, Host& host, HostFacts& facts) {
  try {
    step.apply(config, host, facts, nullptr);
  } catch (const SetupError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("setup steps are registered by kind", "[ssh][setup]") {
  std::vector<std::string> kinds;
  const Platform platform = builtin_platform();
  for (const SetupStep* step : platform.setup_steps) {
    kinds.emplace_back(step->kind());
    CHECK(platform.setup_step(step->kind()) == step);
    CHECK_FALSE(step->description().empty());
  }
  CHECK(kinds == std::vector<std::string>{"packages", "sysctl", "memlock", "soft-roce",
                                          "rdma-device", "gid-index", "command",
                                          "instance-device"});
  CHECK(platform.setup_step("no-such-step") == nullptr);
}

// Only its refusals run here: on success it writes /etc/modprobe.d and unloads ib_core, which a
// test must not do to this machine (the embedded-guest end-to-end test runs it in guests).
TEST_CASE("instance-device refuses a host without a guest region, a provider or an ivshmem device",
          "[ssh][setup]") {
  SshTarget target;
  const SetupStep& step = instance_device_step();
  const Config config = step_config(step, "{step: instance-device}");
  HostFacts plain;
  CHECK(setup_error(step, config, target.host, plain) ==
        "instance-device on g1: the host is not served by an embedded instance's guest region");

  namespace fs = std::filesystem;
  const fs::path library = target.sshd.directory() / "lib";
  HostFacts guest{{"guest_region", "ernic-abc123-i1"},
                  {"verbs_device", "ernic_1"},
                  {"verbs_sysfs", (target.sshd.directory() / "sysfs").string()},
                  {"verbs_library_dir", library.string()},
                  {"emulator_mac", "02:e7:00:00:00:01"},
                  {"emulator_gids", "fe80::e7:ff:fe00:1,192.168.200.10"}};
  CHECK_THAT(setup_error(step, config, target.host, guest),
             Catch::Contains("the guest image has no ERNIC verbs provider in " + library.string()));
  fs::create_directories(library);
  std::ofstream(library / "libernic-rdmav34.so") << "provider";
  for (const auto& device : fs::directory_iterator("/sys/bus/pci/devices")) {
    std::ifstream vendor(device.path() / "vendor"), id(device.path() / "device");
    std::string v, d;
    vendor >> v;
    id >> d;
    if (v == "0x1af4" && d == "0x1110") {
      WARN("this machine has an ivshmem device: the step would act on it; not run further");
      return;
    }
  }
  // Without an ivshmem device nothing is written.
  CHECK_THAT(setup_error(step, config, target.host, guest),
             Catch::Contains("no ivshmem device (PCI 1af4:1110)"));
  CHECK(guest.count("rdma_device") == 0);
  CHECK_FALSE(fs::exists(target.sshd.directory() / "sysfs"));

  HostFacts bad_gid = guest;
  bad_gid["emulator_gids"] = "not-a-gid";
  CHECK_THAT(setup_error(step, config, target.host, bad_gid), Catch::Contains("GID 'not-a-gid'"));
}

TEST_CASE("rdma-device finds the ERNIC device by PCI identity in a sysfs tree", "[ssh][setup]") {
  SshTarget target;
  FakeSysfs sysfs(target.sshd.directory());
  const SetupStep& step = rdma_device_step();
  std::string root = sysfs.root.string();

  HostFacts facts;
  step.apply(step_config(step,
                         "{step: rdma-device, pci: {vendor: '0x1dd8', device: '0x1002', "
                         "subsystem_vendor: 0x1DD8, subsystem_device: '5400'}, sysfs_root: " +
                             root + "}"),
             target.host, facts, nullptr);
  CHECK(facts["rdma_device"] == "ernic0");
  CHECK(facts["rdma_pci"] == "1dd8:1002:1dd8:5400");

  HostFacts by_name{{"sysfs_root", root}};  // the root as a host fact
  step.apply(step_config(step, "{step: rdma-device, name: rxe0}"), target.host, by_name, nullptr);
  CHECK(by_name["rdma_device"] == "rxe0");

  HostFacts none;
  std::string error =
      setup_error(step,
                  step_config(step,
                              "{pci: {vendor: 0x1dd8, device: 0x100a, subsystem_vendor: 0x1dd8, "
                              "subsystem_device: 0x5400}, sysfs_root: " +
                                  root + "}"),
                  target.host, none);
  CHECK(error ==
        "rdma-device on g1: no RDMA device matches 1dd8:100a:1dd8:5400 in " + root +
            "/class/infiniband; found: ernic0 (1dd8:1002:1dd8:5400), rxe0 (no PCI device)");
  CHECK(none.count("rdma_device") == 0);

  std::filesystem::create_directories(target.sshd.directory() / "empty");
  error = setup_error(step,
                      step_config(step, "{name: ernic0, sysfs_root: " +
                                            (target.sshd.directory() / "empty").string() + "}"),
                      target.host, none);
  CHECK(error.find("found: none") != std::string::npos);

  auto lines = step.describe(step_config(step, "{name: rxe0}"), target.host);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("name rxe0") != std::string::npos);
}

TEST_CASE("gid-index finds the RoCE v2 GID of the host's test address", "[ssh][setup]") {
  SshTarget target;
  FakeSysfs sysfs(target.sshd.directory());
  // The host's test address is the namespace address; its IPv4-mapped GID.
  std::string address = target.ns.inside_address();
  std::istringstream octets(address);
  std::string a, b, c, d;
  std::getline(octets, a, '.');
  std::getline(octets, b, '.');
  std::getline(octets, c, '.');
  std::getline(octets, d, '.');
  auto hex = [](const std::string& high, const std::string& low) {
    char text[5];
    std::snprintf(text, sizeof text, "%02x%02x", std::stoi(high), std::stoi(low));
    return std::string(text);
  };
  sysfs.add_gids("0000:0000:0000:0000:0000:ffff:" + hex(a, b) + ":" + hex(c, d));
  const SetupStep& step = gid_index_step();

  HostFacts facts{{"rdma_device", "rxe0"}, {"sysfs_root", sysfs.root.string()}};
  LogSink log;
  step.apply(step_config(step, "{step: gid-index}"), target.host, facts, &log);
  CHECK(facts["gid_index"] == "3");
  CHECK(facts["gid_type"] == "RoCE v2");
  CHECK(log.text.find("GID index 3") != std::string::npos);

  step.apply(step_config(step, "{roce_version: v1}"), target.host, facts, nullptr);
  CHECK(facts["gid_index"] == "2");

  step.apply(step_config(step, "{address: 'fe80::a0d1:ffff:fe00:1'}"), target.host, facts, nullptr);
  CHECK(facts["gid_index"] == "1");

  std::string error =
      setup_error(step, step_config(step, "{address: 192.0.2.99}"), target.host, facts);
  CHECK(error.find("gid-index on g1: no GID of rxe0 port 1 holds 192.0.2.99 "
                   "(0000:0000:0000:0000:0000:ffff:c000:0263)") != std::string::npos);
  CHECK(error.find("3 0000:0000:0000:0000:0000:ffff:") != std::string::npos);
  CHECK(error.find("(RoCE v2)") != std::string::npos);
  CHECK(error.find("4 0000:0000:0000:0000:0000:0000:0000:0000") == std::string::npos);

  HostFacts no_device{{"sysfs_root", sysfs.root.string()}};
  error = setup_error(step, step_config(step, "{}"), target.host, no_device);
  CHECK(error.find("run the rdma-device") != std::string::npos);

  error = setup_error(step, step_config(step, "{device: ernic0}"), target.host, facts);
  CHECK(error.find("no GID table") != std::string::npos);
}

TEST_CASE("sysctl sets per-namespace values and verifies them", "[ssh][setup]") {
  SshTarget target;
  std::string outside_before = read_file("/proc/sys/net/core/somaxconn");
  const SetupStep& step = sysctl_step();
  HostFacts facts;
  LogSink log;
  Config config = step_config(
      step,
      "{step: sysctl, values: {net.ipv4.ip_forward: 1}, at_least: {net.core.somaxconn: 8191}}");
  auto lines = step.describe(config, target.host);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "echo '1' > /proc/sys/net/ipv4/ip_forward  # sysctl net.ipv4.ip_forward on g1");

  step.apply(config, target.host, facts, &log);
  std::string value;
  target.ns.exec({"cat", "/proc/sys/net/ipv4/ip_forward"}, &value);
  CHECK(value == "1\n");
  target.ns.exec({"cat", "/proc/sys/net/core/somaxconn"}, &value);
  CHECK(value == "8191\n");
  CHECK(facts["sysctl.net.core.somaxconn"] == "8191");
  CHECK(read_file("/proc/sys/net/core/somaxconn") == outside_before);

  // Idempotent, and at_least never lowers.
  LogSink again;
  step.apply(
      step_config(step, "{values: {net.ipv4.ip_forward: 1}, at_least: {net.core.somaxconn: 100}}"),
      target.host, facts, &again);
  CHECK(again.text.find("net.ipv4.ip_forward is already 1") != std::string::npos);
  target.ns.exec({"cat", "/proc/sys/net/core/somaxconn"}, &value);
  CHECK(value == "8191\n");

  std::string error = setup_error(step, step_config(step, "{values: {net.core.ernic_no_such: 1}}"),
                                  target.host, facts);
  CHECK(error.find("sysctl on g1: kernel parameter net.core.ernic_no_such does not exist") !=
        std::string::npos);
  // The kernel refuses a reversed port range.
  error = setup_error(step,
                      step_config(step, "{values: {net.ipv4.ip_local_port_range: '50000 40000'}}"),
                      target.host, facts);
  CHECK(error.find("sysctl on g1: setting net.ipv4.ip_local_port_range to 50000 40000 failed") !=
        std::string::npos);
}

TEST_CASE("memlock sets the limit of new login sessions through limits.d", "[ssh][setup]") {
  const std::filesystem::path real_file = "/etc/security/limits.d/90-rdma-memlock.conf";
  bool existed_before = std::filesystem::exists(real_file);
  SshTarget target(/*pam_limits=*/true);
  const SetupStep& step = memlock_step();
  auto new_session_limit = [&] {
    return target.host.open_new_session()->run(CommandSpec{{"sh", "-c", "ulimit -l"}, 10s, {}}).out;
  };
  std::string before = new_session_limit();
  INFO("ulimit -l before: " << before);
  REQUIRE(before != "2048\n");

  // A limit below the current hard limit can be set anywhere, also in containers without
  // CAP_SYS_RESOURCE: it proves that the file is written where logins read it.
  HostFacts facts;
  LogSink log;
  step.apply(step_config(step, "{step: memlock, limit: 2048}"), target.host, facts, &log);
  CHECK(facts["memlock"] == "2048");
  CHECK(new_session_limit() == "2048\n");
  CHECK(log.text.find("systemd is not running on g1") != std::string::npos);
  CHECK(log.text.find("ulimit -l is 2048 for a new login session") != std::string::npos);
  LogSink again;
  step.apply(step_config(step, "{step: memlock, limit: 2048}"), target.host, facts, &again);
  CHECK(again.text.find("already in place") != std::string::npos);

  // The default, unlimited: verified for real where the kernel lets sshd raise the hard limit,
  // reported precisely where it does not.
  bool can_raise = target.ns.exec({"sh", "-c", "ulimit -Hl unlimited"}) == 0;
  HostFacts unlimited;
  std::string error;
  try {
    step.apply(step_config(step, "{step: memlock}"), target.host, unlimited, nullptr);
  } catch (const SetupError& failure) {
    error = failure.what();
  }
  std::string written =
      read_file(target.sshd.private_etc() / "security/limits.d/90-rdma-memlock.conf");
  CHECK(written.find("* hard memlock unlimited") != std::string::npos);
  CHECK(written.find("root soft memlock unlimited") != std::string::npos);
  if (can_raise) {
    CHECK(error.empty());
    CHECK(unlimited["memlock"] == "unlimited");
  } else {
    WARN("this machine does not let root raise RLIMIT_MEMLOCK: checking the error instead");
    CHECK(error.find("memlock on g1: ulimit -l is '") != std::string::npos);
    CHECK(error.find("for a new login session after writing "
                     "/etc/security/limits.d/90-rdma-memlock.conf, expected unlimited") !=
          std::string::npos);
    CHECK(unlimited.count("memlock") == 0);
  }
  // The machine's own /etc was never touched.
  CHECK(std::filesystem::exists(real_file) == existed_before);
}

TEST_CASE("packages and soft-roce declare the programs they need", "[ssh][setup]") {
  auto names = [](const SetupStep& step) {
    std::vector<std::string> found;
    for (const auto& program : step.programs()) {
      found.push_back(program.name + "=" + program.debian_package);
    }
    return found;
  };
  CHECK(names(soft_roce_step()) == std::vector<std::string>{"rdma=iproute2", "modprobe=kmod"});
  CHECK(names(packages_step()) == std::vector<std::string>{"apt-get=apt", "dpkg-query=dpkg"});
}

TEST_CASE("soft-roce skips hosts with a device and reports a failing modprobe", "[ssh][setup]") {
  SshTarget target;
  FakeSysfs sysfs(target.sshd.directory());
  const SetupStep& step = soft_roce_step();
  HostFacts facts{{"sysfs_root", sysfs.root.string()}};
  LogSink log;
  step.apply(step_config(step, "{name: ernicrxe9}"), target.host, facts, &log);
  CHECK(log.text.find("already has RDMA device(s) ernic0 rxe0") != std::string::npos);
  CHECK(facts.count("rdma_device") == 0);

  std::filesystem::create_directories(target.sshd.directory() / "bare");
  HostFacts bare{{"sysfs_root", (target.sshd.directory() / "bare").string()}};
  bool rxe_available = testing::run_program({"modprobe", "-n", "rdma_rxe"}) == 0;
  if (rxe_available) {
    // A machine with Soft-RoCE: the step really creates the device on the namespace's veth.
    step.apply(step_config(step, "{name: ernicrxe9, netdev: " + target.ns.inside_interface() + "}"),
               target.host, bare, nullptr);
    CHECK(bare["rdma_device"] == "ernicrxe9");
    target.ns.exec({"rdma", "link", "delete", "ernicrxe9"});
  } else {
    std::string error =
        setup_error(step, step_config(step, "{name: ernicrxe9}"), target.host, bare);
    CHECK(error.find("soft-roce on g1: modprobe rdma_rxe failed") != std::string::npos);
  }
  auto lines = step.describe(step_config(step, "{netdev: eth1}"), target.host);
  CHECK(lines.at(2).find("rdma link add rxe0 type rxe netdev eth1") != std::string::npos);
}

TEST_CASE("packages skips installed packages and reports apt-get failures", "[ssh][setup]") {
  SshTarget target;
  const SetupStep& step = packages_step();
  HostFacts facts;
  LogSink log;
  step.apply(step_config(step, "{names: [iproute2, openssh-server]}"), target.host, facts, &log);
  CHECK(log.text.find("already installed on g1: iproute2 openssh-server") != std::string::npos);

  std::string error = setup_error(
      step, step_config(step, "{names: [iproute2, ernic-no-such-package], lock_timeout: 20s}"),
      target.host, facts);
  CHECK(error.find("packages on g1: apt-get install ernic-no-such-package failed") !=
        std::string::npos);
  auto lines =
      step.describe(step_config(step, "{names: [perftest], lock_timeout: 30s}"), target.host);
  CHECK(lines.back().find("DPkg::Lock::Timeout=30 install -y --no-install-recommends perftest") !=
        std::string::npos);
}

TEST_CASE("command step runs, skips when done, and verifies", "[ssh][setup]") {
  SshTarget target;
  const SetupStep& step = command_step();
  auto marker = target.sshd.directory() / "marker";
  auto counter = target.sshd.directory() / "runs";
  std::string config = "{run: 'echo x >> " + counter.string() + " && touch " + marker.string() +
                       "', unless: 'test -e " + marker.string() + "', verify: 'test -e " +
                       marker.string() + "'}";
  HostFacts facts;
  step.apply(step_config(step, config), target.host, facts, nullptr);
  step.apply(step_config(step, config), target.host, facts, nullptr);
  CHECK(read_file(counter) == "x\n");  // the second apply was skipped by `unless`

  std::string error =
      setup_error(step, step_config(step, "{run: 'true', verify: 'exit 4'}"), target.host, facts);
  CHECK(error == "command on g1: verification `exit 4` failed (exit status 4)");
  error =
      setup_error(step, step_config(step, "{run: 'echo broken >&2; exit 2'}"), target.host, facts);
  CHECK(error == "command on g1: `echo broken >&2; exit 2` failed (exit status 2): broken");
}

}  // namespace
}  // namespace ernic
