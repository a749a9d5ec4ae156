#include "scenario/scenario_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "benchmarks/registry.h"
#include "builtin_platform.h"
#include "emulators/registry.h"
#include "hosts/registry.h"
#include "scenario/overrides.h"
#include "scenario/platform.h"
#include "scenario/scenario_json_schema.h"
#include "scenario/scenario_schema.h"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

const ernic::Platform& platform() {
  static const ernic::Platform builtin = ernic::builtin_platform();
  return builtin;
}

ernic::LoadResult load(const std::string& text, const std::vector<std::string>& sets = {}) {
  return ernic::load_scenario_text(platform(), text, "test.yaml", sets);
}

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
  auto result = load(text, sets);
  std::vector<std::string> errors;
  for (const auto& d : result.diagnostics) {
    errors.push_back(d.format());
  }
  return errors;
}

}  // namespace

TEST_CASE("a valid scenario loads with its settings") {
  auto result = load(kValid);
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
  auto result = load(
      kValid, {"benchmarks.tcp.repetitions=5", "benchmarks.0.timeout=1m", "runner=self-hosted"});
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

namespace {

// kValid without its optional `history:` section.
std::string without_history() {
  std::string text = kValid;
  return text.substr(0, text.find("history:"));
}

}  // namespace

TEST_CASE("--set creates an optional section the scenario leaves out") {
  // Every optional mapping the top level declares: history, emulator, provider settings.
  std::string minimal = without_history();
  int sections = 0;
  for (const auto& field : ernic::top_level_schema(platform()).fields) {
    if (field.kind != ernic::ValueKind::kObject || field.required) {
      continue;
    }
    INFO(field.name);
    REQUIRE_FALSE(YAML::Load(minimal)[field.name]);
    ++sections;
    YAML::Node root = YAML::Load(minimal);
    ernic::Diagnostics diagnostics;
    ernic::apply_overrides(root, {field.name + ".some_key=7", field.name + ".deeper.key=x"},
                           "test.yaml", diagnostics);
    CHECK(diagnostics.empty());
    CHECK(root[field.name]["some_key"].as<std::string>() == "7");
    CHECK(root[field.name]["deeper"]["key"].as<std::string>() == "x");
  }
  CHECK(sections >= 4);  // history, emulator, netns, libvirt

  // Through the loader, with values the sections take: the run uses them.
  auto loaded = load(
      minimal, {"history.path=/tmp/h.jsonl", "netns.subnet=10.9.0.0/24", "emulator.kind=none"});
  REQUIRE(loaded.diagnostics.empty());
  CHECK(loaded.scenario->history.path == "/tmp/h.jsonl");
  CHECK(loaded.scenario->history.enabled);
  CHECK(loaded.scenario->settings.object("netns").text("subnet", "") == "10.9.0.0/24");
  // A key the created section does not take is an error as it would be in the file.
  auto typo = errors_of(minimal, {"history.pth=/tmp/h.jsonl"});
  REQUIRE(typo.size() == 1);
  CHECK_THAT(typo[0], Contains("history.pth: unknown key 'pth'"));
}

TEST_CASE("--set into a key that is a single value names its line and column") {
  std::string text = without_history() + "history: off\n";
  CHECK(errors_of(text, {"history.path=/tmp/h.jsonl"}) ==
        std::vector<std::string>{"test.yaml:16:10: history: --set history.path: 'history' is a "
                                 "single value, not a mapping with keys"});
  // Deeper, and inside a list item.
  CHECK(errors_of(kValid, {"history.path.file=x"}) ==
        std::vector<std::string>{"test.yaml:17:9: history.path: --set history.path.file: 'path' "
                                 "is a single value, not a mapping with keys"});
  CHECK(errors_of(kValid, {"benchmarks.tcp.tool.x=1"}) ==
        std::vector<std::string>{"test.yaml:10:11: benchmarks.tcp.tool: --set "
                                 "benchmarks.tcp.tool.x: 'tool' is a single value, not a mapping "
                                 "with keys"});
  // A value an earlier --set gave is not in the file: the error is the --set's own.
  CHECK(errors_of(kValid, {"runner=x", "runner.y=1"}) ==
        std::vector<std::string>{
            "--set: runner.y: 'runner' is a single value, not a mapping with keys"});
  CHECK(errors_of(kValid, {"history={path: [a, b], x: {y: 1}}", "history.x.y.z=1"}) ==
        std::vector<std::string>{"--set: history.x.y.z: 'y' is a single value, not a mapping "
                                 "with keys"});
}

namespace {

// The quickstart's shape, with `{instances}` and `{instance}` to fill in.
std::string with_instances(const std::string& instances, const std::string& instance) {
  return "name: demo\n"
         "emulator:\n"
         "  kind: embedded\n"
         "  instances: " +
         instances +
         "\n"
         "hosts:\n"
         "  - {name: a, provider: embedded, instance: 1}\n"
         "  - {name: b, provider: embedded, instance: " +
         instance +
         "}\n"
         "benchmarks: [{name: t, tool: perftest, server: a, client: b}]\n";
}

}  // namespace

TEST_CASE("integers out of range or not whole are located errors, never a failed conversion") {
  for (const char* bad : {"1e400", "99999999999999999999", "1.5", "010", "-1", "0x10", "65"}) {
    INFO(bad);
    std::vector<std::string> errors;
    REQUIRE_NOTHROW(errors = errors_of(with_instances(bad, "2")));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] ==
          fmt::format("test.yaml:4:14: emulator.instances: expected a whole number from 1 to 64, "
                      "found '{}'",
                      bad));
  }
  for (const char* bad : {"99999999999999999999", "1e400", "2.0"}) {
    INFO(bad);
    std::vector<std::string> errors;
    REQUIRE_NOTHROW(errors = errors_of(with_instances("2", bad)));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == fmt::format("test.yaml:7:45: hosts[1].instance: expected a whole number "
                                   "from 1 to 64, found '{}'",
                                   bad));
  }
  // In range, but more than the emulator starts: the cross-check, once.
  CHECK(errors_of(with_instances("2", "3")) ==
        std::vector<std::string>{"test.yaml:7:45: hosts[1].instance: the emulator has 2 "
                                 "instances, there is no instance 3"});
  auto loaded = load(with_instances("2", "2"));
  REQUIRE(loaded.diagnostics.empty());
  CHECK(loaded.scenario->emulator.kind == "embedded");
  // --set values go through the same check, and so do list indexes in the path.
  CHECK_THAT(errors_of(kValid, {"benchmarks.tcp.repetitions=1e400"})[0],
             Contains("benchmarks[0].repetitions: expected a whole number from 1 to 10000, "
                      "found '1e400'"));
  CHECK(errors_of(kValid, {"benchmarks.99999999999999999999.repetitions=2"}) ==
        std::vector<std::string>{"--set: benchmarks.99999999999999999999.repetitions: no list "
                                 "item '99999999999999999999' (give an index or an item's name)"});
}

