// A remote libvirt host end to end: ernicctl runs in a "controller" namespace that reaches the
// "remote host" (this machine's root namespace, its libvirtd and the guests' network) only over
// the namespace's veth pair, through an sshd the test starts on the veth's outside address. The
// guests are defined through qemu+ssh:// and reached through that host as the jump; the
// controller never has a route to their network. Needs root, libvirt-daemon-system, qemu and
// the cached guest image (built on first use).
#include <fmt/format.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "base/subprocess.h"
#include "libvirt_e2e_support.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;
using namespace e2e;
using SteadyClock = std::chrono::steady_clock;

// The remote host as the controller sees it: an sshd on the veth's outside address, and the
// libvirt URI that reaches this machine's daemon through it.
struct RemoteHost {
  Daemons daemons;
  testing::TestNamespace controller{"ctl"};
  testing::SshdServer sshd{testing::SshdOptions{"", controller.outside_address(), 0, false}};
  std::string uri;

  RemoteHost() {
    // libvirt's ssh transport hands known_hosts= to nobody (9.0 verifies against root's
    // ~/.ssh/known_hosts only): its ssh command, given by the URI, verifies against the test's
    // file. ernicctl's jump reads keyfile= and known_hosts= from the same URI.
    fs::path ssh = sshd.directory() / "ssh-for-libvirt";
    std::ofstream(ssh) << fmt::format(
        "#!/bin/sh\nexec ssh -F /dev/null -o UserKnownHostsFile={} -o StrictHostKeyChecking=yes "
        "-o BatchMode=yes -o ConnectTimeout=5 \"$@\"\n",
        sshd.known_hosts_file().string());
    fs::permissions(ssh, fs::perms::owner_all);
    uri = fmt::format("qemu+ssh://root@{}:{}/system?keyfile={}&known_hosts={}&command={}",
                      sshd.address(), sshd.port(), sshd.client_key().string(),
                      sshd.known_hosts_file().string(), ssh.string());
  }
};

// How the controller reaches the guests' libvirt host, as --set lines: the qemu+ssh:// URI...
std::vector<std::string> via_uri(const RemoteHost& remote) {
  return {"hosts.guest1.libvirt.uri=" + remote.uri, "hosts.guest2.libvirt.uri=" + remote.uri};
}
// ...or the scenario's `jump:` with this machine's qemu:///system, whose socket is a file the
// controller reaches without any network: only the guests' SSH goes through the jump.
std::vector<std::string> via_scenario_jump(const RemoteHost& remote) {
  return {fmt::format("libvirt.jump=root@{}:{}", remote.sshd.address(), remote.sshd.port()),
          "libvirt.jump_key=" + remote.sshd.client_key().string(),
          "libvirt.jump_known_hosts=" + remote.sshd.known_hosts_file().string()};
}

// `ip netns exec CONTROLLER ernicctl run scenarios/two-guest-softroce.yaml` reaching the guests'
// libvirt host as `sets` say: three points (perftest send bw and latency at 4 KiB, iperf3 tcp;
// bw at 64 KiB is left out: under TCG on a loaded machine perftest's duration mode often refuses
// its own report, "Correlation coefficient r^2 < 0.9").
std::vector<std::string> remote_run_command(const RemoteHost& remote, const fs::path& work,
                                            const std::string& subnet,
                                            const std::vector<std::string>& sets) {
  std::vector<std::string> argv{"ip", "netns", "exec", remote.controller.name(), ERNIC_BINARY};
  const auto args = two_guest_run_args(work, subnet, "[4KiB]", sets);
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--skip", "pingpong*"});
  return argv;
}

// ernicctl's output, shown as it arrives.
void show(bool /*is_stderr*/, std::string_view data) {
  std::cerr << data;
}

