// The list form of the external kind's `instances` (`on: HOST`): its schema and checks, the
// hosts the run creates first, the dry run's lines for each machine, and `up`'s refusal.
// tests/ssh/placed_external_test.cc starts the stand-in server for real over SSH.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "builtin_platform.h"
#include "emulators/emulator_kind.h"
#include "scenario/platform.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

std::string scenario_with(const std::string& instances) {
  return "version: 1\nname: ext-placed\n"
         "emulator: {kind: external, binary: /bin/ernic, instances: " +
         instances +
         "}\n"
         "hosts:\n"
         "  - {name: hostA, provider: ssh, address: 10.1.2.1, instance: 1}\n"
         "  - {name: hostB, provider: ssh, address: 10.1.2.2, instance: 2}\n"
         "benchmarks:\n"
         "  - name: tcp\n    tool: iperf3\n    server: hostA\n    client: hostB\n"
         "    params: {protocol: tcp, duration: 1s}\n"
         "history: {enabled: false}\n";
}

const std::string kPlaced = "[{on: hostA, bind: 10.9.0.1}, {on: hostB, binary: /opt/b/rocm-ernic}]";

std::string errors_of(const std::string& text) {
  LoadResult loaded = load_scenario_text(builtin_platform(), text, "ext.yaml", {});
  std::string all;
  for (const auto& d : loaded.diagnostics) {
    all += d.format() + "\n";
  }
  return all;
}

TEST_CASE("external placed instances: the list form loads, counts its entries, names its hosts",
          "[emulator][placed][external]") {
  const Platform platform = builtin_platform();
  REQUIRE(errors_of(scenario_with(kPlaced)).empty());
  LoadResult loaded = load_scenario_text(platform, scenario_with(kPlaced), "ext.yaml", {});
  REQUIRE(loaded.scenario);
  const EmulatorKind* kind = platform.emulator_kind("external");
  const Config& config = loaded.scenario->emulator.config;
  CHECK(kind->instance_count(config) == 2);
  CHECK(kind->placement_hosts(config) == std::vector<std::string>{"hostA", "hostB"});
  LoadResult counted = load_scenario_text(platform, scenario_with("3"), "ext.yaml", {});
  REQUIRE(counted.scenario);
  CHECK(kind->placement_hosts(counted.scenario->emulator.config).empty());
  CHECK(kind->instance_count(counted.scenario->emulator.config) == 3);
}

TEST_CASE("external placed instances: bad entries are located errors",
          "[emulator][placed][external]") {
  // The server takes no address for a worker: its `bind` would be silently ignored.
  std::string errors = errors_of(scenario_with("[{on: hostA}, {on: hostB, bind: 10.9.0.2}]"));
  CHECK(errors.find("emulator.instances[1].bind: the rocm-ernic server takes no address for a "
                    "worker (it dials the manager's `bind`); remove it") != std::string::npos);
  errors = errors_of(scenario_with("[{on: hostA}, {on: hostC}]"));
  CHECK(errors.find("emulator.instances[1].on: no host named 'hostC' to run the instance on; did "
                    "you mean 'hostA'?") != std::string::npos);
  errors = errors_of(scenario_with("[{on: hostA, bnary: /x}]"));
  CHECK(errors.find("emulator.instances[0].bnary: unknown key 'bnary'; did you mean 'binary'?") !=
        std::string::npos);
  // The embedded kind's program key is not the external kind's.
  errors = errors_of(scenario_with("[{on: hostA, ernicctl: /x}]"));
  CHECK(errors.find("emulator.instances[0].ernicctl: unknown key 'ernicctl'") != std::string::npos);
}

TEST_CASE("external placed instances: the dry run says what runs on each machine",
          "[emulator][placed][external]") {
  const Platform platform = builtin_platform();
  LoadResult loaded = load_scenario_text(platform, scenario_with(kPlaced), "ext.yaml", {});
  REQUIRE(loaded.scenario);
  const EmulatorKind* kind = platform.emulator_kind("external");
  EmulatorContext context{.run_dir = "runs/r",
                          .run_token = "<token>",
                          .cleanup = nullptr,
                          .bring_up = false,
                          .host = {}};
  auto lines = kind->describe(loaded.scenario->emulator.config, context);
  INFO(Catch::Detail::stringify(lines));
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "on hostA: mkdir -p -m 0700 /tmp/ernic-ext-<token>-hostA");
  CHECK(lines[1] == "on hostA: test -x /bin/ernic");
  CHECK(lines[2].rfind("on hostA: ERNIC_TCP_GUEST_GIDS=fe80::e7:ff:fe00:1,192.168.200.10 "
                       "/bin/ernic --backend tcp:manager:listen:6320",
                       0) == 0);
  CHECK(lines[2].find("--log-file '/tmp/ernic-ext-<token>-hostA/instance1.log'") !=
        std::string::npos);
  CHECK(lines[2].find("(console: runs/r/emulator/instance1.console)") != std::string::npos);
  CHECK(lines[4] == "on hostB: test -x /opt/b/rocm-ernic");
  // The worker dials the manager's bind, its socket in its own machine's directory.
  CHECK(lines[5].find("/opt/b/rocm-ernic --backend tcp:worker:10.9.0.1:6320") != std::string::npos);
  CHECK(kind->planned_facts(loaded.scenario->emulator.config, context, 2).at("emulator_socket") ==
        "/tmp/ernic-ext-<token>-hostB/instance2.sock");
}

TEST_CASE("external placed instances: up refuses them before anything starts, saying what to do",
          "[emulator][placed][external]") {
  const Platform platform = builtin_platform();
  LoadResult loaded = load_scenario_text(platform, scenario_with(kPlaced), "ext.yaml", {});
  REQUIRE(loaded.scenario);
  CleanupStack cleanup;
  EmulatorContext context{.run_dir = std::filesystem::temp_directory_path() / "ernic-ext-placed-up",
                          .run_token = "abcdef",
                          .cleanup = &cleanup,
                          .bring_up = true,
                          .host = {}};
  EmulatorKind* kind = platform.emulator_kind("external");
  CHECK_THROWS_WITH(kind->start(loaded.scenario->emulator.config, context),
                    Catch::Contains("cannot be left running by `ernicctl up` yet") &&
                        Catch::Contains("use `ernicctl run`"));
  CHECK(cleanup.size() == 0);
  CHECK_FALSE(std::filesystem::exists(context.run_dir));
}

}  // namespace
}  // namespace ernic
