#include "scenario/scenario_loader.h"

#include <catch2/catch.hpp>

using Catch::Matchers::Contains;

namespace {

const char* kValid = R"(
version: 1
name: demo
runner: github-hosted
hosts:
  - {name: a, provider: netns}
  - {name: b, provider: netns}
benchmarks:
  - name: tcp
    tool: iperf3
    server: a
    client: b
    repetitions: 3
    timeout: 20s
    params: {protocol: [tcp, udp], duration: 1s}
history:
  path: out/history.jsonl
  tracked_sizes: [4KiB, 1MiB]
)";

std::vector<std::string> errors_of(const std::string& text,
                                   const std::vector<std::string>& sets = {}) {
  auto result = ernic::load_scenario_text(text, "test.yaml", sets);
  std::vector<std::string> errors;
  for (const auto& d : result.diagnostics) {
    errors.push_back(d.format());
  }
  return errors;
}

}  // namespace

TEST_CASE("a valid scenario loads with its settings") {
  auto result = ernic::load_scenario_text(kValid, "test.yaml", {});
  REQUIRE(result.diagnostics.empty());
  const auto& s = *result.scenario;
  CHECK(s.name == "demo");
  CHECK(s.runner == "github-hosted");
  REQUIRE(s.hosts.size() == 2);
  CHECK(s.benchmarks[0].repetitions == 3);
  CHECK(s.benchmarks[0].timeout == std::chrono::seconds(20));
  CHECK(s.history.path == "out/history.jsonl");
  CHECK(s.history.tracked_sizes == std::vector<std::uint64_t>{4096, 1048576});
  CHECK(s.sha256.size() == 64);
}

TEST_CASE("malformed YAML names the line and column") {
  auto errors = errors_of("name: x\nhosts: [a, b\n");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Contains("test.yaml:") && Contains("malformed YAML"));
}

TEST_CASE("every error is reported at once with location, path, expectation and finding") {
  std::string text = R"(name: demo
hosts:
  - {name: a, provder: netns}
  - {name: b, provider: netnz}
benchmarks:
  - name: tcp
    tool: iperf3
    server: a
    client: c
    repetitons: 2
    timeout: ten
    params: {protocol: [tcp, sctp], duration: 1s}
)";
  auto errors = errors_of(text);
  std::vector<std::string> expected = {
      // Provider lists grow as providers are added: checked up to the first two.
      "test.yaml:3:5: hosts[0].provider: missing required key 'provider' (one of local, netns",
      "test.yaml:3:15: hosts[0].provder: unknown key 'provder'; did you mean 'provider'?",
      "test.yaml:4:25: hosts[1].provider: expected one of local, netns,",
      "test.yaml:9:13: benchmarks[0].client: no host named 'c'",
      "test.yaml:10:5: benchmarks[0].repetitons: unknown key 'repetitons'; did you mean "
      "'repetitions'?",
      "test.yaml:11:14: benchmarks[0].timeout: expected a duration such as 10s, 500ms or 1m30s, "
      "found 'ten'",
      "test.yaml:12:30: benchmarks[0].params.protocol[1]: expected one of tcp, udp, found 'sctp'",
  };
  REQUIRE(errors.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK_THAT(errors[i], Catch::Matchers::StartsWith(expected[i]));
  }
  CHECK_THAT(errors[2], Contains("found 'netnz'; did you mean 'netns'?"));
}

TEST_CASE("sizes, ranges and bandwidths are checked") {
  std::string text = R"(name: demo
hosts: [{name: a, provider: local}]
benchmarks:
  - {name: t, tool: iperf3, server: a, client: a, params: {bitrate: fast, length: 4 parsecs}}
history: {tracked_sizes: [4KiB, lots]}
)";
  auto errors = errors_of(text);
  REQUIRE(errors.size() == 3);
  CHECK_THAT(errors[0], Contains("benchmarks[0].params.bitrate: expected a bit rate"));
  CHECK_THAT(errors[1], Contains("benchmarks[0].params.length: expected a size such as 4096, 4KiB "
                                 "or 1MiB, found '4 parsecs'"));
  CHECK_THAT(errors[2], Contains("history.tracked_sizes[1]: expected a size"));
}

TEST_CASE("structural mistakes are named") {
  CHECK(errors_of("- just\n- a list\n") ==
        std::vector<std::string>{
            "test.yaml:1:1: expected a mapping with name, hosts and benchmarks at the top level"});
  auto missing = errors_of("name: demo\n");
  REQUIRE(missing.size() == 2);
  CHECK_THAT(missing[0], Contains("missing required key 'hosts'"));
  CHECK_THAT(missing[1], Contains("missing required key 'benchmarks'"));
  auto twice = errors_of(R"(name: demo
hosts: [{name: a, provider: local}, {name: a, provider: local}]
benchmarks: [{name: t, tool: iperf3, client: a}]
)");
  REQUIRE(twice.size() == 2);
  CHECK_THAT(twice[0], Contains("host 'a' is defined twice"));
  CHECK_THAT(twice[1],
             Contains("missing required key 'server': iperf3 runs a server and a client"));
  CHECK_THAT(errors_of("name: 'bad name/x'\nhosts: [{name: a, provider: local}]\nbenchmarks: "
                       "[{name: t, tool: iperf3, server: a, client: a}]\n")[0],
             Contains("it names the run directory"));
}

TEST_CASE("netns addressing is checked against the subnet") {
  auto errors = errors_of(R"(name: demo
netns: {subnet: 10.9.0.0/30, link: veth}
hosts:
  - {name: a, provider: netns}
  - {name: b, provider: netns, address: 10.8.0.2}
  - {name: c, provider: netns}
benchmarks: [{name: t, tool: iperf3, server: a, client: b}]
)");
  REQUIRE(errors.size() == 3);
  CHECK_THAT(errors[0], Contains("subnet 10.9.0.0/30 has room for 2 hosts, the scenario has 3"));
  CHECK_THAT(errors[1], Contains("a veth pair joins exactly two hosts"));
  CHECK_THAT(errors[2], Contains("10.8.0.2 is outside the netns subnet"));
}

TEST_CASE("--set overrides keys by path, list items by index or name") {
  auto result = ernic::load_scenario_text(
      kValid, "test.yaml",
      {"benchmarks.tcp.repetitions=5", "benchmarks.0.timeout=1m", "runner=self-hosted"});
  REQUIRE(result.diagnostics.empty());
  CHECK(result.scenario->benchmarks[0].repetitions == 5);
  CHECK(result.scenario->benchmarks[0].timeout == std::chrono::minutes(1));
  CHECK(result.scenario->runner == "self-hosted");

  CHECK(errors_of(kValid, {"benchmarks.nope.repetitions=5"}) ==
        std::vector<std::string>{"--set: benchmarks.nope.repetitions: no list item 'nope' (give an "
                                 "index or an item's name)"});
  CHECK(errors_of(kValid, {"nonsense"}) ==
        std::vector<std::string>{"--set: nonsense: expected key.path=value"});
  // An override is validated like the file itself.
  auto bad = errors_of(kValid, {"benchmarks.tcp.repetitions=many"});
  REQUIRE(bad.size() == 1);
  CHECK_THAT(
      bad[0],
      Contains("benchmarks[0].repetitions: expected a whole number from 1 to 10000, found 'many'"));
}