// Polls `done` every 200 ms until it holds, the process ended or the deadline passed.
bool wait_until(const std::function<bool()>& done, Subprocess& process,
                SteadyClock::time_point deadline) {
  while (!done() && process.running() && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

// Both guests' kernels are booting once both serial consoles have printed something; the
// domain XML ernicctl wrote into the run folder names each console's log (on the libvirt host,
// which is this machine).
bool both_booting(const fs::path& runs) {
  static const std::regex kLog{"<log file='([^']+)'"};
  std::error_code ignored;
  if (!fs::exists(runs, ignored) || only_run_dir(runs).empty()) {
    return false;
  }
  for (const char* guest : {"guest1", "guest2"}) {
    std::ifstream in(only_run_dir(runs) / (std::string(guest) + ".domain.xml"));
    std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch log;
    if (!std::regex_search(xml, log, kLog) || fs::file_size(log[1].str(), ignored) == 0 ||
        ignored) {
      return false;
    }
  }
  return true;
}

// Whether an sshd answers at address:22 from inside `ns`: its banner, within 3 s.
bool reaches_sshd(const testing::TestNamespace* ns, const std::string& address) {
  std::vector<std::string> probe{"timeout", "3", "bash", "-c",
                                 "exec 3<>/dev/tcp/" + address + "/22 && head -c 4 <&3"};
  std::string output;
  int status = ns != nullptr ? ns->exec(probe, &output) : testing::run_program(probe, &output);
  return status == 0 && output == "SSH-";
}

// The run, the guests' reachability while it runs, the record and the teardown.
void check_remote_run(const RemoteHost& remote, const std::vector<std::string>& sets,
                      const std::string& expected_uri) {
  fs::path work = make_run_dir("rj" + random_token());
  const std::string subnet = "192.168.237.0/24";
  const std::string guest1 = "192.168.237.10";
  SpawnOptions options;
  options.argv = remote_run_command(remote, work, subnet, sets);
  auto started = SteadyClock::now();
  auto run = Subprocess::spawn(options, show);

  // While the guests run: reachable from the remote host, not from the controller, which has
  // no route to their network.
  bool ready = wait_until([&] { return reaches_sshd(nullptr, guest1); }, *run,
                          SteadyClock::now() + std::chrono::minutes(15));
  std::string routes = testing::run_checked({"ip", "-n", remote.controller.name(), "route"});
  bool guests_reachable_here = reaches_sshd(nullptr, guest1);
  bool guests_reachable_from_controller = reaches_sshd(&remote.controller, guest1);
  std::cerr << fmt::format("TIMING remote guests ready: {:.1f} s\n",
                           std::chrono::duration<double>(SteadyClock::now() - started).count());

  run->wait_until(SteadyClock::now() + std::chrono::minutes(15), false);
  run->finish_output();
  double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();
  std::cerr << fmt::format("TIMING ernicctl run, remote libvirt host (3 points): {:.1f} s\n",
                           seconds);
  INFO(run->stdout_text() << run->stderr_text());
  CHECK(ready);
  CHECK(guests_reachable_here);
  CHECK_FALSE(guests_reachable_from_controller);
  INFO("controller routes:\n" << routes);
  CHECK(routes.find("192.168.237.") == std::string::npos);
  CHECK(routes.find("default") == std::string::npos);
  REQUIRE(run->exit_code() == 0);

  nlohmann::json record = last_json_line(work / "history.jsonl");
  const auto& ernic = record["ernicctl"];
  CHECK(ernic["status"] == "passed");
  REQUIRE(ernic["points"].size() == 3);  // bw, lat, tcp
  for (const auto& point : ernic["points"]) {
    CHECK(point["status"] == "passed");
    CHECK(point["commands"]["client"].get<std::string>().find(guest1) != std::string::npos);
  }
  CHECK(ernic["points"][0]["commands"]["client"].get<std::string>().find("-d rxe0 -x ") !=
        std::string::npos);
  CHECK(record["series"]["bandwidth"].contains("4096"));
  CHECK(record["badges"]["tcp_bw_GBs"].get<double>() > 0);
  REQUIRE(ernic["hosts"].size() == 2);
  for (const auto& host : ernic["hosts"]) {
    CHECK(host["facts"]["uri"] == expected_uri);
    CHECK(host["facts"]["ssh_jump"] ==
          fmt::format("root@{}:{}", remote.sshd.address(), remote.sshd.port()));
  }
  CHECK(leftovers(ernic["run_token"].get<std::string>()).empty());
  fs::remove_all(work);
}

// two-guest-embedded.yaml's topology on the remote host: both guests defined through its
// qemu+ssh:// URI, both instances placed there (`on: lab`, the same machine reached over SSH),
// since a guest region is the shared memory of QEMU's machine. Shortened: ib_write_bw at 64 KiB
// for 3 s, ib_send_lat at 4 KiB and ibv_rc_pingpong validating.
std::string remote_embedded_scenario(const RemoteHost& remote, const fs::path& work) {
  const std::string guest = fmt::format(
      "{{image: {}/images/debian12-rdma.yaml, uri: '{}', vcpus: 1, memory: 768MiB, "
      "timeouts: {{running: 60s, ssh: 900s, host_key: 180s}}}}",
      ERNIC_SOURCE_DIR, remote.uri);
  const std::string text = fmt::format(
      R"(version: 1
name: remote-embedded
emulator:
  kind: embedded
  instances: [{{on: lab}}, {{on: lab}}]
libvirt: {{network: {{subnet: 192.168.239.0/24}}}}
hosts:
  - {{name: guest1, provider: libvirt, instance: 1, libvirt: {guest}}}
  - {{name: guest2, provider: libvirt, instance: 2, libvirt: {guest}}}
  - name: lab
    provider: ssh
    ssh: {{host: {address}, port: {port}, user: root, key: {key}, known_hosts: {known_hosts}}}
setup:
  - {{step: rdma-device, hosts: [guest1, guest2],
     pci: {{vendor: 0x1dd8, device: 0x1002, subsystem_vendor: 0x1dd8, subsystem_device: 0x5400}}}}
  - {{step: gid-index, hosts: [guest1], address: 192.168.200.10}}
  - {{step: gid-index, hosts: [guest2], address: 192.168.200.20}}
benchmarks:
  - {{name: bw, tool: perftest, server: guest1, client: guest2, timeout: 120s,
     params: {{verb: write, mode: bw, size: 64KiB, duration: 3s}}}}
  - {{name: lat, tool: perftest, server: guest1, client: guest2, timeout: 120s,
     params: {{verb: send, mode: lat, size: 4KiB, iterations: 200}}}}
  - {{name: pingpong, tool: pingpong, server: guest1, client: guest2, timeout: 120s,
     params: {{size: 4KiB, iterations: 200, validate: true}}}}
history: {{path: {history}}}
)",
      fmt::arg("guest", guest), fmt::arg("address", remote.sshd.address()),
      fmt::arg("port", remote.sshd.port()), fmt::arg("key", remote.sshd.client_key().string()),
      fmt::arg("known_hosts", remote.sshd.known_hosts_file().string()),
      fmt::arg("history", (work / "history.jsonl").string()));
  const fs::path file = work / "remote-embedded.yaml";
  std::ofstream(file) << text;
  return file.string();
}

TEST_CASE(
    "ernicctl in a controller namespace runs real perftest between two guests of a qemu+ssh:// "
    "libvirt host, each served by an embedded instance placed on that host; nothing is left",
    "[libvirt][e2e][remote]") {
  REQUIRE(::geteuid() == 0);
  RemoteHost remote;
  fs::path work = make_run_dir("re" + random_token());
  // The controller gets a /dev/shm of its own: a region made or handed over on the controller
  // instead of the remote host would not be QEMU's, and the guests would not start.
  const std::string command = fmt::format(
      "mount -t tmpfs -o size=1m ernic-controller-shm /dev/shm && exec {} run {} --runs-dir {} "
      "--output text",
      ERNIC_BINARY, remote_embedded_scenario(remote, work), (work / "runs").string());
  auto run = run_to_end({"ip", "netns", "exec", remote.controller.name(), "unshare", "--mount",
                         "--propagation", "private", "sh", "-c", command},
                        "ernicctl run, guests on instances placed on a remote libvirt host");
  INFO(run->stdout_text() << run->stderr_text());
  REQUIRE(run->exit_code() == 0);

  nlohmann::json record = last_json_line(work / "history.jsonl");
  const auto& ernic = record["ernicctl"];
  CHECK(ernic["status"] == "passed");
  REQUIRE(ernic["points"].size() == 3);
  for (const auto& point : ernic["points"]) {
    CHECK(point["status"] == "passed");
    // Every point's RDMA went through both instances, counted on the remote host.
    CHECK(point["instances"]["2"]["bytes_sent"].get<std::uint64_t>() >= 200 * 4096);
    CHECK(point["instances"]["1"]["bytes_received"].get<std::uint64_t>() >= 200 * 4096);
  }
  CHECK_THAT(ernic["points"][0]["commands"]["client"].get<std::string>(),
             Catch::Contains("ib_write_bw -d ernic_2 "));
  REQUIRE(ernic["emulator"]["instances"].size() == 2);
  for (const auto& instance : ernic["emulator"]["instances"]) {
    CHECK(instance["on"] == "lab");
  }
  int guests = 0;
  for (const auto& host : ernic["hosts"]) {
    if (host["facts"].contains("uri")) {
      ++guests;
      CHECK(host["facts"]["uri"] == remote.uri);
      CHECK(host["facts"]["guest_region"].get<std::string>().starts_with("ernic-"));
    }
  }
  CHECK(guests == 2);
  // Guest regions in this machine's (the remote host's) /dev/shm included.
  CHECK(leftovers(ernic["run_token"].get<std::string>()).empty());
  fs::remove_all(work);
}

TEST_CASE(
    "ernicctl in a controller namespace reaches the guests through the scenario's jump host; "
    "nothing is left",
    "[libvirt][e2e][remote]") {
  REQUIRE(::geteuid() == 0);
  RemoteHost remote;
  check_remote_run(remote, via_scenario_jump(remote), "qemu:///system");
}

TEST_CASE("Ctrl-C to ernicctl while a remote host's guests boot: exit 130 and nothing left there",
          "[libvirt][e2e][remote]") {
  REQUIRE(::geteuid() == 0);
  RemoteHost remote;
  fs::path work = make_run_dir("rc" + random_token());
  SpawnOptions options;
  SECTION("through the qemu+ssh URI's host") {
    options.argv = remote_run_command(remote, work, "192.168.238.0/24", via_uri(remote));
  }
  SECTION("through the scenario's jump") {
    options.argv = remote_run_command(remote, work, "192.168.238.0/24", via_scenario_jump(remote));
  }
  auto run = Subprocess::spawn(options, show);
  REQUIRE(wait_until([&] { return both_booting(work / "runs"); }, *run,
                     SteadyClock::now() + std::chrono::minutes(10)));
  interrupt_and_expect_nothing_left(*run, work, "Ctrl-C to exit, remote libvirt host");
  fs::remove_all(work);
}

}  // namespace
}  // namespace ernic
