// The list form of the embedded emulator's `instances` (`on: HOST`): its schema, its checks, the
// order the run creates hosts and instances in, and the dry run's lines for remote instances.
// tests/ssh/placed_instances_test.cc starts them for real over SSH.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <regex>
#include <string>

#include "builtin_platform.h"
#include "frontend/verbs_environment.h"
#include "hosts/local_host.h"
#include "run/executor.h"
#include "run/testing/run_harness.h"
#include "scenario/platform.h"
#include "scenario/scenario_json_schema.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

std::string scenario_with(const std::string& instances) {
  return "version: 1\nname: placed\n"
         "emulator: {kind: embedded, instances: " +
         instances +
         "}\n"
         "hosts:\n"
         "  - {name: hostA, provider: ssh, address: 10.1.2.1, instance: 1}\n"
         "  - {name: hostB, provider: ssh, address: 10.1.2.2, instance: 2}\n"
         "  - {name: server, provider: netns}\n"
         "  - {name: client, provider: netns}\n"
         "benchmarks:\n"
         "  - name: lat\n    tool: perftest\n    server: hostA\n    client: hostB\n"
         "    params: {verb: write, mode: lat, size: 64KiB, iterations: 10}\n"
         "  - name: tcp\n    tool: iperf3\n    server: server\n    client: client\n"
         "    params: {protocol: tcp, duration: 1s}\n"
         "history: {enabled: false}\n";
}

const std::string kPlaced = "[{on: hostA, bind: 10.9.0.1}, {on: hostB}]";

// Every line the dry run of `scenario` prints.
std::string dry_run_of(const std::string& scenario) {
  const Platform platform = builtin_platform();
  LoadResult loaded = load_scenario_text(platform, scenario, "placed.yaml", {});
  REQUIRE(loaded.scenario);
  Plan plan = make_plan(*loaded.scenario, platform);
  std::FILE* out = std::tmpfile();
  DryRunCommandRunner runner(out);
  auto status = make_status(/*quiet=*/true);
  Executor(plan, platform, runner, RunOptions{}, *status).run();
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) {
    text += static_cast<char>(c);
  }
  std::fclose(out);
  return text;
}

std::string errors_of(const std::string& text) {
  LoadResult loaded = load_scenario_text(builtin_platform(), text, "placed.yaml", {});
  std::string all;
  for (const auto& d : loaded.diagnostics) {
    all += d.format() + "\n";
  }
  return all;
}

TEST_CASE("placed instances: the list form loads, counts its entries and names its hosts",
          "[emulator][placed]") {
  const Platform platform = builtin_platform();
  LoadResult loaded = load_scenario_text(platform, scenario_with(kPlaced), "placed.yaml", {});
  REQUIRE(errors_of(scenario_with(kPlaced)).empty());
  const EmulatorKind* kind = platform.emulator_kind("embedded");
  const Config& config = loaded.scenario->emulator.config;
  CHECK(kind->instance_count(config) == 2);
  CHECK(kind->placement_hosts(config) == std::vector<std::string>{"hostA", "hostB"});
  // The count form places nothing.
  LoadResult counted = load_scenario_text(platform, scenario_with("2"), "placed.yaml", {});
  REQUIRE(counted.scenario);
  CHECK(kind->placement_hosts(counted.scenario->emulator.config).empty());
  CHECK(kind->instance_count(counted.scenario->emulator.config) == 2);
  // `local` entries are this machine's and need no host first.
  LoadResult mixed =
      load_scenario_text(platform, scenario_with("[{on: local}, {on: hostB}]"), "placed.yaml", {});
  REQUIRE(mixed.scenario);
  CHECK(kind->placement_hosts(mixed.scenario->emulator.config) ==
        std::vector<std::string>{"hostB"});
}

TEST_CASE("placed instances: a bad entry is a located error", "[emulator][placed]") {
  // An `on:` naming no host, with the closest host suggested, at its line and column.
  std::string errors = errors_of(scenario_with("[{on: hostAA}, {on: hostB}]"));
  CHECK(errors.find("placed.yaml:3:45: emulator.instances[0].on: no host named 'hostAA' to run "
                    "the instance on; did you mean 'hostA'?") != std::string::npos);
  // A mistyped key of an entry.
  errors = errors_of(scenario_with("[{on: hostA, bnd: 10.9.0.1}, {on: hostB}]"));
  CHECK(errors.find("emulator.instances[0].bnd: unknown key 'bnd'; did you mean 'bind'?") !=
        std::string::npos);
  // Neither a count nor a list of mappings.
  errors = errors_of(scenario_with("[hostA, hostB]"));
  CHECK(errors.find("emulator.instances[0]: expected a mapping, found 'hostA'") !=
        std::string::npos);
  errors = errors_of(scenario_with("[]"));
  CHECK(errors.find("emulator.instances: expected from 1 to 64 entries, found 0") !=
        std::string::npos);
  errors = errors_of(scenario_with("two"));
  CHECK(errors.find("emulator.instances: expected a whole number from 1 to 64, found 'two'") !=
        std::string::npos);
  // A host attached to an instance the list does not have.
  errors = errors_of(scenario_with("[{on: hostA}]"));
  CHECK(errors.find("the emulator has 1 instance, there is no instance 2") != std::string::npos);
}

