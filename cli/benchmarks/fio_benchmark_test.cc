#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "benchmarks/registry.h"
#include "builtin_platform.h"
#include "scenario/platform.h"

#include "samples.h"

namespace ernic {
namespace {

using Argv = std::vector<std::string>;

using testing::read_sample;

const Benchmark& fio() {
  const Platform platform = builtin_platform();
  const Benchmark* found = platform.tool("fio");
  REQUIRE(found != nullptr);
  return *found;
}

TEST_CASE("fio module: rocm-ernic's NVMe-oF command line", "[fio][module]") {
  CHECK_FALSE(fio().needs_server());
  PointContext point;
  point.timeout = std::chrono::milliseconds(60000);
  point.params.set("filename", "/dev/nvme0n1");
  point.params.set("rw", "randread");
  point.params.set("bs", "65536");
  point.params.set("size", "67108864");
  point.params.set("iodepth", "32");
  point.params.set("ioengine", "libaio");
  point.params.set("direct", "true");
  point.params.set("runtime", "10000");
  PointCommands commands = fio().commands(point);
  CHECK_FALSE(commands.server.has_value());
  CHECK(commands.client.argv ==
        Argv{"fio", "--name=ernic", "--filename=/dev/nvme0n1", "--rw=randread", "--bs=65536",
             "--size=67108864", "--iodepth=32", "--ioengine=libaio", "--direct=1", "--runtime=10",
             "--time_based", "--group_reporting", "--output-format=json", "--status-interval=1"});
  CHECK(commands.client.timeout == std::chrono::milliseconds(60000));

  point.params.set("direct", "false");
  point.params.set("runtime", "1500");
  Argv argv = fio().commands(point).client.argv;
  CHECK(argv[8] == "--direct=0");
  CHECK(argv[9] == "--runtime=1500ms");
}

TEST_CASE("fio module: parse a result and a failure", "[fio][module]") {
  PointContext point;
  CommandResult client;
  client.exit_code = 0;
  client.out = read_sample("fio-3.33-json-with-note-prefix.txt");
  ParseOutcome outcome = fio().parse(nullptr, client, point);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  CHECK(outcome.metrics.at("iops_M") == Approx(0.476118226321));
  CHECK(outcome.metrics.at("bw_avg_GBs") == Approx(1.950180255));
  CHECK(outcome.details.at("version") == "fio-3.33");

  CommandResult failed;
  failed.exit_code = 1;
  failed.err =
      "fio: looks like your file system does not support direct=1/buffered=0\n"
      "fio: destination does not support O_DIRECT\n";
  ParseOutcome failure = fio().parse(nullptr, failed, point);
  CHECK_FALSE(failure.ok);
  CHECK(failure.error ==
        "no JSON object found (was fio run with --output-format=json?) (fio exit status 1: "
        "fio: looks like your file system does not support direct=1/buffered=0)");
}

TEST_CASE("fio module: each second's rate becomes the point's bandwidth series", "[fio][module]") {
  PointContext point;
  CommandResult client;
  client.exit_code = 0;
  client.out = read_sample("fio-3.33-json-status-interval.txt");
  ParseOutcome outcome = fio().parse(nullptr, client, point);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  // The metrics are the final report's, not a status report's.
  CHECK(outcome.metrics.at("bw_avg_GBs") == Approx((52177935.0 + 52135624.0) / 1e9));
  const Distribution& series = outcome.distributions.at(kBandwidthDistribution);
  REQUIRE(series.interval_s.has_value());
  CHECK(*series.interval_s == 1.0);
  // Three seconds: the start to the first report (870 ms), then two full seconds; the final
  // report's 123 ms tail is left out. Read and write bytes together, per second.
  REQUIRE(series.values.size() == 3);
  CHECK(series.values[0] == Approx((44490752.0 + 44339200.0) / 0.870 / 1e9).epsilon(1e-4));
  CHECK(series.values[1] ==
        Approx((100495360.0 + 100155392.0 - 44490752.0 - 44339200.0) / 1.003 / 1e9).epsilon(1e-4));

  // One report (no --status-interval): no series.
  client.out = read_sample("fio-3.33-json-with-note-prefix.txt");
  CHECK(fio().parse(nullptr, client, point).distributions.empty());
}

TEST_CASE("fio module: publishes the nvmeof series and the IOPS badge", "[fio][module]") {
  const std::vector<std::uint64_t> tracked = {4096, 65536, 1048576};
  PublishedFigures figures;
  for (auto [bs, bw, iops] : {std::tuple{"4096", 0.4, 0.1}, std::tuple{"65536", 2.5, 0.04},
                              std::tuple{"131072", 3.0, 0.02}}) {
    PointParams params;
    params.set("bs", bs);
    PointSummary summary{&params, {{"bw_avg_GBs", bw}, {"iops_M", iops}}};
    fio().publish(summary, tracked, figures);
  }
  CHECK(figures.series.at("nvmeof") ==
        std::map<std::string, double>{{"4096", 0.4}, {"65536", 2.5}});
  CHECK(figures.badges == std::map<std::string, double>{{"nvmeof_iops_M", 0.1}});
}

}  // namespace
}  // namespace ernic