TEST_CASE("control characters in a scenario are printed escaped in diagnostics") {
  std::string text =
      "name: demo\n"
      "hosts: [{name: a, provider: local, \"\\e[2J\\e]0;pwned\\a\": 1}]\n"
      "benchmarks: [{name: t, tool: iperf3, server: a, client: \"b\\rok\"}]\n";
  auto errors = errors_of(text);
  REQUIRE(errors.size() == 2);
  CHECK_THAT(errors[0], StartsWith("test.yaml:2:36: hosts[0].\\x1b[2J\\x1b]0;pwned\\x07: unknown "
                                   "key '\\x1b[2J\\x1b]0;pwned\\x07'"));
  CHECK(errors[1] == "test.yaml:3:57: benchmarks[0].client: no host named 'b\\rok'");
  for (const auto& error : errors) {
    CHECK(std::none_of(error.begin(), error.end(), [](unsigned char c) { return c < 0x20; }));
  }
}

TEST_CASE("control character escaping keeps UTF-8 text and escapes everything a terminal obeys") {
  using ernic::escape_control_characters;
  CHECK(escape_control_characters("plain: ok") == "plain: ok");
  CHECK(escape_control_characters("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80") ==
        "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80");
  CHECK(escape_control_characters("a\nb\tc\rd\x1b[0m\x7f") == "a\\nb\\tc\\rd\\x1b[0m\\x7f");
  CHECK(escape_control_characters(std::string("nul\0!", 5)) == "nul\\x00!");
  // C1 controls (U+009B is a one-character CSI), stray and truncated bytes, overlong forms.
  CHECK(escape_control_characters("\xc2\x9b"
                                  "31m") == "\\u009b31m");
  CHECK(escape_control_characters("\x9b"
                                  "31m \xc3") == "\\x9b31m \\xc3");
  CHECK(escape_control_characters("\xc0\x9b \xe0\x80\x9b") == "\\xc0\\x9b \\xe0\\x80\\x9b");
  ernic::Diagnostic located{.file = "dir\r/x.yaml", .line = 1, .column = 2, .path = "k\x1b"};
  located.message = "m\r";
  CHECK(located.format() == "dir\\r/x.yaml:1:2: k\\x1b: m\\r");
}

