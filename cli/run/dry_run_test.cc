// The dry run is the run with one interface swapped: for the example scenarios, on a platform of
// fakes, the commands a real run issues to its hosts are, in order, the ones the dry run prints.
#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/interrupt.h"
#include "perf/perftest_format.h"
#include "run/executor.h"
#include "run/testing/fake_platform.h"
#include "samples.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

using testing::FakePlatform;
using testing::Scripted;
using testing::World;
namespace perf = emu::perf;

// What perftest or the embedded load generator (which prints perftest's format) would print for
// the point `spec` runs: a perftest table for the verb, mode and size on its command line.
std::string perftest_output(const std::vector<std::string>& argv) {
  static const std::regex kTest("(?:ib_)?(send|write|read)_(bw|lat)");
  perf::Verb verb = perf::Verb::kSend;
  perf::Mode mode = perf::Mode::kBandwidth;
  std::uint64_t size = 65536;
  bool gbits = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::smatch match;
    if (std::regex_match(argv[i], match, kTest)) {
      verb = match[1] == "send"    ? perf::Verb::kSend
             : match[1] == "write" ? perf::Verb::kWrite
                                   : perf::Verb::kRead;
      mode = match[2] == "bw" ? perf::Mode::kBandwidth : perf::Mode::kLatency;
    } else if (argv[i] == "-s" && i + 1 < argv.size()) {
      size = std::stoull(argv[i + 1]);
    }
    gbits = gbits || argv[i] == "--report_gbits";
  }
  std::string out = perf::banner(verb, mode, false, 1, 128);
  if (mode == perf::Mode::kBandwidth) {
    out += perf::bw_header(gbits) + perf::bw_row({.bytes = size,
                                                  .iterations = 100,
                                                  .peak_bytes_per_second = 2e9,
                                                  .average_bytes_per_second = 1e9,
                                                  .message_rate = 1e9 / static_cast<double>(size)},
                                                 gbits);
  } else {
    out += perf::lat_header() + perf::lat_row(perf::summarize_latency(size, {10, 11, 12, 13}));
  }
  return out + perf::dashes();
}

Scripted answer(const std::string&, const CommandSpec& spec) {
  Scripted scripted;
  scripted.result.exit_code = 0;
  const std::string line = spec.display();
  if (spec.argv[0] == "iperf3" && spec.argv[1] == "-c") {
    scripted.result.out = ernic::testing::read_sample("iperf3_netns.client.json");
  } else if ((line.find(" perf ") != std::string::npos || spec.argv[0].starts_with("ib_")) &&
             line.find(" -p ") != std::string::npos && line.find("addr-") != std::string::npos) {
    scripted.result.out = perftest_output(spec.argv);  // a client names its server
  }
  return scripted;
}

// Quotes dropped (the dry run quotes words holding placeholders) and the run's token replaced by
// the dry run's placeholder for it.
std::string normalized(std::string line, const std::string& token) {
  line.erase(std::remove(line.begin(), line.end(), '\''), line.end());
  for (auto at = line.find(token); !token.empty() && at != std::string::npos;
       at = line.find(token)) {
    line.replace(at, token.size(), "<token>");
  }
  return line;
}

struct Issued {
  std::vector<std::string> commands;  // "HOST: COMMAND", in order
  std::size_t points = 0;
  std::vector<std::string> failed;  // "ID: REASON" of every point that did not pass
};

const Plan& plan_of(const std::string& name, FakePlatform& fakes, std::optional<Scenario>& kept,
                    Plan& plan) {
  auto file = std::filesystem::path(ERNIC_SOURCE_DIR) / "scenarios" / name;
  LoadResult loaded = load_scenario(fakes.platform, file, {"history.enabled=false"});
  for (const auto& d : loaded.diagnostics) {
    FAIL(d.format());
  }
  kept = std::move(loaded.scenario);
  plan = make_plan(*kept, fakes.platform);
  return plan;
}

Issued run_for_real(const std::string& name, const std::filesystem::path& runs) {
  Interrupt::reset();
  World world;
  world.script = answer;
  FakePlatform fakes(world);
  std::optional<Scenario> scenario;
  Plan plan;
  plan_of(name, fakes, scenario, plan);
  auto status = make_status(/*quiet=*/true);
  RealCommandRunner runner;
  RunOptions options;
  options.runs_dir = runs;
  RunResult result = Executor(plan, fakes.platform, runner, options, *status).run();
  Issued issued;
  for (const auto& event : world.events_starting("run on ")) {
    issued.commands.push_back(normalized(event.substr(7), result.run_token));
  }
  issued.points = result.points.size();
  for (const auto& point : result.points) {
    if (point.status != PointStatus::kPassed) {
      issued.failed.push_back(point.point->id + ": " + point.reason);
    }
  }
  return issued;
}

