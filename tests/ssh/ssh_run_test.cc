#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hosts/host.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

using testing::SshdOptions;
using testing::SshdServer;
using testing::TestNamespace;

// Two guests as ernicctl sees real ones: each has an SSH (management) address reached from
// here and a test-network address on a link between the two that benchmarks use.
struct TwoSshGuests {
  TwoSshGuests() {
    std::string veth_a = "er" + std::to_string(getpid() % 100000) + "a";
    std::string veth_b = "er" + std::to_string(getpid() % 100000) + "b";
    testing::run_checked({"ip", "link", "add", veth_a, "netns", one.name(), "type", "veth", "peer",
                          "name", veth_b, "netns", two.name()});
    testing::run_checked({"ip", "-n", one.name(), "addr", "add", kOneTest + "/24", "dev", veth_a});
    testing::run_checked({"ip", "-n", one.name(), "link", "set", veth_a, "up"});
    testing::run_checked({"ip", "-n", two.name(), "addr", "add", kTwoTest + "/24", "dev", veth_b});
    testing::run_checked({"ip", "-n", two.name(), "link", "set", veth_b, "up"});
    std::ofstream(known_hosts()) << sshd_one.known_hosts_line() << "\n"
                                 << sshd_two.known_hosts_line() << "\n";
  }

  std::filesystem::path known_hosts() const { return sshd_one.directory() / "both_known_hosts"; }

  std::string host_entry(const std::string& name, const std::string& test_address,
                         const SshdServer& sshd) const {
    return "  - name: " + name + "\n    provider: ssh\n    address: " + test_address +
           "\n    ssh: {host: " + sshd.address() +
           ", user: root, key: " + sshd.client_key().string() +
           ", known_hosts: " + known_hosts().string() +
           ", connect_timeout: 5s, keepalive: 2s, alive_timeout: 3s}\n";
  }

  inline static const std::string kOneTest = "192.168.252.1";
  inline static const std::string kTwoTest = "192.168.252.2";
  TestNamespace one{"runa"};
  TestNamespace two{"runb"};
  SshdServer sshd_one{SshdOptions{one.name(), one.inside_address(), 0, false}};
  SshdServer sshd_two{SshdOptions{two.name(), two.inside_address(), 0, false}};
};

TEST_CASE("ernicctl run drives iperf3 between two hosts over SSH", "[ssh][e2e]") {
  TwoSshGuests guests;
  auto work = guests.sshd_one.directory();
  std::string scenario =
      "version: 1\nname: ssh-e2e\nrunner: local\nhosts:\n" +
      guests.host_entry("server", TwoSshGuests::kOneTest, guests.sshd_one) +
      guests.host_entry("client", TwoSshGuests::kTwoTest, guests.sshd_two) +
      "setup:\n"
      "  - {step: sysctl, hosts: [server, client], at_least: {net.core.somaxconn: 1024}}\n"
      "benchmarks:\n"
      "  - name: tcp\n    tool: iperf3\n    server: server\n    client: client\n"
      "    params: {protocol: tcp, duration: 1s, reverse: [false, true]}\n    timeout: 30s\n"
      "history: {path: " +
      (work / "history.jsonl").string() + "}\n";
  std::ofstream(work / "scenario.yaml") << scenario;
  std::string output;
  int status = testing::run_program({ERNIC_BINARY, "run", (work / "scenario.yaml").string(),
                                     "--runs-dir", (work / "runs").string(), "--output", "json"},
                                    &output);
  INFO(output);
  REQUIRE(status == 0);
  auto json_start = output.find("{\n");
  REQUIRE(json_start != std::string::npos);
  nlohmann::json summary = nlohmann::json::parse(output.substr(json_start));
  CHECK(summary["status"] == "passed");
  REQUIRE(summary["points"].size() == 2);
  for (const auto& point : summary["points"]) {
    CHECK(point["status"] == "passed");
  }
  // The setup step ran through SSH in each namespace.
  std::string value;
  guests.one.exec({"cat", "/proc/sys/net/core/somaxconn"}, &value);
  CHECK(std::stoi(value) >= 1024);
  CHECK(std::filesystem::exists(work / "history.jsonl"));
}

