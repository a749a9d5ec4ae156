#include <catch2/catch.hpp>

#include <thread>

#include "benchmarks/registry.h"
#include "builtin_platform.h"
#include "hosts/local_host.h"
#include "run/port_block.h"
#include "scenario/platform.h"

namespace ernic {
namespace {

using Argv = std::vector<std::string>;

const Benchmark& qperf() {
  static const Platform platform = builtin_platform();
  const Benchmark* found = platform.tool("qperf");
  REQUIRE(found != nullptr);
  return *found;
}

PointContext point_on(Host& server, Host& client, std::uint16_t port) {
  PointContext point;
  point.server = &server;
  point.client = &client;
  point.port = port;
  point.timeout = std::chrono::seconds(20);
  point.params.set("size", "65536");
  point.params.set("duration", "1000");
  return point;
}

CommandResult client_output(std::string text, int exit_code = 0) {
  CommandResult result;
  result.exit_code = exit_code;
  result.out = std::move(text);
  return result;
}

TEST_CASE("qperf module: server until stopped, client runs tcp_bw and tcp_lat", "[qperf]") {
  LocalHost server("s", "10.77.0.1");
  LocalHost client("c", "10.77.0.2");
  PointCommands commands = qperf().commands(point_on(server, client, 20123));
  REQUIRE(commands.server);
  CHECK(commands.server->spec.argv == Argv{"qperf", "--listen_port", "20123"});
  CHECK(commands.server->readiness.listening_port == 20123);
  CHECK(commands.server->serves_until_stopped);
  CHECK(commands.client.argv == Argv{"qperf", "10.77.0.1", "--listen_port", "20123", "-uu", "-m",
                                     "65536", "-t", "1", "tcp_bw", "tcp_lat"});
  CHECK(qperf().programs().front().debian_package == "qperf");
}

TEST_CASE("qperf module: reads both figures in base and scaled units", "[qperf]") {
  PointContext point;
  // Printed by qperf 0.4.11 with -uu on loopback.
  auto unified = qperf().parse(nullptr,
                               client_output("tcp_bw:\n    bw  =  885250008 bytes/sec\n"
                                             "tcp_lat:\n    latency  =  17151 ns\n"),
                               point);
  REQUIRE(unified.ok);
  CHECK(unified.metrics.at("bw_GBs") == Approx(0.885250008));
  CHECK(unified.metrics.at("lat_us") == Approx(17.151));
  // Without -uu qperf scales its units (decimal prefixes).
  auto scaled = qperf().parse(
      nullptr,
      client_output("tcp_bw:\n    bw  =  2.29 GB/sec\ntcp_lat:\n    latency  =  66.3 us\n"), point);
  REQUIRE(scaled.ok);
  CHECK(scaled.metrics.at("bw_GBs") == Approx(2.29));
  CHECK(scaled.metrics.at("lat_us") == Approx(66.3));
  CHECK(qperf().output_parser()->parse("tcp_lat:\n    latency  =  1.5 ms\n").data.at("lat_us") ==
        Approx(1500));
}

TEST_CASE("qperf module: a client that could not connect is a failure, not a result", "[qperf]") {
  PointContext point;
  auto refused =
      qperf().parse(nullptr, client_output("tcp_bw:\n127.0.0.1: failed to connect\n", 1), point);
  CHECK_FALSE(refused.ok);
  CHECK(refused.error.find("failed to connect") != std::string::npos);
  CHECK(refused.metrics.empty());
  auto empty = qperf().parse(nullptr, client_output(""), point);
  CHECK_FALSE(empty.ok);
  CHECK(empty.error.find("no tcp_bw or tcp_lat result") != std::string::npos);
  auto garbage = qperf().output_parser()->parse("tcp_bw:\n    bw  =  fast\n");
  CHECK(garbage.error.find("line 2") != std::string::npos);
}

TEST_CASE("qperf module: its commands measure TCP on loopback", "[qperf][process]") {
  REQUIRE(program_in_path("qperf"));  // .ci/install-packages installs it
  LocalHost host("loopback", "127.0.0.1");
  PortBlock ports;
  PointContext point = point_on(host, host, ports.take());
  PointCommands commands = qperf().commands(point);
  auto server = host.start(commands.server->spec, nullptr);
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!host.is_listening(point.port) && server->running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(host.is_listening(point.port));
  CommandResult client = host.run(commands.client);
  server->stop(std::chrono::seconds(1));
  ParseOutcome outcome = qperf().parse(nullptr, client, point);
  INFO(client.output());
  REQUIRE(outcome.ok);
  CHECK(outcome.metrics.at("bw_GBs") > 0);
  CHECK(outcome.metrics.at("lat_us") > 0);
  CHECK(qperf().parse_version(host.run(*qperf().version_command())).rfind("0.", 0) == 0);
}

}  // namespace
}  // namespace ernic