std::string dry_run_text(const std::string& name) {
  Interrupt::reset();
  World world;
  FakePlatform fakes(world);
  std::optional<Scenario> scenario;
  Plan plan;
  plan_of(name, fakes, scenario, plan);
  std::FILE* out = std::tmpfile();
  DryRunCommandRunner runner(out);
  auto status = make_status(/*quiet=*/true);
  Executor(plan, fakes.platform, runner, RunOptions{}, *status).run();
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) {
    text += static_cast<char>(c);
  }
  std::fclose(out);
  // The dry run started and ran nothing.
  CHECK(world.events_starting("run on ").empty());
  CHECK(world.events_starting("start instance").empty());
  return text;
}

std::vector<std::string> print_dry_run(const std::string& name) {
  std::string text = dry_run_text(name);
  // "    server on HOST: COMMAND" (or "    client t2 on HOST: ...") -> "HOST: COMMAND"
  static const std::regex kCommand("^    [a-z0-9 _-]+ on ([^:]+): (.*)$");
  std::vector<std::string> printed;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, kCommand)) {
      printed.push_back(normalized(match[1].str() + ": " + match[2].str(), ""));
    }
  }
  return printed;
}

TEST_CASE("dry run: prints exactly the commands the run issues, in the same order",
          "[executor][dry-run]") {
  auto runs = std::filesystem::temp_directory_path() / fmt::format("ernic-dry-test-{}", getpid());
  for (const std::string name : {"quickstart.yaml", "netns-iperf3.yaml", "multi-tenant.yaml"}) {
    INFO(name);
    Issued issued = run_for_real(name, runs);
    std::vector<std::string> printed = print_dry_run(name);
    // Every point passed on the fakes, so every repetition ran: nothing was cut short.
    CHECK(issued.failed == std::vector<std::string>{});
    CHECK(issued.commands.size() > 2 * issued.points);
    REQUIRE(printed.size() == issued.commands.size());
    for (std::size_t i = 0; i < printed.size(); ++i) {
      INFO("command " << i);
      CHECK(printed[i] == issued.commands[i]);
    }
  }
  std::filesystem::remove_all(runs);
  Interrupt::reset();
}

TEST_CASE("dry run: perftest on embedded hosts runs under the instance's verbs environment",
          "[executor][dry-run][verbs]") {
  std::vector<std::string> printed = print_dry_run("quickstart.yaml");
  // The first bw point: Debian's perftest on each side's instance device, under the environment
  // that points libibverbs at that instance (the fake emulator's facts).
  const std::string server =
      "guest1: SYSFS_PATH=/tmp/fake-<token>/ernic1-verbs-sysfs "
      "RDMAV_DRIVERS=/opt/lib/ernicctl/libernic LD_PRELOAD=/opt/lib/ernicctl/libernic-cdev.so "
      "ib_send_bw -d ernic_1 -x 0 -s 4096 -n 128 -t 64 --report_gbits -p ";
  const std::string client =
      "guest2: SYSFS_PATH=/tmp/fake-<token>/ernic2-verbs-sysfs "
      "RDMAV_DRIVERS=/opt/lib/ernicctl/libernic LD_PRELOAD=/opt/lib/ernicctl/libernic-cdev.so "
      "ib_send_bw -d ernic_2 -x 0 -s 4096 -n 128 -t 64 --report_gbits -p ";
  auto first_with = [&](const std::string& prefix) {
    return std::find_if(printed.begin(), printed.end(),
                        [&](const std::string& line) { return line.starts_with(prefix); });
  };
  CHECK(first_with(server) != printed.end());
  CHECK(first_with(client) != printed.end());
  CHECK(first_with(server) < first_with(client));
  // The sustained point asks for the load generator and its per-second rows.
  auto sustained = first_with("guest2: /opt/ernicctl perf write_bw --socket ");
  REQUIRE(sustained != printed.end());
  CHECK_THAT(*sustained, Catch::Contains("-D 6") && Catch::Contains("--report-per-second"));
}

TEST_CASE("dry run: tenants and concurrent groups say what starts together",
          "[executor][dry-run][tenants]") {
  std::string text = dry_run_text("multi-tenant.yaml");
  // Every tenant's server, then the clients released together.
  CHECK_THAT(text, Catch::Contains("    server t4 on s4: "));
  CHECK_THAT(text, Catch::Contains("    client t1 on c1: "));
  CHECK(std::regex_search(text, std::regex("\n    every server ready; starts together: "
                                           "bw4\\[verb=write,[^ ]*size=64KiB[^ ]*\\] "
                                           "\\(t1 c1, t2 c2, t3 c3, t4 c4\\)\n")));
  CHECK(std::regex_search(text, std::regex("\n    every server ready; group 1 "
                                           "\\(latency-beside-bulk\\): starts together: "
                                           "bulk3[^ ]* \\(t1 c1, t2 c2, t3 c3\\), "
                                           "lat_loaded[^ ]* \\(c4\\)\n")));
  // The solo baseline starts alone.
  CHECK_THAT(text, Catch::Contains("lat_solo"));
  CHECK_FALSE(std::regex_search(text, std::regex("lat_solo[^ ]* \\(c4\\)")));
}

}  // namespace
}  // namespace ernic
