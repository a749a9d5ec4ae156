// `ernicctl run` end to end with real fio on this machine: the point's record keeps fio's
// per-second reports as its bandwidth series (docs/history-format.md, `distributions.bw_GBs`).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ernicctl_runner.h"

using nlohmann::json;

TEST_CASE("fio on the local host for 3 s: the record holds its per-second series", "[fio]") {
  auto dir = fresh_dir("fio-local");
  auto scenario = dir / "fio-local.yaml";
  std::ofstream(scenario) << "version: 1\nname: fio-local\nhosts:\n"
                          << "  - {name: here, provider: local}\n"
                          << "benchmarks:\n  - name: disk\n    tool: fio\n    client: here\n"
                          << "    timeout: 30s\n    params: {filename: "
                          << (dir / "fio.dat").string()
                          << ", rw: randread, bs: 4KiB, size: 8MiB, iodepth: 1, ioengine: psync, "
                             "direct: false, runtime: 3s}\n"
                          << "history: {enabled: true}\n";
  auto history = dir / "history.jsonl";
  auto result = run_ernicctl({"run", scenario.string(), "--runs-dir", (dir / "runs").string(),
                              "--set", "history.path=" + history.string(), "--output", "json"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  std::ifstream in(history);
  std::string line;
  REQUIRE(std::getline(in, line));
  json record = json::parse(line);
  const json& point = record["ernicctl"]["points"].at(0);
  INFO(point.dump());
  CHECK(point["status"] == "passed");
  CHECK(point["tool"] == "fio");
  CHECK(point["commands"]["client"].get<std::string>().find("--status-interval=1") !=
        std::string::npos);
  const json& series = point["samples"].at(0)["distributions"]["bw_GBs"];
  CHECK(series["interval_s"] == 1.0);
  REQUIRE(series["values"].size() >= 2);
  for (const auto& value : series["values"]) {
    CHECK(value.get<double>() > 0);
  }
  // The seconds add up to about the point's average (page-cache reads: the rate is steady).
  double average = point["summary"]["bw_avg_GBs"]["median"].get<double>();
  CHECK(series["values"][1].get<double>() == Approx(average).epsilon(0.5));
  std::filesystem::remove_all(dir);
}
