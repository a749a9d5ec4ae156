// No replay here: the perftest module against the real thing ernicctl ships, its load generator
// (`ernicctl perf`) on two instances of the embedded emulator, through `ernicctl run`.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "base/subprocess.h"
#include "replay_tools.h"

namespace ernic {
namespace {

TEST_CASE("perftest module drives ernicctl's load generator on embedded emulator instances",
          "[driver][embedded]") {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "ernic-embedded-perftest-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  std::filesystem::path root = pattern;
  {
    std::ofstream scenario(root / "embedded.yaml");
    scenario << fmt::format(R"(version: 1
name: embedded-perftest
runner: local
emulator: {{kind: embedded, instances: 2}}
hosts:
  - {{name: server, provider: embedded, instance: 1}}
  - {{name: client, provider: embedded, instance: 2}}
benchmarks:
  - name: rdma
    tool: perftest
    server: server
    client: client
    timeout: 60s
    params: {{program: load-generator, verb: send, mode: [bw, lat], size: [4KiB, 1MiB],
              iterations: 100}}
history:
  path: {}
)",
                            (root / "history.jsonl").string());
  }
  SpawnOptions options;
  options.argv = {ERNIC_BINARY,
                  "run",
                  (root / "embedded.yaml").string(),
                  "--runs-dir",
                  (root / "runs").string(),
                  "--output",
                  "json"};
  auto process = Subprocess::spawn(options, nullptr);
  REQUIRE(process->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(120),
                              false) == Subprocess::WaitEnd::kExited);
  process->finish_output();
  INFO(process->stderr_text());
  REQUIRE(process->exit_code() == 0);

  std::string line = testing::read_text_file(root / "history.jsonl");
  nlohmann::json record = nlohmann::json::parse(line.substr(0, line.find('\n')));
  const auto& bandwidth = record["series"]["bandwidth"];
  CHECK(bandwidth["4096"].get<double>() > 0);
  CHECK(bandwidth["1048576"].get<double>() > 0);
  CHECK(record["badges"]["rdma_bw_GBs"].get<double>() == bandwidth["1048576"].get<double>());
  CHECK(record["series"]["latency"]["4096"].get<double>() > 0);
  const auto& points = record["ernicctl"]["points"];
  REQUIRE(points.size() == 4);
  for (const auto& point : points) {
    INFO(point.dump());
    CHECK(point["status"] == "passed");
    CHECK_THAT(point["commands"]["client"].get<std::string>(), Catch::Contains(" perf send_") &&
                                                                   Catch::Contains(" --socket ") &&
                                                                   Catch::EndsWith(" 127.0.0.1"));
    const auto& metrics = point["samples"][0]["metrics"];
    if (point["params"]["mode"] == "lat") {
      CHECK(metrics["lat_min_us"].get<double>() <= metrics["lat_typical_us"].get<double>());
      CHECK(metrics["lat_typical_us"].get<double>() <= metrics["lat_max_us"].get<double>());
      // -H: every iteration's latency, kept as a sketch of the 100 values.
      const auto& latencies = point["samples"][0]["distributions"]["lat_us"];
      CHECK(latencies["n"] == 100);
      CHECK(latencies["min"].get<double>() ==
            Approx(metrics["lat_min_us"].get<double>()).epsilon(0.01));
    } else {
      CHECK(metrics["bw_avg_GBs"].get<double>() > 0);
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(root, ignored);
}

}  // namespace
}  // namespace ernic
