#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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

}  // namespace
}  // namespace ernic
