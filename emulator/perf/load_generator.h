#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "perf/perftest_format.h"
#include "runtime/instance.h"

namespace ernic::emu::perf {

struct PerfOptions {
  Verb verb = Verb::kSend;
  Mode mode = Mode::kBandwidth;
  std::string socket;
  // Instead of attaching to an instance through `socket`: run one in this process, its loop
  // turned by the load generator's waits (runtime/in_loop_device.h).
  std::optional<InstanceConfig> in_loop;
  std::vector<std::uint64_t> sizes;
  std::uint64_t iterations = 0;
  std::uint32_t tx_depth = 0;
  std::uint32_t qps = 1;
  bool report_gbits = false;
  std::uint16_t port = 18515;
  bool verify = false;
  std::string json;
  std::string server;  // empty: this is the server
  std::string bind = "127.0.0.1";
  int timeout_seconds = 60;
  // perftest's duration mode (-D): run this many seconds instead of `iterations`; 0 = off.
  int duration_seconds = 0;
  bool report_per_second = false;  // bandwidth, duration mode: a row per measured second
  bool report_histogram = false;   // latency (-H): every measured iteration before the row
};

// Runs one side of a test; prints perftest's layout to `out`, errors to `err`. Returns the
// exit status.
int run_load_generator(const PerfOptions& options, std::ostream& out, std::ostream& err);

struct MicroOptions {
  std::string socket;
  std::string peer_socket;
  std::uint64_t iterations = 2000;
  double idle_seconds = 2.0;
};
int run_micro(const MicroOptions& options, std::ostream& out, std::ostream& err);

// The baseline for latency ratios: a busy-polling TCP ping-pong between two threads over
// loopback (no instance involved).
int run_tcp_pingpong(std::uint64_t size, std::uint64_t iterations, std::ostream& out,
                     std::ostream& err);

// The floor under the latency ratios on this machine: a token relayed along send_lat's four
// processes (client, instance, peer instance, peer client) with no emulator in them, spinning
// (the payload between the instances over a socket, then through shared memory) and blocking;
// prints the one-way time of each.
int run_relay_floor(std::uint64_t size, std::uint64_t iterations, std::ostream& out,
                    std::ostream& err);

}  // namespace ernic::emu::perf
