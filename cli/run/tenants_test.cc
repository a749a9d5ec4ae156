// Benchmark entries with several tenants, run by the real executor on a platform of fakes: every
// server observed ready before any client starts, each tenant with its own port, log and sample,
// a failing tenant failing only its own sample, and Jain's index over the tenants.
#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "base/interrupt.h"
#include "run/executor.h"
#include "run/fairness.h"
#include "run/record.h"
#include "run/testing/fake_platform.h"
#include "run/testing/perf_tables.h"
#include "run/testing/run_harness.h"
#include "samples.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

using testing::FakePlatform;
using testing::Scripted;
using testing::World;

// Three iperf3 tenants over six fake netns hosts, `repetitions` each.
std::string three_tenants(int repetitions) {
  return fmt::format(R"(version: 1
name: tenants
hosts:
  - {{name: a1, provider: netns}}
  - {{name: b1, provider: netns}}
  - {{name: a2, provider: netns}}
  - {{name: b2, provider: netns}}
  - {{name: a3, provider: netns}}
  - {{name: b3, provider: netns}}
benchmarks:
  - name: tcp
    tool: iperf3
    tenants: 3
    server: [a1, a2, a3]
    client: [b1, b2, b3]
    repetitions: {}
    params: {{duration: 1s}}
    timeout: 2s
history: {{enabled: false}}
)",
                     repetitions);
}

bool is_iperf3_client(const CommandSpec& spec) {
  return spec.argv[0] == "iperf3" && spec.argv[1] == "-c";
}

// The shared harness, with servers that listen on their fourth look.
struct Harness : testing::RunHarness {
  explicit Harness(const std::string& text) : RunHarness(text) {
    auto base = world.script;
    world.script = [base](const std::string& host, const CommandSpec& spec) {
      Scripted scripted = base(host, spec);
      scripted.polls_to_ready = 3;
      return scripted;
    };
  }
};