namespace {

// Unicode line breaks (U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR, U+0085 NEXT LINE)
// and other code points that print no glyph, as a mutated scenario may hold them: the raw
// UTF-8 and the escape a diagnostic shows instead.
struct NonPrinting {
  const char* raw;
  const char* escaped;
};
constexpr NonPrinting kNonPrinting[] = {
    {"\xe2\x80\xa8", "\\u2028"},
    {"\xe2\x80\xa9", "\\u2029"},
    {"\xc2\x85", "\\u0085"},
    {"\xe2\x80\x8b", "\\u200b"},  // zero-width space
    {"\xe2\x80\xae", "\\u202e"},  // right-to-left override
    {"\xef\xbb\xbf", "\\ufeff"},
    {"\xef\xbf\xbe", "\\ufffe"},
    {"\xf3\xa0\x80\x81", "\\U000e0001"},  // language tag
};

// Whether `text` holds a byte or UTF-8 sequence that ends a line for some reader.
bool breaks_a_line(const std::string& text) {
  return text.find_first_of("\n\r\v\f") != std::string::npos ||
         text.find("\xc2\x85") != std::string::npos ||
         text.find("\xe2\x80\xa8") != std::string::npos ||
         text.find("\xe2\x80\xa9") != std::string::npos;
}

}  // namespace

TEST_CASE("Unicode line breaks and invisible code points are escaped in diagnostics") {
  for (const auto& [raw, escaped] : kNonPrinting) {
    INFO(escaped);
    CHECK(ernic::escape_control_characters(std::string("a") + raw + "b") ==
          std::string("a") + escaped + "b");
    // In an unknown key and in a value a message echoes, each diagnostic stays one line.
    std::string text = fmt::format(
        "name: demo\n"
        "hosts: [{{name: a, provider: local, \"k{0}x\": 1}}]\n"
        "benchmarks: [{{name: t, tool: iperf3, server: a, client: \"b{0}c\"}}]\n",
        raw);
    auto errors = errors_of(text);
    REQUIRE(errors.size() == 2);
    CHECK_THAT(errors[0], StartsWith(fmt::format("test.yaml:2:36: hosts[0].k{0}x: unknown key "
                                                 "'k{0}x'",
                                                 escaped)));
    CHECK_THAT(errors[1], StartsWith("test.yaml:3:"));
    CHECK_THAT(errors[1],
               EndsWith(fmt::format("benchmarks[0].client: no host named 'b{}c'", escaped)));
    for (const auto& error : errors) {
      CHECK_FALSE(breaks_a_line(error));
    }
  }
  // Printable text beyond ASCII stays as it is, next to an escaped separator.
  CHECK(ernic::escape_control_characters("\xc2\xa0\xe2\x80\x94\xe2\x80\xa8\xe2\x80\xb0") ==
        "\xc2\xa0\xe2\x80\x94\\u2028\xe2\x80\xb0");
}

