// What one command of a recorded step log printed (StepLog's lines "server out| text" and
// "client err| text"), for tests that replay a real run's commands from its log.
#pragma once

#include <string>
#include <string_view>

#include "hosts/host.h"
#include "samples.h"

namespace ernic::testing {

// `role`'s stdout and stderr as the log kept them, each line with its newline; the exit status
// is left to the test (the log's "# ROLE finished: ..." line says which).
inline CommandResult step_log_output(std::string_view log, std::string_view role) {
  CommandResult result;
  const std::string out_prefix = std::string(role) + " out| ";
  const std::string err_prefix = std::string(role) + " err| ";
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    std::string_view line =
        log.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? log.size() : end + 1;
    if (line.starts_with(out_prefix)) {
      result.out += std::string(line.substr(out_prefix.size())) + "\n";
    } else if (line.starts_with(err_prefix)) {
      result.err += std::string(line.substr(err_prefix.size())) + "\n";
    }
  }
  return result;
}

// Both sides of a real failed point (tests/samples/step-log-tcg-perftest-calibration-failure.log):
// the first point of a fresh-clone CI run on two just-booted TCG guests with soft-RoCE, where the
// server's perftest could not calibrate its CPU clock ("# server finished: exit status 1") and
// its client, which had printed its row, then lost the final handshake ("exit status 0").
struct CalibrationFlake {
  CommandResult server;
  CommandResult client;
  CalibrationFlake() {
    std::string log = read_sample("step-log-tcg-perftest-calibration-failure.log");
    server = step_log_output(log, "server");
    server.exit_code = 1;
    client = step_log_output(log, "client");
    client.exit_code = 0;
  }
};

}  // namespace ernic::testing
