#include "emulators/external.h"

#include <catch2/catch.hpp>

#include "emulators/registry.h"

using namespace ernic;

namespace {

// An `emulator:` section as the scenario loader hands it to the kind.
Config section(const std::string& yaml) {
  return make_config(YAML::Load(yaml), external_emulator().schema(), "s.yaml", "emulator");
}

}  // namespace

TEST_CASE("EUI-64 link-local addresses flip the U/L bit and insert ff:fe") {
  CHECK(eui64_link_local("02:a0:d1:00:00:01") == "fe80::a0:d1ff:fe00:1");
  CHECK(eui64_link_local("02:e7:00:00:00:02") == "fe80::e7:ff:fe00:2");
  CHECK(eui64_link_local("52:54:00:12:34:56") == "fe80::5054:ff:fe12:3456");
  // A universally administered MAC gets the bit set, not cleared.
  CHECK(eui64_link_local("00:11:22:33:44:55") == "fe80::211:22ff:fe33:4455");
  CHECK(eui64_link_local("AA:BB:CC:DD:EE:FF") == "fe80::a8bb:ccff:fedd:eeff");
  CHECK_THROWS_AS(eui64_link_local("02:a0:d1:00:00"), std::invalid_argument);
  CHECK_THROWS_AS(eui64_link_local("02:a0:d1:00:00:01:07"), std::invalid_argument);
  CHECK_THROWS_AS(eui64_link_local("zz:a0:d1:00:00:01"), std::invalid_argument);
}

TEST_CASE("the manager listens and workers connect to it, each with its MAC, files and GIDs") {
  Config config = section(R"(
kind: external
binary: /opt/rocm-ernic/bin/rocm-ernic
instances: 3
mesh_port: 6420
bind: 10.0.0.5
log_level: debug
guests: [192.168.200.11]
extra_args: [--poll-us, "5"]
)");
  auto plans =
      plan_external_instances(parse_external_settings(config), "/tmp/s", "/run/x/emulator");
  REQUIRE(plans.size() == 3);
  CHECK(plans[0].argv ==
        std::vector<std::string>{
            "/opt/rocm-ernic/bin/rocm-ernic", "--backend", "tcp:manager:listen:6420", "--socket",
            "/tmp/s/instance1.sock", "--mac", "02:e7:00:00:00:01", "--stats-file",
            "/run/x/emulator/instance1.stats", "--log-file", "/run/x/emulator/instance1.log",
            "--log-level", "debug", "--poll-us", "5"});
  CHECK(plans[0].env == std::vector<std::pair<std::string, std::string>>{
                            {"ERNIC_TCP_GUEST_GIDS", "fe80::e7:ff:fe00:1,192.168.200.11"}});
  CHECK(plans[0].role == "manager");
  CHECK(plans[2].argv ==
        std::vector<std::string>{
            "/opt/rocm-ernic/bin/rocm-ernic", "--backend", "tcp:worker:10.0.0.5:6420", "--socket",
            "/tmp/s/instance3.sock", "--mac", "02:e7:00:00:00:03", "--stats-file",
            "/run/x/emulator/instance3.stats", "--log-file", "/run/x/emulator/instance3.log",
            "--log-level", "debug", "--poll-us", "5"});
  // Guests not listed get the harness's 192.168.200.{10*id}.
  CHECK(plans[2].env == std::vector<std::pair<std::string, std::string>>{
                            {"ERNIC_TCP_GUEST_GIDS", "fe80::e7:ff:fe00:3,192.168.200.30"}});
  CHECK(plans[1].role == "worker");
}

TEST_CASE("defaults follow the harness: two instances, port 6320, info, no TAP") {
  auto settings = parse_external_settings(section("{kind: external, binary: /bin/x}"));
  CHECK(settings.instances == 2);
  CHECK(settings.ready_timeout == std::chrono::seconds(30));
  CHECK(settings.stop_timeout == std::chrono::seconds(5));
  auto plans = plan_external_instances(settings, "/s", "/l");
  REQUIRE(plans.size() == 2);
  CHECK(plans[1].argv[2] == "tcp:worker:127.0.0.1:6320");
  CHECK(plans[1].argv[12] == "info");
  CHECK(plans[1].argv.size() == 13);
  CHECK(plans[1].tap.empty());
}

TEST_CASE("tap settings add --tap ernic-tapN") {
  auto settings =
      parse_external_settings(section("{kind: external, binary: /bin/x, tap: {bridge: br9}}"));
  auto plans = plan_external_instances(settings, "/s", "/l");
  REQUIRE(plans.size() == 2);
  CHECK(plans[0].argv.back() == "ernic-tap1");
  CHECK(plans[1].argv[plans[1].argv.size() - 2] == "--tap");
  CHECK(plans[1].argv.back() == "ernic-tap2");
  CHECK(parse_external_settings(section("{binary: /bin/x, tap: {enabled: false}}")).tap == false);
}

TEST_CASE("the dry run shows every instance's environment and command line") {
  EmulatorContext context{.run_dir = "runs/r", .run_token = "<token>", .cleanup = nullptr};
  auto lines = external_emulator().describe(
      section("{kind: external, binary: /bin/ernic, instances: 2}"), context);
  REQUIRE(lines.size() == 2);
  CHECK(
      lines[0].rfind("ERNIC_TCP_GUEST_GIDS=fe80::e7:ff:fe00:1,192.168.200.10 /bin/ernic --backend "
                     "tcp:manager:listen:6320",
                     0) == 0);
  CHECK(lines[1].find("tcp:worker:127.0.0.1:6320") != std::string::npos);
  CHECK(lines[0].find("--socket '/tmp/ernic-ext-<token>/instance1.sock'") != std::string::npos);
  CHECK(lines[0].find("--log-file runs/r/emulator/instance1.log") != std::string::npos);
  CHECK(external_emulator()
            .planned_facts(section("{binary: /bin/ernic}"), context, 2)
            .at("emulator_socket") == "/tmp/ernic-ext-<token>/instance2.sock");
}