TEST_CASE("runner defaults to auto; a class rocm-ernic does not chart is a warning, not an error") {
  std::string base =
      "name: demo\nhosts: [{name: a, provider: local}]\n"
      "benchmarks: [{name: t, tool: iperf3, server: a, client: a}]\n";
  auto plain = load(base);
  REQUIRE(plain.scenario);
  CHECK(plain.scenario->runner == "auto");
  CHECK(plain.warnings.empty());
  for (const char* charted : {"auto", "github-hosted", "self-hosted"}) {
    auto loaded = load(base + "runner: " + charted + "\n");
    REQUIRE(loaded.scenario);
    CHECK(loaded.scenario->runner == charted);
    CHECK(loaded.warnings.empty());
  }
  auto local = load(base + "runner: local\n");
  REQUIRE(local.scenario);  // still valid: the run goes ahead
  CHECK(local.scenario->runner == "local");
  CHECK(local.diagnostics.empty());
  REQUIRE(local.warnings.size() == 1);
  CHECK(local.warnings[0].severity == ernic::Severity::kWarning);
  CHECK(local.warnings[0].format() ==
        "test.yaml:4:9: warning: runner: runner class 'local' is allowed, but rocm-ernic's "
        "publisher charts only github-hosted and self-hosted (auto picks one of them)");
  auto typo = load(base, {"runner=self-hostd"});
  REQUIRE(typo.warnings.size() == 1);
  CHECK_THAT(typo.warnings[0].format(), EndsWith("; did you mean 'self-hosted'?"));

  std::ostringstream printed;
  ernic::print_load_diagnostics(local, "test.yaml", printed);
  CHECK(printed.str() == local.warnings[0].format() + "\n");
  std::ostringstream failed;
  ernic::print_load_diagnostics(load("name: demo\n"), "test.yaml", failed);
  CHECK_THAT(failed.str(), EndsWith("test.yaml: 2 errors; nothing was started\n"));
}

TEST_CASE("the loader and the JSON Schema know only the platform's components") {
  ernic::Platform small{.providers = {&ernic::local_provider()},
                        .emulator_kinds = {&ernic::no_emulator()},
                        .setup_steps = {},
                        .tools = {&ernic::iperf3_benchmark()}};
  auto errors = ernic::load_scenario_text(small, R"(name: demo
hosts: [{name: a, provider: netns}]
benchmarks: [{name: t, tool: perftest, server: a, client: a}]
)",
                                          "test.yaml", {});
  REQUIRE(errors.diagnostics.size() == 2);
  CHECK(errors.diagnostics[0].format() ==
        "test.yaml:2:29: hosts[0].provider: expected one of local, found 'netns'");
  CHECK(errors.diagnostics[1].format() ==
        "test.yaml:3:30: benchmarks[0].tool: expected one of iperf3, found 'perftest'");

  nlohmann::json schema = ernic::scenario_json_schema(small);
  const auto& hosts = schema["properties"]["hosts"]["items"]["oneOf"];
  REQUIRE(hosts.size() == 1);
  CHECK(hosts[0]["properties"]["provider"]["const"] == "local");
  CHECK(schema["properties"]["benchmarks"]["items"]["oneOf"].size() == 1);
  CHECK(schema["properties"]["setup"]["items"]["oneOf"].empty());
  CHECK(schema["properties"]["runner"]["default"] == "auto");
  CHECK_FALSE(schema["properties"].contains("netns"));  // the settings of a provider not there
  CHECK(ernic::scenario_json_schema(platform())["properties"].contains("netns"));
}

