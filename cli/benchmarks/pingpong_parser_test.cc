#include "benchmarks/pingpong_parser.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "samples.h"

namespace ernic {
namespace {

using testing::read_sample;

TEST_CASE("pingpong: server and client results from a soft-RoCE transcript", "[pingpong]") {
  PingpongOutput output =
      parse_pingpong_output(read_sample("ibv_rc_pingpong-rxe-server-and-client.txt"));
  REQUIRE(output.ok());
  REQUIRE(output.results.size() == 2);
  const PingpongResult& server = output.results[0];
  CHECK(server.line == 4);
  CHECK(server.bytes == 8192000);
  CHECK(server.bytes_seconds == Approx(0.02));
  CHECK(server.mbit_per_sec == Approx(2947.29));
  CHECK(server.iters == 1000);
  CHECK(server.usec_per_iter == Approx(22.24));
  const PingpongResult& client = output.results[1];
  CHECK(client.mbit_per_sec == Approx(2956.87));
  CHECK(client.usec_per_iter == Approx(22.16));
  auto metrics = pingpong_metrics(client);
  CHECK(metrics.at("bw_Mbps") == Approx(2956.87));
  CHECK(metrics.at("bw_GBs") == Approx(0.36960875));
  CHECK(metrics.at("lat_per_iter_us") == Approx(22.16));
  CHECK(output.local_gid == "fe80::9c7f:f4ff:feaf:f293");
  CHECK(output.warnings.size() == 2);  // the two shell prompt lines
}

TEST_CASE("pingpong: no GID index on RoCE is a clear error", "[pingpong]") {
  PingpongOutput output =
      parse_pingpong_output(read_sample("ibv_rc_pingpong-rxe-error-no-gid-index.txt"));
  CHECK_FALSE(output.ok());
  CHECK(output.results.empty());
  CHECK(output.local_gid == "::");
  CHECK(output.error_line == 5);
  CHECK_THAT(output.error,
             Catch::StartsWith("line 5: client read/write: No space left on device") &&
                 Catch::Contains("Couldn't read/write remote address") &&
                 Catch::Contains("needs -g GID_INDEX"));
}

TEST_CASE("pingpong: both result lines are required", "[pingpong]") {
  PingpongOutput only_bytes = parse_pingpong_output(
      "  local address:  LID 0x0000, QPN 0x000011, PSN 0xd24ed4, GID fe80::1\n"
      "8192000 bytes in 0.02 seconds = 2947.29 Mbit/sec\n");
  CHECK_FALSE(only_bytes.ok());
  CHECK(only_bytes.error_line == 2);
  CHECK_THAT(only_bytes.error, Catch::Contains("usec/iter' line after it"));

  PingpongOutput only_iters =
      parse_pingpong_output("1000 iters in 0.02 seconds = 22.24 usec/iter\n");
  CHECK_FALSE(only_iters.ok());
  CHECK_THAT(only_iters.error, Catch::Contains("without the 'N bytes in"));

  // A line with a changed layout is not silently taken for a result.
  PingpongOutput reshaped = parse_pingpong_output(
      "8192000 bytes in 0.02 seconds = 2947.29 Mbit/sec extra\n"
      "1000 iters in 0.02 seconds = 22.24 usec/iter\n");
  CHECK_FALSE(reshaped.ok());

  PingpongOutput empty = parse_pingpong_output("");
  CHECK_FALSE(empty.ok());
  CHECK_THAT(empty.error, Catch::StartsWith("no result"));
}

TEST_CASE("pingpong: device and completion errors are named", "[pingpong]") {
  PingpongOutput missing = parse_pingpong_output("IB device rxe9 not found\n");
  CHECK_FALSE(missing.ok());
  CHECK_THAT(missing.error, Catch::Contains("IB device rxe9 not found"));
  PingpongOutput completion = parse_pingpong_output(
      "  local address:  LID 0x0000, QPN 0x000011, PSN 0xd24ed4, GID fe80::1\n"
      "Failed status transport retry counter exceeded (12) for wr_id 2\n");
  CHECK_THAT(completion.error, Catch::Contains("line 2: Failed status transport retry"));
  CHECK_THAT(completion.error, !Catch::Contains("GID_INDEX"));
}

TEST_CASE("pingpong: parse JSON holds every printed figure", "[pingpong]") {
  ParsedFile file = parse_pingpong_file(read_sample("ibv_rc_pingpong-rxe-server-and-client.txt"));
  CHECK(file.error.empty());
  const auto& result = file.data.at("results").at(1);
  CHECK(result.at("bytes") == 8192000);
  CHECK(result.at("Mbit/sec") == Approx(2956.87));
  CHECK(result.at("usec/iter") == Approx(22.16));
  CHECK(result.at("metrics").at("lat_per_iter_us") == Approx(22.16));
  ParsedFile failed =
      parse_pingpong_file(read_sample("ibv_rc_pingpong-rxe-error-no-gid-index.txt"));
  CHECK_THAT(failed.error, Catch::StartsWith("pingpong: line 5:"));
}

}  // namespace
}  // namespace ernic
