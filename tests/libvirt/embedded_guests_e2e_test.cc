// `ernicctl run scenarios/two-guest-embedded.yaml`, shortened to fit CI: two TCG guests, each
// served by an embedded instance through its guest region (an ivshmem-plain device), Debian's
// unmodified ib_write_bw, ib_send_lat and ibv_rc_pingpong (validating) guest to guest through
// the instances and their mesh, then nothing left.
#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "base/subprocess.h"
#include "libvirt_e2e_support.h"

namespace ernic::e2e {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSubnet = "192.168.236.0/24";
constexpr std::uint64_t kLatencyIterations = 200;
constexpr std::uint64_t kPingpongIterations = 200;
constexpr std::uint64_t kMessage = 4096;

std::vector<std::string> embedded_run_command(const fs::path& work) {
  const std::string image = std::string(ERNIC_SOURCE_DIR) + "/images/debian12-rdma.yaml";
  std::vector<std::string> argv{
      ERNIC_BINARY,
      "run",
      std::string(ERNIC_SOURCE_DIR) + "/scenarios/two-guest-embedded.yaml",
      "--runs-dir",
      (work / "runs").string(),
      "--output",
      "text"};
  for (const std::string& set :
       {"history.path=" + (work / "history.jsonl").string(), "hosts.guest1.libvirt.image=" + image,
        "hosts.guest2.libvirt.image=" + image, std::string("libvirt.network.subnet=") + kSubnet,
        std::string("benchmarks.bw.params.verb=[write]"),
        std::string("benchmarks.bw.params.size=[64KiB]"),
        std::string("benchmarks.bw.params.duration=3s")}) {
    argv.insert(argv.end(), {"--set", set});
  }
  return argv;
}

const nlohmann::json& point_named(const nlohmann::json& points, const std::string& benchmark) {
  for (const auto& point : points) {
    if (point["benchmark"] == benchmark) {
      return point;
    }
  }
  FAIL("no point of benchmark " << benchmark);
  return points;
}

std::uint64_t moved(const nlohmann::json& point, const char* instance, const char* direction) {
  return point["instances"][instance][direction].get<std::uint64_t>();
}

TEST_CASE(
    "ernicctl run two-guest-embedded.yaml: real perftest and ibv_rc_pingpong guest to guest "
    "through embedded instances, counted by them, nothing left behind",
    "[libvirt][e2e]") {
  REQUIRE(::geteuid() == 0);
  Daemons daemons;
  fs::path work = make_run_dir("em" + random_token());
  auto run = run_to_end(embedded_run_command(work), "ernicctl run two-guest-embedded (reduced)");
  INFO(run->stdout_text() << run->stderr_text());
  REQUIRE(run->exit_code() == 0);

  nlohmann::json record = last_json_line(work / "history.jsonl");
  const auto& ernic = record["ernicctl"];
  CHECK(ernic["status"] == "passed");
  const auto& points = ernic["points"];
  REQUIRE(points.size() == 4);  // write bw, send lat, pingpong, tcp
  for (const auto& point : points) {
    CHECK(point["status"] == "passed");
  }
  // Debian's own programs ran in the guests on the instances' devices, no soft-RoCE.
  const auto& bw = point_named(points, "bw");
  const std::string bw_client = bw["commands"]["client"];
  CHECK_THAT(bw_client, Catch::Contains("ib_write_bw -d ernic_2 ") &&
                            Catch::Contains("SYSFS_PATH=/run/ernic/sysfs"));
  CHECK(bw["measured_by"] == "perftest");
  const auto& pingpong = point_named(points, "pingpong");
  CHECK_THAT(
      pingpong["commands"]["client"].get<std::string>(),
      Catch::Contains("ibv_rc_pingpong -d ernic_2") && Catch::EndsWith(" -c 192.168.236.10"));
  for (const auto& host : ernic["hosts"]) {
    CHECK(host["facts"]["rdma_device"].get<std::string>().rfind("ernic_", 0) == 0);
    CHECK(host["facts"]["guest_region"].get<std::string>().rfind("ernic-", 0) == 0);
  }
  CHECK(ernic["functional_only"] == (ernic["accelerator"] == "tcg"));

  // The instances counted what the programs moved: the client's (instance 2) sent at least what
  // ib_write_bw measured over its duration, and both every latency and ping-pong message.
  const double bw_bytes = bw["summary"]["bw_avg_GBs"]["median"].get<double>() * 1e9 * 3;
  CHECK(static_cast<double>(moved(bw, "2", "bytes_sent")) >= 0.9 * bw_bytes);
  CHECK(moved(bw, "1", "bytes_received") == moved(bw, "2", "bytes_sent"));
  const auto& lat = point_named(points, "lat");
  CHECK(moved(lat, "2", "bytes_sent") >= kLatencyIterations * kMessage);
  CHECK(moved(lat, "1", "bytes_sent") >= kLatencyIterations * kMessage);
  CHECK(moved(pingpong, "2", "bytes_sent") >= kPingpongIterations * kMessage);
  CHECK(moved(pingpong, "1", "bytes_sent") >= kPingpongIterations * kMessage);
  // iperf3 goes over the guests' network, not through the instances.
  CHECK(moved(point_named(points, "tcp"), "2", "bytes_sent") == 0);

  CHECK(leftovers(ernic["run_token"].get<std::string>()).empty());
  fs::remove_all(work);
}

}  // namespace
}  // namespace ernic::e2e
