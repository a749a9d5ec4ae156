// perftest's own failures and the errors that are only their consequence, read from the step log
// of a real run whose server could not calibrate its CPU clock (testing::CalibrationFlake).
#include <catch2/catch.hpp>

#include "benchmarks/perftest_errors.h"
#include "benchmarks/registry.h"
#include "run/testing/step_log_sides.h"
#include "samples.h"

namespace ernic {
namespace {

using testing::CalibrationFlake;
using testing::read_sample;

constexpr std::string_view kCalibrationLine = "Correlation coefficient r^2: 0.658888 < 0.9";
constexpr const char* kCalibrationMessage =
    "perftest could not calibrate the CPU clock (r^2 0.66 < 0.9; a busy or virtualised CPU): "
    "Can't produce a report";

// The point that failed: ib_send_bw -s 4096 -D 5 --report_gbits.
PointContext send_bw_4k() {
  PointContext point;
  point.benchmark = "bw";
  point.params.set("verb", "send");
  point.params.set("mode", "bw");
  point.params.set("size", "4096");
  point.params.set("duration", "5000");
  point.params.set("report_gbits", "true");
  return point;
}

TEST_CASE("perftest errors: a CPU clock perftest could not calibrate, as a TCG guest printed it",
          "[perftest][errors]") {
  CalibrationFlake flake;
  REQUIRE_THAT(flake.server.err, Catch::Contains(std::string(kCalibrationLine)));

  auto own = perftest_errors::own_failure(flake.server.output());
  REQUIRE(own);
  CHECK(own->cause == "perftest could not calibrate the CPU clock");
  CHECK(own->message == kCalibrationMessage);
  CHECK(own->transient);
  // Both lines are failures, and `ernicctl parse` explains the first.
  CHECK(perftest_errors::is_error_line(kCalibrationLine));
  CHECK(perftest_errors::is_error_line("Can't produce a report"));
  CHECK_THAT(perftest_errors::error_hint(kCalibrationLine).value_or(""),
             Catch::Contains("could not calibrate the CPU clock"));

  // Nothing of the kind in the client's lines or in a run that went well.
  CHECK_FALSE(perftest_errors::own_failure(flake.client.output()));
  CHECK_FALSE(perftest_errors::own_failure(read_sample("ib_send_bw_s65536.server.txt")));
  CHECK_FALSE(perftest_errors::own_failure(read_sample("ib_send_bw_s65536.client.txt")));
}

TEST_CASE("perftest errors: a lost handshake is the consequence of the other side's failure",
          "[perftest][errors]") {
  CalibrationFlake flake;
  CHECK(perftest_errors::is_peer_consequence("ethernet_read_keys: Couldn't read remote address"));
  CHECK(perftest_errors::is_peer_consequence(" Unable to read from socket/rdma_cm"));
  CHECK(perftest_errors::is_peer_consequence(
      " Failed to close connection between server and client"));
  CHECK_FALSE(perftest_errors::is_peer_consequence("Failed to modify QP to RTS"));
  CHECK_FALSE(perftest_errors::is_peer_consequence(kCalibrationLine));

  CHECK_FALSE(perftest_errors::has_independent_error(flake.client.output()));
  CHECK(perftest_errors::has_independent_error(flake.server.output()));
  CHECK(perftest_errors::has_independent_error(
      read_sample("ib_write_bw_error_no_server.client.txt")));
  CHECK_FALSE(perftest_errors::has_independent_error(read_sample("ib_send_bw_s65536.client.txt")));
}

TEST_CASE("perftest module: the server that could not calibrate its clock is named first",
          "[perftest][errors][module]") {
  CalibrationFlake flake;
  ParseOutcome outcome = perftest_benchmark().parse(&flake.server, flake.client, send_bw_4k());
  CHECK_FALSE(outcome.ok);
  INFO(outcome.error);
  CHECK_THAT(outcome.error,
             Catch::StartsWith(std::string("server: ") + kCalibrationMessage +
                               "; client, as a consequence: line 25: ethernet_read_keys: "
                               "Couldn't read remote address"));
  // Transient, and nothing to do with the device: the executor may run it again.
  CHECK(outcome.retryable_cause == "perftest could not calibrate the CPU clock");
  CHECK(outcome.metrics.empty());
}

TEST_CASE("perftest module: a client that could not calibrate its clock is named, retryable",
          "[perftest][errors][module]") {
  CalibrationFlake flake;
  // The client's banner and table header, then the refusal the server printed above.
  CommandResult client;
  std::size_t header = flake.client.out.find(" #bytes");
  REQUIRE(header != std::string::npos);
  client.out = flake.client.out.substr(0, flake.client.out.find('\n', header) + 1);
  client.err = flake.server.err;
  client.exit_code = 1;
  CommandResult server;
  server.exit_code = 0;
  server.out = read_sample("ib_send_bw_s65536.server.txt");

  ParseOutcome outcome = perftest_benchmark().parse(&server, client, send_bw_4k());
  CHECK_FALSE(outcome.ok);
  CHECK(outcome.error == std::string("client: ") + kCalibrationMessage);
  CHECK(outcome.retryable_cause == "perftest could not calibrate the CPU clock");
}

TEST_CASE("perftest module: a failure of the server's own comes before its client's consequence",
          "[perftest][errors][module]") {
  CalibrationFlake flake;
  // The server failing to connect its queue pair (perftest issue #132's lines) instead.
  CommandResult server = flake.server;
  server.err = "Failed to modify QP to RTS\n Unable to Connect the HCA's through the link\n";
  ParseOutcome outcome = perftest_benchmark().parse(&server, flake.client, send_bw_4k());
  CHECK_FALSE(outcome.ok);
  INFO(outcome.error);
  CHECK_THAT(outcome.error, Catch::StartsWith("server: line ") &&
                                Catch::Contains("Failed to modify QP to RTS") &&
                                Catch::Contains("; client, as a consequence: line 25: "
                                                "ethernet_read_keys: Couldn't read remote "
                                                "address"));
  // Not perftest's own transient failure: no retry.
  CHECK(outcome.retryable_cause.empty());

  // A client that failed on its own is still named first, and not retried either.
  CommandResult refused;
  refused.exit_code = 1;
  refused.err = read_sample("ib_write_bw_error_no_server.client.txt");
  ParseOutcome no_server = perftest_benchmark().parse(&server, refused, send_bw_4k());
  CHECK_THAT(no_server.error, Catch::StartsWith("client: line 1: Couldn't connect to "));
  CHECK(no_server.retryable_cause.empty());
}

}  // namespace
}  // namespace ernic