std::size_t first_index(const std::vector<std::string>& events, const std::string& prefix) {
  auto it = std::find_if(events.begin(), events.end(),
                         [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  return static_cast<std::size_t>(it - events.begin());
}

TEST_CASE("tenants: every server is observed ready before any client starts", "[tenants]") {
  Harness h(three_tenants(2));
  RunResult result = h.run();
  INFO(result.fatal_error);
  REQUIRE(result.status == RunStatus::kPassed);
  auto events = h.world.events();
  // Per repetition: three servers, each seen listening, then the three clients.
  std::vector<std::string> order;
  static const std::regex kStep("^(run on (a|b)[123]: iperf3 -(s|c)|listening on a[123]).*");
  for (const auto& event : events) {
    std::smatch match;
    if (std::regex_match(event, match, kStep) && event.find("--version") == std::string::npos) {
      order.push_back(event.rfind("listening", 0) == 0 ? "ready"
                      : match[3] == "s"                ? "server"
                                                       : "client");
    }
  }
  const std::vector<std::string> one_repetition = {"server", "server", "server", "ready", "ready",
                                                   "ready",  "client", "client", "client"};
  std::vector<std::string> two = one_repetition;
  two.insert(two.end(), one_repetition.begin(), one_repetition.end());
  CHECK(order == two);
  CHECK(first_index(events, "listening on a3") < first_index(events, "run on b1: iperf3 -c"));
}

TEST_CASE("tenants: ports, logs and samples are kept apart", "[tenants]") {
  Harness h(three_tenants(2));
  REQUIRE(h.plan.points.size() == 1);
  const PlannedPoint& point = h.plan.points[0];
  REQUIRE(point.ports.size() == 3);
  CHECK(point.ports[0] != point.ports[1]);
  CHECK(point.ports[1] != point.ports[2]);
  RunResult result = h.run();
  REQUIRE(result.status == RunStatus::kPassed);
  const PointResult& tcp = result.points[0];
  // Each client goes to its own server, on its own port.
  for (int t = 0; t < 3; ++t) {
    auto clients = h.world.events_starting(fmt::format("run on b{}: iperf3 -c", t + 1));
    REQUIRE(clients.size() == 2);
    CHECK_THAT(clients[0], Catch::Contains(fmt::format("addr-a{}", t + 1)));
    CHECK_THAT(clients[0], Catch::Contains(fmt::format("-p {}", point.ports[t])));
  }
  // One log per repetition and tenant.
  REQUIRE(tcp.logs.size() == 6);
  CHECK_THAT(tcp.logs[0].filename().string(), Catch::EndsWith("-r1-t1.log"));
  CHECK_THAT(tcp.logs[5].filename().string(), Catch::EndsWith("-r2-t3.log"));
  for (const auto& log : tcp.logs) {
    CHECK(std::filesystem::exists(log));
  }
  // One sample per repetition and tenant, the first repetition's all cold.
  REQUIRE(tcp.samples.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(tcp.samples[i].repetition == static_cast<int>(i / 3) + 1);
    CHECK(tcp.samples[i].tenant == static_cast<int>(i % 3) + 1);
    CHECK(tcp.samples[i].tenant_name == fmt::format("t{}", i % 3 + 1));
    CHECK(tcp.samples[i].warm == (i >= 3));
    CHECK(tcp.samples[i].failure.empty());
    CHECK(tcp.samples[i].metrics.count("bandwidth_GBs") == 1);
  }
  // Equal tenants: Jain's index 1, each a third.
  auto fairness = point_fairness(tcp);
  REQUIRE(fairness.has_value());
  CHECK(fairness->tenants == 3);
  CHECK(fairness->repetitions.size() == 2);
  CHECK(fairness->jain.median == Approx(1.0));
  CHECK(fairness->min_share == Approx(1.0 / 3));
  CHECK(fairness->max_share == Approx(1.0 / 3));
}

TEST_CASE("tenants: a failing tenant fails its own sample; the others are recorded", "[tenants]") {
  Harness h(three_tenants(1));
  auto base = h.world.script;
  h.world.script = [base](const std::string& host, const CommandSpec& spec) {
    Scripted scripted = base(host, spec);
    if (host == "b2" && is_iperf3_client(spec)) {
      scripted.result.out = "not json at all";
    }
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kFailed);
  const PointResult& tcp = result.points[0];
  CHECK(tcp.status == PointStatus::kFailed);
  CHECK_THAT(tcp.reason, Catch::StartsWith("tenant t2: "));
  CHECK_THAT(tcp.reason, Catch::Contains("_-t2.log)"));
  REQUIRE(tcp.samples.size() == 3);
  CHECK(tcp.samples[0].failure.empty());
  CHECK(tcp.samples[0].metrics.count("bandwidth_GBs") == 1);
  CHECK_FALSE(tcp.samples[1].failure.empty());
  CHECK(tcp.samples[1].metrics.empty());
  CHECK(tcp.samples[2].failure.empty());
  CHECK(tcp.samples[2].metrics.count("bandwidth_GBs") == 1);
  // A repetition with a failed tenant says nothing about fairness.
  CHECK_FALSE(point_fairness(tcp).has_value());
  // The record lists every tenant's sample, the failed one with its reason.
  HistoryRecord record = build_history_record(*h.scenario, result);
  const PointRecord& recorded = record.ernicctl->points[0];
  REQUIRE(recorded.samples.size() == 3);
  CHECK(recorded.samples[1].tenant == 2);
  CHECK(recorded.samples[1].tenant_name == "t2");
  REQUIRE(recorded.samples[1].failure.has_value());
  CHECK_FALSE(recorded.samples[0].failure.has_value());
}

TEST_CASE("tenants: a server that never becomes ready fails only its tenant", "[tenants]") {
  Harness h(three_tenants(1));
  auto base = h.world.script;
  h.world.script = [base](const std::string& host, const CommandSpec& spec) {
    Scripted scripted = base(host, spec);
    if (host == "a3" && spec.argv[1] == "-s") {
      scripted.exits_early = true;
      scripted.result.exit_code = 1;
      scripted.result.err = "iperf3: error - unable to start listener";
    }
    return scripted;
  };
  RunResult result = h.run();
  const PointResult& tcp = result.points[0];
  CHECK(tcp.status == PointStatus::kFailed);
  CHECK_THAT(tcp.reason, Catch::StartsWith("tenant t3: server exited before it was ready"));
  // Its client never started; the other two ran and passed.
  CHECK(h.world.events_starting("run on b3: iperf3 -c").empty());
  CHECK(h.world.events_starting("run on b1: iperf3 -c").size() == 1);
  REQUIRE(tcp.samples.size() == 3);
  CHECK(tcp.samples[0].metrics.count("bandwidth_GBs") == 1);
  CHECK(tcp.samples[1].metrics.count("bandwidth_GBs") == 1);
  CHECK_FALSE(tcp.samples[2].failure.empty());
}

TEST_CASE("tenants: Ctrl-C while the tenants' clients run stops them all", "[tenants]") {
  Harness h(three_tenants(1));
  auto base = h.world.script;
  h.world.script = [base](const std::string& host, const CommandSpec& spec) {
    Scripted scripted = base(host, spec);
    if (is_iperf3_client(spec)) {
      scripted.hangs = true;
      if (host == "b3") {
        scripted.on_start = [] { Interrupt::request(); };
      }
    }
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kIncomplete);
  CHECK(result.points[0].status == PointStatus::kFailed);
  CHECK(result.points[0].samples.empty());
  // All three clients had been released together before the interrupt.
  CHECK(h.world.events_starting("run on b1: iperf3 -c").size() == 1);
  CHECK(h.world.events_starting("run on b3: iperf3 -c").size() == 1);
  CHECK(h.world.events_starting("remove ").size() == 6);
}

TEST_CASE("concurrent: a group's points start together, each recorded on its own",
          "[tenants][concurrent]") {
  Harness h(R"(version: 1
name: group
hosts:
  - {name: a1, provider: netns}
  - {name: b1, provider: netns}
  - {name: a2, provider: netns}
  - {name: b2, provider: netns}
  - {name: a3, provider: netns}
  - {name: b3, provider: netns}
benchmarks:
  - {name: first, tool: iperf3, server: a3, client: b3, params: {duration: 1s}}
  - name: bulk
    tool: iperf3
    tenants: 2
    server: [a1, a2]
    client: [b1, b2]
    params: {parallel: [1, 2], duration: 1s}
  - {name: probe, tool: iperf3, server: a3, client: b3, params: {parallel: [1, 4], duration: 1s}}
concurrent:
  - {name: beside, benchmarks: [bulk, probe]}
history: {enabled: false}
)");
  REQUIRE(h.plan.points.size() == 5);
  REQUIRE(h.plan.together.size() == 2);
  CHECK(h.plan.together[0].points == std::vector<int>{1, 3});
  CHECK(h.plan.together[1].points == std::vector<int>{2, 4});
  CHECK(h.plan.points[0].together == -1);
  RunResult result = h.run();
  INFO(result.fatal_error);
  REQUIRE(result.status == RunStatus::kPassed);
  // The first point alone; then, per start, three servers ready before the three clients.
  std::vector<std::string> order;
  for (const auto& event : h.world.events()) {
    if (event.find("--version") != std::string::npos) {
      continue;
    }
    if (event.rfind("listening on", 0) == 0) {
      order.push_back("ready");
    } else if (event.find(": iperf3 -c") != std::string::npos) {
      order.push_back("client");
    }
  }
  const std::vector<std::string> expected = {"ready",  "client", "ready",  "ready", "ready",
                                             "client", "client", "client", "ready", "ready",
                                             "ready",  "client", "client", "client"};
  CHECK(order == expected);
  CHECK(result.points[1].samples.size() == 2);
  CHECK(result.points[1].samples[1].tenant == 2);
  REQUIRE(result.points[3].samples.size() == 1);
  CHECK(result.points[3].samples[0].tenant == 0);
  CHECK(result.points[3].status == PointStatus::kPassed);
}

using testing::bandwidth_table;

TEST_CASE("tenants: Jain's index and shares of unequal tenants, in the record", "[tenants]") {
  Harness h(R"(version: 1
name: tenants-embedded
emulator: {kind: embedded, instances: 4}
hosts:
  - {name: g1, provider: embedded, instance: 1}
  - {name: g2, provider: embedded, instance: 2}
  - {name: g3, provider: embedded, instance: 3}
  - {name: g4, provider: embedded, instance: 4}
benchmarks:
  - name: bw
    tool: perftest
    tenants:
      - {name: slow, server: g1, client: g2}
      - {server: g2, client: g3}
      - {name: fast, server: g3, client: g4}
    params: {verb: write, mode: bw, size: 64KiB, iterations: 10}
history: {enabled: false}
)");
  // Tenants at 1, 2 and 3 GB/s: J = 6^2 / (3 * 14) = 6/7, shares 1/6 to 1/2.
  h.world.script = [](const std::string& host, const CommandSpec& spec) {
    Scripted scripted;
    scripted.result.exit_code = 0;
    bool client = spec.display().find(" -p ") != std::string::npos &&
                  spec.display().find("addr-") != std::string::npos;
    if (client) {
      scripted.result.out = bandwidth_table(host == "g2" ? 1 : host == "g3" ? 2 : 3);
    }
    return scripted;
  };
  RunResult result = h.run();
  INFO(result.fatal_error);
  REQUIRE(result.status == RunStatus::kPassed);
  HistoryRecord record = build_history_record(*h.scenario, result);
  const PointRecord& bw = record.ernicctl->points[0];
  REQUIRE(bw.fairness.has_value());
  CHECK(bw.fairness->jain.median == Approx(6.0 / 7));
  CHECK(bw.fairness->min_share == Approx(1.0 / 6));
  CHECK(bw.fairness->max_share == Approx(0.5));
  CHECK(bw.samples[0].tenant_name == "slow");
  CHECK(bw.samples[1].tenant_name == "t2");
  // `compare` reads it as a point metric, higher is better.
  CHECK(bw.summary.at(kJainIndexMetric).median == Approx(6.0 / 7));
  CHECK(bw.metrics.at(kJainIndexMetric).better == "higher");
  CHECK(describe_fairness(*bw.fairness) == "J 0.857, shares 0.17-0.50");
  // The record reads back with its fairness and tenants.
  HistoryRecord again = read_history_record(nlohmann::json(record));
  const PointRecord& read = again.ernicctl->points[0];
  REQUIRE(read.fairness.has_value());
  CHECK(read.fairness->jain.median == Approx(6.0 / 7));
  CHECK(read.fairness->repetitions.size() == 1);
  CHECK(read.samples[2].tenant == 3);
}

}  // namespace
}  // namespace ernic