TEST_CASE("tenants: a count over host lists and a list of pairs are checked") {
  SECTION("a count needs host lists long enough, and two hosts per tenant") {
    auto errors = errors_of(R"(name: demo
hosts: [{name: a, provider: local}, {name: b, provider: local}, {name: c, provider: local}]
benchmarks:
  - {name: t, tool: iperf3, tenants: 3, server: [a, b, c], client: [b, a]}
  - {name: u, tool: iperf3, tenants: 2, server: a, client: [a, c]}
  - {name: v, tool: iperf3, tenants: 0, server: a, client: b}
)");
    REQUIRE(errors.size() == 3);
    CHECK_THAT(errors[0], Contains("benchmarks[0].client: tenants: 3 takes the i-th client of "
                                   "this list, which names 2 hosts"));
    CHECK_THAT(errors[1], Contains("benchmarks[1].client: tenant t1 has a as its server and its "
                                   "client"));
    CHECK_THAT(errors[2], Contains("benchmarks[2].tenants: expected"));
  }
  SECTION("pairs: hosts exist (with a suggestion), and are not also given outside") {
    auto errors = errors_of(R"(name: demo
hosts: [{name: alpha, provider: local}, {name: beta, provider: local}]
benchmarks:
  - name: t
    tool: iperf3
    server: alpha
    tenants:
      - {server: alpha, client: betta}
      - {server: beta, client: beta}
)");
    REQUIRE(errors.size() == 3);
    CHECK_THAT(errors[0], Contains("benchmarks[0].server: 'server' and a list of tenants"));
    CHECK_THAT(errors[1], Contains("benchmarks[0].tenants[0].client: no host named 'betta'; did "
                                   "you mean 'beta'?"));
    CHECK_THAT(errors[2], Contains("benchmarks[0].tenants[1]: tenant 2 has beta as its server and "
                                   "its client"));
  }
  SECTION("a host list without a count, and a tenant key misspelt") {
    auto errors = errors_of(R"(name: demo
hosts: [{name: a, provider: local}, {name: b, provider: local}]
benchmarks:
  - {name: t, tool: iperf3, server: [a, b], client: b}
  - {name: u, tool: iperf3, tenants: [{server: a, clinet: b}]}
)");
    REQUIRE(errors.size() == 3);
    CHECK_THAT(errors[0], Contains("benchmarks[0].server: a list of server hosts needs "
                                   "`tenants: N`"));
    CHECK_THAT(errors[1], Contains("benchmarks[1].tenants[0]"));
    CHECK_THAT(errors[2], Contains("did you mean 'client'?"));
  }
}

TEST_CASE("tenants: the entry's tenants, named t1, t2, ... unless named") {
  auto loaded = load(R"(name: demo
hosts: [{name: a, provider: local}, {name: b, provider: local}, {name: c, provider: local}]
benchmarks:
  - {name: t, tool: iperf3, tenants: 2, server: a, client: [b, c]}
  - {name: u, tool: iperf3, tenants: [{name: bulk, server: b, client: c}, {server: c, client: a}]}
  - {name: v, tool: iperf3, server: a, client: b}
)");
  REQUIRE(loaded.diagnostics.empty());
  const auto& benchmarks = loaded.scenario->benchmarks;
  REQUIRE(benchmarks[0].tenants.size() == 2);
  CHECK(benchmarks[0].tenants[1].name == "t2");
  CHECK(benchmarks[0].tenants[1].server == "a");
  CHECK(benchmarks[0].tenants[1].client == "c");
  CHECK(benchmarks[1].tenants[0].name == "bulk");
  CHECK(benchmarks[1].server == "b");
  CHECK(benchmarks[1].tenants[1].name == "t2");
  CHECK(benchmarks[1].multi_tenant());
  CHECK_FALSE(benchmarks[2].multi_tenant());
  CHECK(benchmarks[2].tenants.size() == 1);
}

TEST_CASE("a key that needs another names both when the other is missing") {
  const char* sustained_without_duration = R"(
version: 1
name: demo
emulator: {kind: embedded, instances: 2}
hosts:
  - {name: a, provider: embedded, instance: 1}
  - {name: b, provider: embedded, instance: 2}
benchmarks:
  - name: long
    tool: perftest
    server: a
    client: b
    params: {verb: write, mode: bw, size: 64KiB, sustained: true}
)";
  auto errors = errors_of(sustained_without_duration);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("'sustained' needs 'duration' in the same mapping"));
  CHECK_THAT(errors[0], Catch::Contains("test.yaml:13:"));
  std::string with_duration = sustained_without_duration;
  with_duration.replace(with_duration.find("sustained: true"), 15, "sustained: true, duration: 6s");
  CHECK(errors_of(with_duration).empty());
  std::string switched_off = sustained_without_duration;
  switched_off.replace(switched_off.find("sustained: true"), 15, "sustained: false");
  CHECK(errors_of(switched_off).empty());
}