TEST_CASE("ernicctl run drives the embedded emulator's load generator over SSH", "[ssh][e2e]") {
  // Hosts reached by SSH attach to emulator instances the way guests attach to their NIC: the
  // same sweep then runs across machines. Here the machines are namespaces sharing this
  // filesystem, so they reach the instances' sockets and the ernicctl binary.
  TwoSshGuests guests;
  auto work = guests.sshd_one.directory();
  std::string scenario =
      "version: 1\nname: ssh-emulator\nrunner: local\nemulator: {kind: embedded, instances: 2}\n"
      "hosts:\n" +
      guests.host_entry("guest1", TwoSshGuests::kOneTest, guests.sshd_one) + "    instance: 1\n" +
      guests.host_entry("guest2", TwoSshGuests::kTwoTest, guests.sshd_two) + "    instance: 2\n" +
      "benchmarks:\n"
      "  - name: rdma\n    tool: perftest\n    server: guest1\n    client: guest2\n"
      // The load generator, whose server binds the host's test address (real perftest through
      // the verbs provider is the default on such hosts: tests/verbs covers it).
      "    params: {verb: [send, write, read], mode: [bw, lat], size: 64KiB, iterations: 50,\n"
      "             program: load-generator}\n"
      "    timeout: 60s\n"
      "history: {path: " +
      (work / "history.jsonl").string() + "}\n";
  std::ofstream(work / "scenario.yaml") << scenario;
  std::string output;
  int status = testing::run_program({ERNIC_BINARY, "run", (work / "scenario.yaml").string(),
                                     "--runs-dir", (work / "runs").string(), "--output", "json"},
                                    &output);
  INFO(output);
  REQUIRE(status == 0);
  std::ifstream in(work / "history.jsonl");
  std::string line;
  std::getline(in, line);
  nlohmann::json record = nlohmann::json::parse(line);
  const auto& points = record["ernicctl"]["points"];
  REQUIRE(points.size() == 6);
  for (const auto& point : points) {
    INFO(point.dump());
    CHECK(point["status"] == "passed");
    CHECK(point["commands"]["client"].get<std::string>().find(" perf ") != std::string::npos);
  }
  CHECK(points[0]["commands"]["server"].get<std::string>().find(
            "--bind " + TwoSshGuests::kOneTest) != std::string::npos);
  CHECK(record["series"]["bandwidth"]["65536"].get<double>() > 0);
}

TEST_CASE("ernicctl run stops soon after an SSH host stops answering", "[ssh][e2e]") {
  TwoSshGuests guests;
  auto work = guests.sshd_one.directory();
  std::string scenario =
      "version: 1\nname: ssh-failfast\nrunner: local\nhosts:\n" +
      guests.host_entry("server", TwoSshGuests::kOneTest, guests.sshd_one) +
      guests.host_entry("client", TwoSshGuests::kTwoTest, guests.sshd_two) +
      "benchmarks:\n"
      "  - name: tcp\n    tool: iperf3\n    server: server\n    client: client\n"
      "    params: {protocol: tcp, duration: 1s, parallel: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n"
      "    timeout: 60s\n"
      "history: {enabled: false}\n";
  std::ofstream(work / "scenario.yaml") << scenario;
  pid_t run = testing::start_program({ERNIC_BINARY, "run", (work / "scenario.yaml").string(),
                                      "--runs-dir", (work / "runs").string()},
                                     work / "output.txt");
  testing::InterruptAtExit interrupt_at_exit(run);
  // Once a point has finished (the second one has its step log), the server host hangs: sshd and
  // everything it started stop.
  auto points_started = [&] {
    int logs = 0;
    std::error_code ignored;
    for (auto it = std::filesystem::recursive_directory_iterator(work / "runs", ignored);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ignored)) {
      logs += it->path().parent_path().filename() == "steps" &&
              it->path().filename().string().find("tcp") != std::string::npos;
    }
    return logs;
  };
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (points_started() < 2 && std::chrono::steady_clock::now() < give_up &&
         testing::wait_program(run, std::chrono::milliseconds(100)) == -1) {
  }
  REQUIRE(testing::wait_program(run, std::chrono::milliseconds(0)) == -1);
  guests.sshd_one.freeze(true);
  auto frozen = std::chrono::steady_clock::now();
  int status = testing::wait_program(run, std::chrono::seconds(40));
  double stopped_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - frozen).count();
  guests.sshd_one.freeze(false);
  if (status == -1) {
    kill(run, SIGKILL);
    testing::wait_program(run, std::chrono::seconds(5));
  }
  std::ifstream output_file(work / "output.txt");
  std::string output((std::istreambuf_iterator<char>(output_file)), {});
  INFO(output);
  if (const char* keep = std::getenv("ERNIC_TEST_KEEP_RUNS")) {
    std::filesystem::copy(work / "runs", keep, std::filesystem::copy_options::recursive);
  }
  CHECK(status == 1);
  INFO("ernicctl ended " << stopped_after << " s after the server host froze");
  CHECK(stopped_after < 10.0);
  CHECK(output.find("did not answer") != std::string::npos);
}

}  // namespace
}  // namespace ernic
