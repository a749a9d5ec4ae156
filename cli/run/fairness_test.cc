// Jain's fairness index and shares on hand-computed cases, and over a concurrent group's
// members, run by the real executor on the platform of fakes.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <array>
#include <functional>
#include <memory>

#include "history/statistics.h"
#include "run/fairness.h"
#include "run/record.h"
#include "run/testing/perf_tables.h"
#include "run/testing/run_harness.h"

namespace ernic {
namespace {

TEST_CASE("jain_index: equal shares give 1", "[fairness]") {
  CHECK(*jain_index({2.5, 2.5, 2.5, 2.5}) == Approx(1.0));
  CHECK(*jain_index({7}) == Approx(1.0));
  std::vector<double> equal = shares({3, 3, 3});
  REQUIRE(equal.size() == 3);
  CHECK(equal[0] == Approx(1.0 / 3));
}

TEST_CASE("jain_index: one tenant alone, the others at 0, gives 1/n", "[fairness]") {
  CHECK(*jain_index({4, 0, 0, 0}) == Approx(0.25));
  CHECK(*jain_index({0, 9}) == Approx(0.5));
  std::vector<double> alone = shares({0, 5, 0});
  CHECK(alone == std::vector<double>{0, 1, 0});
}

TEST_CASE("jain_index: a worked three-tenant case", "[fairness]") {
  // (1 + 2 + 3)^2 / (3 * (1 + 4 + 9)) = 36 / 42.
  CHECK(*jain_index({1, 2, 3}) == Approx(36.0 / 42));
  // (2 + 2 + 4)^2 / (3 * 24) = 64 / 72.
  CHECK(*jain_index({2, 2, 4}) == Approx(64.0 / 72));
  std::vector<double> split = shares({2, 2, 4});
  CHECK(split[0] == Approx(0.25));
  CHECK(split[2] == Approx(0.5));
}

TEST_CASE("jain_index: nothing measured has no index", "[fairness]") {
  CHECK_FALSE(jain_index({}).has_value());
  CHECK_FALSE(jain_index({0, 0}).has_value());
  CHECK(shares({0, 0}).empty());
}

using testing::Scripted;

using testing::bandwidth_table;
using testing::latency_table;

// A concurrent group on four embedded hosts: `bulk` (perftest bandwidth on three tenants whose
// clients are g2, g3, g4), `one` (perftest bandwidth alone, client g1) and `lat` (a latency test,
// client g1 too): the group's index covers bulk's three tenants and `one`, never `lat`.
constexpr const char* kGroup = R"(version: 1
name: group-fairness
emulator: {kind: embedded, instances: 4}
hosts:
  - {name: g1, provider: embedded, instance: 1}
  - {name: g2, provider: embedded, instance: 2}
  - {name: g3, provider: embedded, instance: 3}
  - {name: g4, provider: embedded, instance: 4}
benchmarks:
  - name: bulk
    tool: perftest
    tenants: 3
    server: [g1, g2, g3]
    client: [g2, g3, g4]
    repetitions: 2
    params: {verb: write, mode: bw, size: 64KiB, iterations: 10}
  - name: one
    tool: perftest
    server: g4
    client: g1
    repetitions: 2
    params: {verb: write, mode: bw, size: 64KiB, iterations: 10}
  - name: lat
    tool: perftest
    server: g2
    client: g1
    repetitions: 2
    params: {verb: send, mode: lat, size: 4KiB, iterations: 10}
concurrent:
  - {name: mixed, benchmarks: [bulk, one, lat]}
history: {enabled: false}
)";

// A client's last argument is its server's address (a server may have one after --bind).
bool is_client(const CommandSpec& spec) {
  return spec.argv.back().rfind("addr-", 0) == 0;
}

// The clients of kGroup: latency tests print a latency table; bandwidth clients on g1, g2, g3
// and g4 print `rates[0..3]` GB/s, and `fail_first` makes g1's first bandwidth client print
// garbage.
std::function<Scripted(const std::string&, const CommandSpec&)> group_clients(
    std::array<double, 4> rates, bool fail_first = false) {
  auto failed = std::make_shared<bool>(false);
  return [=](const std::string& host, const CommandSpec& spec) {
    Scripted scripted;
    scripted.result.exit_code = 0;
    if (!is_client(spec)) {
      return scripted;
    }
    if (spec.display().find("send_lat") != std::string::npos) {
      scripted.result.out = latency_table();
      return scripted;
    }
    if (host == "g1" && fail_first && !*failed) {
      *failed = true;
      scripted.result.out = "garbage";
      return scripted;
    }
    scripted.result.out = bandwidth_table(rates.at(static_cast<std::size_t>(host[1] - '1')));
    return scripted;
  };
}

TEST_CASE("group fairness: J over the members measuring the same throughput", "[fairness]") {
  testing::RunHarness h(kGroup);
  // Bulk's tenants at 1, 2 and 3 GB/s, `one` at 2: J = 8^2 / (4 * 18) = 8/9; shares 1/8 to 3/8.
  h.world.script = group_clients({2, 1, 2, 3});
  RunResult result = h.run();
  INFO(result.fatal_error);
  REQUIRE(result.status == RunStatus::kPassed);
  HistoryRecord record = build_history_record(*h.scenario, result);
  const ErnicctlPart& part = *record.ernicctl;
  REQUIRE(part.groups.size() == 1);
  const GroupRecord& group = part.groups[0];
  CHECK(group.group == 1);
  CHECK(group.name == "mixed");
  REQUIRE(group.points.size() == 3);
  CHECK(group.points[2].rfind("lat[", 0) == 0);
  REQUIRE(group.fairness.size() == 1);
  const FairnessRecord& j = group.fairness[0];
  CHECK(j.metric == "bw_avg_GBs");
  CHECK(j.unit == "GB/s");
  CHECK(j.tenants == 4);
  REQUIRE(j.members.size() == 4);
  CHECK(j.members[0] == group.points[0] + " t1");
  CHECK(j.members[2] == group.points[0] + " t3");
  CHECK(j.members[3] == group.points[1]);  // one tenant: the point itself
  REQUIRE(j.repetitions.size() == 2);
  CHECK(j.jain.median == Approx(8.0 / 9));
  CHECK(j.min_share == Approx(1.0 / 8));
  CHECK(j.max_share == Approx(3.0 / 8));
  CHECK(describe_group_fairness(j) ==
        fmt::format("J 0.889 over bw_avg_GBs of {0} t1, {0} t2, {0} t3, {1}, shares 0.12-0.38",
                    group.points[0], group.points[1]));
  CHECK(group_figure_name(group, j) == fmt::format("group mixed: {} + {} + {}", group.points[0],
                                                   group.points[1], group.points[2]));
  // The members ran beside each other: their figures are of the multi-tenant rung, so the
  // latency beside bulk traffic is not published as rung 3's latency.
  for (const auto& point : part.points) {
    CHECK(point.group == 1);
    CHECK(point_rung(point) == Rung::kMultiTenant);
  }
  CHECK(record.series.count("latency") == 0);

  // Written as a list under `groups`, rung 5, and read back the same.
  nlohmann::json json = record;
  const nlohmann::json& written = json["ernicctl"]["groups"][0];
  CHECK(written["rung"] == 5);
  CHECK(written["fairness"][0]["members"].size() == 4);
  CHECK(written["fairness"][0]["jain_index"]["median"].get<double>() == Approx(8.0 / 9));
  HistoryRecord again = read_history_record(json);
  REQUIRE(again.ernicctl->groups.size() == 1);
  CHECK(again.ernicctl->groups[0].fairness[0].members == j.members);
  CHECK(nlohmann::json(again).dump() == json.dump());
}

TEST_CASE("group fairness: only repetitions every member passed; none for one member",
          "[fairness]") {
  testing::RunHarness h(kGroup);
  // `one` (client g1) fails its first repetition, which stops the group there.
  h.world.script = group_clients({2, 2, 2, 2}, /*fail_first=*/true);
  RunResult result = h.run();
  std::vector<GroupRecord> groups = group_fairness(*h.scenario, result);
  REQUIRE(groups.size() == 1);
  // No repetition in which every member passed, so no index.
  CHECK(result.points[1].status == PointStatus::kFailed);
  CHECK(result.points[0].samples.size() == 3);  // bulk's tenants passed their repetition
  CHECK(groups[0].fairness.empty());
  CHECK(groups[0].points.size() == 3);

  // A group whose only throughput member is one point with one tenant has nothing to compare.
  testing::RunHarness lone(R"(version: 1
name: lone
emulator: {kind: embedded, instances: 2}
hosts:
  - {name: g1, provider: embedded, instance: 1}
  - {name: g2, provider: embedded, instance: 2}
benchmarks:
  - {name: one, tool: perftest, server: g1, client: g2, params: {verb: write, mode: bw, size: 64KiB, iterations: 10}}
  - {name: lat, tool: perftest, server: g2, client: g1, params: {verb: send, mode: lat, size: 4KiB, iterations: 10}}
concurrent:
  - {name: pair, benchmarks: [one, lat]}
history: {enabled: false}
)");
  lone.world.script = group_clients({2, 2, 2, 2});
  RunResult alone = lone.run();
  REQUIRE(alone.status == RunStatus::kPassed);
  std::vector<GroupRecord> pair = group_fairness(*lone.scenario, alone);
  REQUIRE(pair.size() == 1);
  CHECK(pair[0].fairness.empty());
}

}  // namespace
}  // namespace ernic