TEST_CASE("placed instances: `up` refuses hosts it cannot log in to again, before starting",
          "[emulator][placed]") {
  const Platform platform = builtin_platform();
  LoadResult loaded = load_scenario_text(platform, scenario_with(kPlaced), "placed.yaml", {});
  REQUIRE(loaded.scenario);
  CleanupStack cleanup;
  // hostA runs commands on this machine (as a local or netns host does), not over SSH: status,
  // `run --attach` and down could not find its instance again.
  LocalHost host_a("hostA", "10.9.0.1");
  EmulatorContext context{.run_dir = std::filesystem::temp_directory_path() / "ernic-placed-up",
                          .run_token = "abcdef",
                          .cleanup = &cleanup,
                          .bring_up = true,
                          .host = [&](const std::string& name) -> Host* {
                            return name == "hostA" ? &host_a : nullptr;
                          }};
  EmulatorKind* kind = platform.emulator_kind("embedded");
  CHECK_THROWS_WITH(kind->start(loaded.scenario->emulator.config, context),
                    Catch::Contains("emulator instance 1 is placed on hostA, which is not "
                                    "reached over SSH"));
  CHECK(cleanup.size() == 0);
  CHECK_FALSE(std::filesystem::exists(context.run_dir));
}

TEST_CASE("placed instances: the JSON Schema takes a count or a list of entries",
          "[emulator][placed]") {
  nlohmann::json schema = scenario_json_schema(builtin_platform());
  std::string text = schema.dump();
  // One declaration: the entry's keys and their descriptions appear in the schema.
  CHECK(text.find("\"minItems\":1") != std::string::npos);
  CHECK(text.find("Host of the scenario that runs it") != std::string::npos);
  CHECK(text.find("\"maxItems\":64") != std::string::npos);
}

TEST_CASE("placed instances: the hosts they run on are created before them, the others after",
          "[emulator][placed][executor]") {
  testing::RunHarness harness(scenario_with(kPlaced));
  harness.run();
  auto events = harness.world.events();
  auto at = [&](const std::string& event) {
    return std::find(events.begin(), events.end(), event) - events.begin();
  };
  REQUIRE(at("start instance 1") < static_cast<long>(events.size()));
  CHECK(at("create ssh hostA") < at("start instance 1"));
  CHECK(at("create ssh hostB") < at("start instance 1"));
  CHECK(at("start instance 1") < at("create netns server"));
  // Without placement the instances still start first.
  testing::RunHarness counted(scenario_with("2"));
  counted.run();
  events = counted.world.events();
  CHECK(at("start instance 1") < at("create ssh hostA"));
}

TEST_CASE("placed instances: the dry run prints each remote instance's commands on its host",
          "[emulator][placed][dry-run]") {
  Interrupt::reset();
  const std::string text = dry_run_of(scenario_with(kPlaced));
  INFO(text);
  const std::string dir = "/tmp/ernic-<token>-hostB";
  // The host exists before its instance, whose token is a file and whose worker dials the
  // manager at the manager's bind address, not its own.
  CHECK(text.find("hostB (ssh, 10.1.2.2)") < text.find("on hostB: mkdir -p -m 0700 " + dir));
  CHECK(text.find("on hostB: upload the mesh token to " + dir + "/mesh.token (mode 0600)") !=
        std::string::npos);
  CHECK(text.find("on hostB: ernicctl --version, then ") != std::string::npos);
  CHECK(text.find("else this ernicctl is uploaded to " + dir + "/ernicctl (mode 0755)") !=
        std::string::npos);
  CHECK(text.find("on hostB: '<ernicctl on hostB>' emulator --backend "
                  "'tcp:worker:10.9.0.1:<manager-mesh-port>' --socket '" +
                  dir + "/ernic2.sock'") != std::string::npos);
  CHECK(text.find("--token-file '" + dir + "/mesh.token' --bind 10.1.2.2") != std::string::npos);
  CHECK(text.find("on hostA: '<ernicctl on hostA>' emulator --backend tcp:manager:listen:0") !=
        std::string::npos);
  CHECK(text.find("--bind 10.9.0.1") != std::string::npos);
  CHECK(text.find("--token ") == std::string::npos);
  CHECK(text.find("--log-file") == std::string::npos);
  // Each instance describes its verbs device in its own folder on its machine.
  CHECK(text.find("--verbs-sysfs '" + dir + "/ernic2-verbs-sysfs' --verbs-name ernic_2") !=
        std::string::npos);
  // perftest on hostB uses instance 2's device, with the provider beside hostB's ernicctl.
  CHECK(text.find("client on hostB: SYSFS_PATH='" + dir +
                  "/ernic2-verbs-sysfs' "
                  "RDMAV_DRIVERS='<lib/ernicctl beside ernicctl on hostB>/libernic' "
                  "LD_PRELOAD='<lib/ernicctl beside ernicctl on hostB>/libernic-cdev.so' "
                  "ib_write_lat -d ernic_2 -x 0 ") != std::string::npos);
  // The load generator on hostB, when chosen, attaches to instance 2's socket on hostB.
  std::string scenario = scenario_with(kPlaced);
  const std::string params = "params: {verb: write";
  scenario.replace(scenario.find(params), params.size(),
                   "params: {program: load-generator, verb: write");
  CHECK(
      dry_run_of(scenario).find("client on hostB: '<ernicctl on hostB>' perf write_lat --socket '" +
                                dir + "/ernic2.sock'") != std::string::npos);
}

