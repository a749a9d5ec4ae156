// `ernicctl doctor HOST...` against a real sshd in a namespace that shares this machine's
// filesystem: the checks that do not depend on the transport must say what a local run says.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "run/port_block.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

using testing::SshdInNamespace;

nlohmann::json json_of(const std::string& output) {
  auto start = output.find("{\n");
  REQUIRE(start != std::string::npos);
  return nlohmann::json::parse(output.substr(start));
}

std::map<std::string, std::string> levels_of(const nlohmann::json& checks) {
  std::map<std::string, std::string> levels;
  for (const auto& check : checks) {
    levels[check["check"].get<std::string>()] = check["level"].get<std::string>();
  }
  return levels;
}

// How doctor logs in; empty fields: the fixture's own key and known_hosts.
struct Login {
  std::string known_hosts;
  std::string key;
  std::string connect_timeout = "5s";
};

std::vector<std::string> doctor_argv(const SshdInNamespace& server, std::vector<std::string> rest,
                                     const Login& login = {}) {
  std::vector<std::string> argv = {
      ERNIC_BINARY,
      "doctor",
      "--no-start",
      "--ssh-user",
      "root",
      "--ssh-key",
      login.key.empty() ? server.sshd.client_key().string() : login.key,
      "--known-hosts",
      login.known_hosts.empty() ? server.sshd.known_hosts_file().string() : login.known_hosts,
      "--connect-timeout",
      login.connect_timeout};
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

TEST_CASE("ernicctl doctor HOST checks the machine over SSH with a local run's verdicts",
          "[ssh][doctor]") {
  SshdInNamespace server;
  std::string host = server.ns.inside_address();

  std::string local_output;
  int local_status =
      testing::run_program({ERNIC_BINARY, "doctor", "--no-start", "--json"}, &local_output);
  INFO(local_output);
  REQUIRE((local_status == 0 || local_status == 1));
  auto local = levels_of(json_of(local_output)["checks"]);

  std::string remote_output;
  int remote_status = testing::run_program(doctor_argv(server, {"--json", host}), &remote_output);
  INFO(remote_output);
  REQUIRE((remote_status == 0 || remote_status == 1));
  auto report = json_of(remote_output);
  REQUIRE(report["machines"].size() == 1);
  const auto& machine = report["machines"][0];
  CHECK(machine["host"] == host);
  CHECK(machine["address"] == "root@" + host + ":22");
  CHECK(report["ready"] == machine["ready"]);
  CHECK(remote_status == (machine["ready"].get<bool>() ? 0 : 1));
  auto remote = levels_of(machine["checks"]);
  CHECK(remote.count("ssh") == 0);  // it was reached
  // Same filesystem, same devices, same libvirtd socket, root on both sides: the namespace is
  // this machine seen through sshd. Socket buffers (per network namespace) and memlock (the
  // login's limits) may differ by design; the guest kernel is checked only here.
  for (const char* name : {"accelerator", "libvirtd", "vfio-user", "bridge/TAP", "tools"}) {
    INFO(name);
    REQUIRE(remote.count(name) == 1);
    CHECK(remote[name] == local[name]);
  }
  CHECK(remote.count("memlock") == 1);
  CHECK(remote.count("socket buffers") == 1);
  CHECK(remote.count("guest kernel") == 0);
  CHECK(local.count("guest kernel") == 1);

  std::string text;
  testing::run_program(doctor_argv(server, {host}), &text);
  INFO(text);
  CHECK(text.find("== " + host + " (root@" + host + ":22)\n") != std::string::npos);
  CHECK(text.find(" accelerator ") != std::string::npos);
  CHECK(text.find("bridge/TAP      CAP_NET_ADMIN yes, /dev/net/tun opens") != std::string::npos);
}

TEST_CASE("ernicctl doctor names why a machine cannot be reached and exits 1", "[ssh][doctor]") {
  SshdInNamespace server;
  PortBlock ports;
  std::string closed = "127.0.0.1:" + std::to_string(ports.take());

  std::string output;
  int status = testing::run_program(doctor_argv(server, {closed}), &output);
  INFO(output);
  CHECK(status == 1);
  CHECK(output.find("== " + closed) != std::string::npos);
  CHECK(output.find("missing  ssh") != std::string::npos);
  CHECK(output.find("connection refused") != std::string::npos);
  CHECK(output.find("Some machines lack what scenarios need.") != std::string::npos);

  // A reachable machine whose host key is not known: refused under the strict policy, and the
  // other machine is still checked.
  auto empty_known_hosts = server.sshd.directory() / "empty_known_hosts";
  std::ofstream(empty_known_hosts).close();
  std::string host = server.ns.inside_address();
  status = testing::run_program(
      doctor_argv(server, {"--json", host, closed}, {.known_hosts = empty_known_hosts.string()}),
      &output);
  INFO(output);
  CHECK(status == 1);
  auto report = json_of(output);
  REQUIRE(report["machines"].size() == 2);
  CHECK(report["ready"] == false);
  for (const auto& machine : report["machines"]) {
    REQUIRE(machine["checks"].size() == 1);
    CHECK(machine["checks"][0]["check"] == "ssh");
    CHECK(machine["checks"][0]["level"] == "missing");
    CHECK(machine["ready"] == false);
  }
  CHECK(report["machines"][0]["checks"][0]["detail"].get<std::string>().find(
            "is not in " + empty_known_hosts.string() + " and host_key_policy is strict") !=
        std::string::npos);
  CHECK(report["machines"][1]["checks"][0]["detail"].get<std::string>().find(
            "connection refused") != std::string::npos);
}

TEST_CASE("ernicctl doctor names a failed login and a host that does not answer in time",
          "[ssh][doctor]") {
  SshdInNamespace server;
  std::string host = server.ns.inside_address();
  auto stranger = server.sshd.directory() / "stranger";
  testing::run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", stranger.string()});
  std::string output;
  int status =
      testing::run_program(doctor_argv(server, {host}, {.key = stranger.string()}), &output);
  INFO(output);
  CHECK(status == 1);
  CHECK(output.find("missing  ssh") != std::string::npos);
  CHECK(output.find("authentication failed for user root") != std::string::npos);

  // A frozen sshd accepts the TCP connection (the kernel does) but never sends its banner.
  server.sshd.freeze(true);
  auto started = std::chrono::steady_clock::now();
  status = testing::run_program(doctor_argv(server, {host}, {.connect_timeout = "2s"}), &output);
  auto elapsed = std::chrono::steady_clock::now() - started;
  server.sshd.freeze(false);
  INFO(output);
  CHECK(status == 1);
  CHECK(output.find("missing  ssh") != std::string::npos);
  CHECK(output.find("timed out after") != std::string::npos);
  CHECK(elapsed < std::chrono::seconds(10));
}

TEST_CASE("ernicctl doctor refuses a HOST it cannot read before connecting anywhere",
          "[ssh][doctor]") {
  std::string output;
  int status = testing::run_program({ERNIC_BINARY, "doctor", "gw:ssh"}, &output);
  CHECK(status == 2);
  CHECK(output.find("gw:ssh: port 'ssh' is not a number") != std::string::npos);
}

}  // namespace
}  // namespace ernic
