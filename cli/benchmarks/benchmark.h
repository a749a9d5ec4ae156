#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/program.h"
#include "base/schema.h"
#include "benchmarks/parser.h"
#include "history/distribution.h"
#include "hosts/host.h"

namespace ernic {

// One point's parameter values, in the order the tool's schema declares them, as canonical
// text (sizes in bytes, durations in milliseconds, booleans "true"/"false").
class PointParams {
 public:
  void set(const std::string& name, std::string value);
  bool has(const std::string& name) const;
  // Throws std::out_of_range naming the parameter when it is missing.
  const std::string& text(const std::string& name) const;
  std::uint64_t bytes(const std::string& name) const;
  std::uint64_t integer(const std::string& name) const;
  double milliseconds(const std::string& name) const;
  bool flag(const std::string& name) const;
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// Facts setup steps learned about a host (rdma device name, GID index, ...), read by
// benchmark modules when they build command lines.
using HostFacts = std::map<std::string, std::string>;
// The fact named `key`, or "" when the host has none.
std::string host_fact(const HostFacts& facts, const std::string& key);

// When a command's stdout arrived: the executor notes every chunk as it comes (OutputSink),
// so that a module can tell when a line it recognises was printed (rung 2's time to the first
// table row). Times are milliseconds since just before the command started.
struct OutputArrivals {
  struct Chunk {
    std::size_t end = 0;  // bytes of stdout received once this chunk arrived
    double ms = 0;
  };
  std::vector<Chunk> chunks;  // in arrival order

  // When stdout's byte `offset` had arrived; nullopt when it never did (or nothing was timed).
  std::optional<double> arrival_ms(std::size_t offset) const {
    for (const Chunk& chunk : chunks) {
      if (offset < chunk.end) {
        return chunk.ms;
      }
    }
    return std::nullopt;
  }
};

struct PointContext {
  std::string benchmark;  // the scenario's name for the benchmark entry
  std::string id;         // unique point id, e.g. "tcp[protocol=udp,reverse=false]"
  PointParams params;
  Host* server = nullptr;  // null for single-host tools
  Host* client = nullptr;
  HostFacts server_facts;
  HostFacts client_facts;
  std::uint16_t port = 0;  // a TCP port reserved for this point
  std::chrono::milliseconds timeout{0};
  // The client's stdout as it arrived, set before parse() (empty in `ernicctl parse`).
  OutputArrivals client_arrivals;
};

// How the executor knows a server is ready, without sleeping.
struct Readiness {
  std::optional<std::uint16_t> listening_port;  // a TCP listen socket on the server host
  std::optional<std::regex> output_line;        // a line the server prints
  std::string description;                      // for errors: "iperf3 listening on port 5201"
};

struct ServerCommand {
  CommandSpec spec;
  Readiness readiness;
  // A server that serves clients until it is stopped (qperf) is stopped as soon as its client
  // finished; others (iperf3 -s -1, perftest) exit by themselves and are waited for.
  bool serves_until_stopped = false;
};

struct PointCommands {
  std::optional<ServerCommand> server;
  CommandSpec client;
};

enum class Better { kHigher, kLower };

struct MetricInfo {
  std::string name;  // e.g. "bw_avg_GBs"
  std::string unit;  // e.g. "GB/s"
  Better better = Better::kHigher;
};

// What parse() read from one repetition.
struct ParseOutcome {
  bool ok = false;
  std::string error;                      // why it is not a result, when !ok
  std::map<std::string, double> metrics;  // names from metrics()
  nlohmann::json details;                 // everything the parser read, kept in the run directory
  // Per-iteration latencies and per-interval rates behind the metrics, by kind
  // (kLatencyDistribution, kBandwidthDistribution); empty when the tool printed none.
  std::map<std::string, Distribution> distributions;
  // A module declares a failure retryable by naming its cause here, short ("perftest could not
  // calibrate the CPU clock"): transient, and saying nothing about the device, so the executor
  // runs the repetition again (a few times at most: run/point_execution.cc). Empty otherwise.
  std::string retryable_cause;
};

// The verdict every tool with a client and a server side, each printing its result or its error
// (perftest, ibv_rc_pingpong), starts with: the client's printed error (with how the client
// ended), then a client that failed after a complete output, then an error the server printed
// (`server_error`: empty when the server printed none). Empty when neither side failed.
std::string paired_tool_error(std::string_view client_error, const CommandResult& client,
                              std::string_view server_error);

// The figures a run publishes in rocm-ernic's record format (series and badges).
struct PublishedFigures {
  std::map<std::string, std::map<std::string, double>> series;  // "bandwidth" -> {"4096": 0.39}
  std::map<std::string, double> badges;                         // "tcp_bw_GBs" -> 2.1
};

// One point's outcome as the publisher sees it.
struct PointSummary {
  const PointParams* params = nullptr;
  std::map<std::string, double> median;  // per metric, over the passed repetitions
};

// A benchmark tool, with PerfKit Benchmarker's life cycle: prepare, run (the executor's
// server/client choreography around commands()), parse, cleanup. Adding a tool means adding
// one module file, its test and one line in builtin_platform.cc.
class Benchmark {
 public:
  virtual ~Benchmark() = default;

  virtual std::string_view tool() const = 0;
  virtual std::string_view description() const = 0;
  // The `params` a scenario may give; matrix fields expand into points.
  virtual const ObjectSchema& params() const = 0;
  virtual std::vector<MetricInfo> metrics() const = 0;
  // The metric a summary shows for a point: the first declared one by default.
  virtual std::string headline_metric(const PointParams& /*params*/) const {
    return metrics().front().name;
  }
  // Programs the server and client hosts need, checked before anything starts.
  using Program = ernic::Program;
  virtual std::vector<Program> programs() const = 0;
  // The programs a host with these facts needs for a point with these parameters: perftest
  // with `program: load-generator` on a host attached to an embedded emulator instance needs
  // none (the load generator is built into ernicctl).
  virtual std::vector<Program> programs_for(const HostFacts& /*facts*/,
                                            const PointParams& /*params*/) const {
    return programs();
  }
  // The program that measures a point with these parameters on a client host with these facts,
  // as the record names it ("perftest", "ernicctl load generator"); empty: the tool itself.
  virtual std::string measured_by(const PointParams& /*params*/,
                                  const HostFacts& /*client_facts*/) const {
    return "";
  }
  // The command that prints the tool's version on the client host, and how to read it; none
  // when the tool has no version worth recording (the record then says nothing of it).
  virtual std::optional<CommandSpec> version_command() const { return std::nullopt; }
  virtual std::string parse_version(const CommandResult& /*result*/) const { return ""; }
  // What `ernicctl parse TOOL FILE` uses to read a saved output of the tool.
  virtual std::optional<OutputParser> output_parser() const { return std::nullopt; }
  // Whether the tool runs as a server plus a client (otherwise only on the client host).
  virtual bool needs_server() const { return true; }

  virtual void prepare(PointContext& /*point*/) const {}
  // Fully resolved command lines; the dry run prints these.
  virtual PointCommands commands(const PointContext& point) const = 0;
  virtual ParseOutcome parse(const CommandResult* server, const CommandResult& client,
                             const PointContext& point) const = 0;
  virtual void cleanup(PointContext& /*point*/) const {}
  // Adds this point's figures to the rocm-ernic compatible series and badges.
  virtual void publish(const PointSummary& /*point*/,
                       const std::vector<std::uint64_t>& /*tracked_sizes*/,
                       PublishedFigures& /*figures*/) const {}
};

}  // namespace ernic