TEST_CASE("embedded emulator: each instance describes its verbs device, which perftest uses",
          "[emulator][verbs][dry-run]") {
  Interrupt::reset();
  std::string scenario = scenario_with("2");
  for (const char* host : {"hostA", "hostB"}) {
    const std::string ssh =
        fmt::format("{{name: {}, provider: ssh, address: 10.1.2.{}, instance:", host,
                    host == std::string("hostA") ? 1 : 2);
    scenario.replace(scenario.find(ssh), ssh.size(),
                     fmt::format("{{name: {}, provider: embedded, instance:", host));
  }
  const std::string text = dry_run_of(scenario);
  INFO(text);
  // ernic_N in a folder of its own: an instance removes its folder when it exits.
  const std::regex instance(
      " --verbs-sysfs '?(/tmp/ernic-[^ ']*)/ernic([12])-verbs-sysfs'? "
      "--verbs-name ernic_([12])");
  std::smatch match;
  std::string dir;
  int described = 0;
  for (auto at = text.cbegin(); std::regex_search(at, text.cend(), match, instance);
       at = match.suffix().first) {
    CHECK(match[2] == match[3]);
    dir = match[1];
    ++described;
  }
  CHECK(described == 2);
  // Both sides of the point use their own instance's device, with the provider beside this
  // ernicctl.
  const std::string library = emu::verbs_library_dir();
  for (const auto& [side, id] :
       {std::pair{"server on hostA", "1"}, std::pair{"client on hostB", "2"}}) {
    CHECK_THAT(text, Catch::Contains(fmt::format(
                         "{}: SYSFS_PATH={} RDMAV_DRIVERS={} LD_PRELOAD={} ib_write_lat -d "
                         "ernic_{} -x 0 ",
                         side, shell_quote(fmt::format("{}/ernic{}-verbs-sysfs", dir, id)),
                         shell_quote(library + "/libernic"),
                         shell_quote(library + "/libernic-cdev.so"), id)));
  }
}

// Not placement, but the same scenario serves: the embedded emulator's `payloads` key reaches
// every instance's command line (local instances here, placed ones through the same settings).
TEST_CASE(
    "embedded emulator: payloads: inline, streams: socket and copies: thread reach every "
    "instance",
    "[emulator]") {
  const auto count = [](const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  const std::string inline_text = dry_run_of(scenario_with("2, payloads: inline"));
  INFO(inline_text);
  CHECK(count(inline_text, " emulator --backend ") == 2);
  CHECK(count(inline_text, "--mesh-payloads-inline") == 2);
  CHECK(count(dry_run_of(scenario_with("2")), "--mesh-payloads-inline") == 0);
  CHECK_THAT(errors_of(scenario_with("2, payloads: copied")),
             Catch::Contains("payloads") && Catch::Contains("by_reference"));
  // `streams: socket` and `copies: thread` the same way.
  CHECK(count(dry_run_of(scenario_with("2, streams: socket")), "--mesh-socket-streams") == 2);
  CHECK(count(dry_run_of(scenario_with("2")), "--mesh-socket-streams") == 0);
  CHECK_THAT(errors_of(scenario_with("2, streams: pipe")),
             Catch::Contains("streams") && Catch::Contains("ring"));
  CHECK(count(dry_run_of(scenario_with("2, copies: thread")), "--mesh-copy-thread") == 2);
  CHECK(count(dry_run_of(scenario_with("2")), "--mesh-copy-thread") == 0);
  CHECK_THAT(errors_of(scenario_with("2, copies: thread_pool")),
             Catch::Contains("copies") && Catch::Contains("thread"));
}

}  // namespace
}  // namespace ernic
