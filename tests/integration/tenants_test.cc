// Several tenants at once, end to end: scenarios/multi-tenant.yaml (shortened) on the embedded
// emulator's manager and three workers, and iperf3 with two tenants over netns hosts.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ernicctl_runner.h"

using nlohmann::json;

namespace {

const std::string kMultiTenant = std::string(ERNIC_SOURCE_DIR) + "/scenarios/multi-tenant.yaml";

json only_record(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return json::parse(line);
}

const json& point_of(const json& record, const std::string& benchmark) {
  for (const auto& point : record["ernicctl"]["points"]) {
    if (point["benchmark"] == benchmark) {
      return point;
    }
  }
  FAIL("no point of " << benchmark);
  static const json none;
  return none;
}

// Every tenant's sample in tenant order, with the metric, and Jain's index in (1/n, 1].
void check_tenants(const json& point, int tenants, const std::string& metric) {
  INFO(point.dump());
  CHECK(point["status"] == "passed");
  REQUIRE(point["samples"].size() == static_cast<std::size_t>(tenants));
  for (int t = 0; t < tenants; ++t) {
    const json& sample = point["samples"][static_cast<std::size_t>(t)];
    CHECK(sample["tenant"] == t + 1);
    CHECK(sample["tenant_name"] == "t" + std::to_string(t + 1));
    CHECK(sample["metrics"][metric].get<double>() > 0);
  }
  REQUIRE(point.contains("fairness"));
  double jain = point["fairness"]["jain_index"]["median"].get<double>();
  CHECK(jain > 1.0 / tenants);
  CHECK(jain <= 1.0 + 1e-9);
  CHECK(point["summary"]["jain_index"]["median"].get<double>() == Approx(jain));
  CHECK(point["fairness"]["min_share"].get<double>() <= 1.0 / tenants + 1e-9);
  CHECK(point["logs"].size() == static_cast<std::size_t>(tenants));
}

}  // namespace

TEST_CASE("multi-tenant.yaml shortened on the embedded emulator: per-tenant samples and J",
          "[tenants]") {
  auto dir = fresh_dir("tenants-embedded");
  auto history = dir / "history.jsonl";
  auto result = run_ernicctl({"run",        kMultiTenant,
                              "--runs-dir", (dir / "runs").string(),
                              "--set",      "history.path=" + history.string(),
                              "--set",      "benchmarks.bw4.params.verb=write",
                              "--set",      "benchmarks.bw4.params.size=64KiB",
                              "--set",      "benchmarks.bw4.params.duration=1s",
                              "--set",      "benchmarks.bw4.repetitions=1",
                              "--set",      "benchmarks.bulk3.params.duration=1s",
                              "--set",      "benchmarks.bulk3.repetitions=1",
                              "--set",      "benchmarks.lat_loaded.repetitions=1",
                              "--set",      "benchmarks.lat_loaded.params.iterations=200",
                              "--set",      "benchmarks.lat_solo.repetitions=1",
                              "--set",      "benchmarks.lat_solo.params.iterations=200",
                              "--output",   "json"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  json record = only_record(history);
  REQUIRE(record["ernicctl"]["points"].size() == 4);
  check_tenants(point_of(record, "bw4"), 4, "bw_avg_GBs");
  check_tenants(point_of(record, "bulk3"), 3, "bw_avg_GBs");
  // The latency tenant ran beside the bulk ones; its solo baseline alone.
  for (const char* latency : {"lat_loaded", "lat_solo"}) {
    const json& point = point_of(record, latency);
    INFO(point.dump());
    CHECK(point["status"] == "passed");
    REQUIRE(point["samples"].size() == 1);
    CHECK_FALSE(point["samples"][0].contains("tenant"));
    CHECK(point["summary"]["lat_p99_us"]["median"].get<double>() > 0);
  }
  CHECK(count_processes_mentioning("ernicctl perf") == 0);
}

TEST_CASE("iperf3 with two tenants over four netns hosts", "[tenants]") {
  auto dir = fresh_dir("tenants-netns");
  auto before = namespaces();
  auto scenario = dir / "two-tenants.yaml";
  std::ofstream(scenario) << R"(version: 1
name: two-tenants
hosts:
  - {name: s1, provider: netns}
  - {name: c1, provider: netns}
  - {name: s2, provider: netns}
  - {name: c2, provider: netns}
netns: {subnet: 10.78.0.0/24}
benchmarks:
  - name: tcp
    tool: iperf3
    tenants: 2
    server: [s1, s2]
    client: [c1, c2]
    params: {protocol: tcp, duration: 1s}
    timeout: 30s
history: {enabled: true}
)";
  auto history = dir / "history.jsonl";
  auto result = run_ernicctl({"run", scenario.string(), "--runs-dir", (dir / "runs").string(),
                              "--set", "history.path=" + history.string(), "--output", "json"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  json record = only_record(history);
  const json& tcp = point_of(record, "tcp");
  check_tenants(tcp, 2, "bandwidth_GBs");
  // Each tenant's log is its own, next to the record.
  std::filesystem::path run_dir = record["ernicctl"]["run_dir"].get<std::string>();
  CHECK(std::filesystem::exists(run_dir / tcp["logs"][0].get<std::string>()));
  CHECK(tcp["logs"][1].get<std::string>().find("-t2.log") != std::string::npos);
  CHECK(namespaces() == before);
  CHECK(count_processes("iperf3") == 0);
}
