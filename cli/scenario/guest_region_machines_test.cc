// A guest region is the shared memory of one machine: a libvirt guest on an embedded instance
// must run where that instance is placed, which the loader checks before anything starts.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "builtin_platform.h"
#include "hosts/libvirt/libvirt_config.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

// Two guests on `uri`, each on its instance, the instances as `instances` says, and `lab`, an
// SSH host at 192.0.2.20.
std::vector<std::string> errors_of(const std::string& uri, const std::string& instances) {
  static const Platform platform = builtin_platform();
  const std::string text =
      "version: 1\nname: regions\nemulator: {kind: embedded, instances: " + instances +
      "}\nhosts:\n"
      "  - {name: g1, provider: libvirt, instance: 1, libvirt: {image: x.qcow2, uri: '" +
      uri +
      "'}}\n"
      "  - {name: g2, provider: libvirt, instance: 2, libvirt: {image: x.qcow2, uri: '" +
      uri +
      "'}}\n"
      "  - {name: lab, provider: ssh, ssh: {host: 192.0.2.20, user: root}}\n"
      "benchmarks: [{name: t, tool: iperf3, server: g1, client: g2}]\n";
  std::vector<std::string> errors;
  for (const auto& diagnostic : load_scenario_text(platform, text, "s.yaml", {}).diagnostics) {
    errors.push_back(diagnostic.format());
  }
  return errors;
}

TEST_CASE("guests on embedded instances run where their instances are placed", "[scenario]") {
  const std::string remote = "qemu+ssh://root@192.0.2.20/system?keyfile=/k";
  // Both on this machine, or both on lab: accepted.
  CHECK(errors_of("qemu:///system", "2").empty());
  CHECK(errors_of("qemu:///system", "[{on: local}, {on: local}]").empty());
  CHECK(errors_of(remote, "[{on: lab}, {on: lab}]").empty());

  // A remote guest whose instance runs here: located at its `instance`, naming both machines.
  auto here = errors_of(remote, "2");
  REQUIRE(here.size() == 2);
  CHECK_THAT(here[0], Catch::StartsWith("s.yaml:5:") &&
                          Catch::Contains("hosts[0].instance: hosts.g1: its QEMU runs on "
                                          "192.0.2.20 and maps instance 1's guest region") &&
                          Catch::Contains("which is this machine;"));

  // One instance on the wrong machine: only its guest is refused, naming where it is placed.
  auto mixed = errors_of(remote, "[{on: lab}, {on: local}]");
  REQUIRE(mixed.size() == 1);
  CHECK_THAT(mixed[0], Catch::Contains("hosts.g2: its QEMU runs on 192.0.2.20"));
  auto placed_away = errors_of("qemu:///system", "[{on: lab}, {on: local}]");
  REQUIRE(placed_away.size() == 1);
  CHECK_THAT(placed_away[0], Catch::Contains("hosts.g1: its QEMU runs on this machine") &&
                                 Catch::Contains("which is 192.0.2.20 (on: lab)"));
}

TEST_CASE("a libvirt URI names its machine; this machine's and the test driver's name none",
          "[libvirt]") {
  CHECK(libvirt_uri_machine("qemu:///system").empty());
  CHECK(libvirt_uri_machine("test:///default").empty());
  CHECK(libvirt_uri_machine("qemu+ssh://root@lab1:2222/system?keyfile=/k") == "lab1");
  CHECK(libvirt_uri_machine("qemu+tcp://192.0.2.7/system") == "192.0.2.7");
  CHECK(libvirt_uri_machine("qemu+ssh://root@[2001:db8::7]:22/system") == "2001:db8::7");
}

}  // namespace
}  // namespace ernic
