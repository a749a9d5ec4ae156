// The ibv_rc_pingpong benchmark module (rdma-core): RC ping-pong latency and bandwidth; on hosts
// attached to embedded emulator instances, through the instance's verbs device.
#include <fmt/format.h>

#include "benchmarks/benchmark.h"
#include "benchmarks/instance_device.h"
#include "benchmarks/pingpong_parser.h"
#include "benchmarks/registry.h"

namespace ernic {
namespace {

class PingpongBenchmark final : public Benchmark {
 public:
  std::optional<OutputParser> output_parser() const override { return pingpong_output_parser(); }
  std::string_view tool() const override { return "pingpong"; }
  std::string_view description() const override {
    return "ibv_rc_pingpong (rdma-core) RC ping-pong between two hosts";
  }

  const ObjectSchema& params() const override {
    static const ObjectSchema schema{
        .description = "ibv_rc_pingpong parameters",
        .fields = {
            {.name = "size",
             .kind = ValueKind::kSize,
             .description = "Message size (-s)",
             .matrix = true,
             .default_text = "4KiB"},
            {.name = "iterations",
             .kind = ValueKind::kInteger,
             .description = "Round trips (-n)",
             .default_text = "100",
             .minimum = 1},
            {.name = "gid_index",
             .kind = ValueKind::kInteger,
             .description = "GID index (-g) when the gid-index setup step did not find one; "
                            "RoCE devices, soft-RoCE included, need one (on an embedded emulator "
                            "instance's device 0, its first GID, by default)",
             .minimum = 0},
            {.name = "validate",
             .kind = ValueKind::kBoolean,
             .description = "ibv_rc_pingpong checks the received buffer's contents in every "
                            "round trip (-c)",
             .default_text = "false"},
        }};
    return schema;
  }

  std::vector<MetricInfo> metrics() const override {
    return {{"bw_Mbps", "Mbit/s", Better::kHigher},
            {"bw_GBs", "GB/s", Better::kHigher},
            {"lat_per_iter_us", "us", Better::kLower}};
  }

  std::vector<Program> programs() const override { return {{"ibv_rc_pingpong", "ibverbs-utils"}}; }

  PointCommands commands(const PointContext& point) const override {
    PointCommands commands;
    ServerCommand server;
    server.spec = side_command(point, point.server_facts, "");
    server.readiness.listening_port = point.port;
    server.readiness.description =
        fmt::format("ibv_rc_pingpong server listening on port {}", point.port);
    commands.server = std::move(server);
    commands.client = side_command(point, point.client_facts, point.server->address());
    return commands;
  }

  ParseOutcome parse(const CommandResult* server, const CommandResult& client,
                     const PointContext& point) const override {
    ParseOutcome outcome;
    PingpongOutput client_output = parse_pingpong_output(client.output());
    outcome.details["client"] = pingpong_output_to_json(client_output);
    std::optional<PingpongOutput> server_output;
    if (server != nullptr) {
      server_output = parse_pingpong_output(server->output());
      outcome.details["server"] = pingpong_output_to_json(*server_output);
    }
    std::string server_error =
        server_output && server_output->error_line > 0 ? server_output->error : "";
    outcome.error = paired_tool_error(client_output.error, client, server_error);
    if (!outcome.error.empty()) {
      return outcome;
    }
    const PingpongResult& result = client_output.results.back();
    std::uint64_t iterations =
        point.params.has("iterations") ? point.params.integer("iterations") : 100;
    if (result.iters != iterations) {
      outcome.error =
          fmt::format("client reports {} iterations, {} were asked for", result.iters, iterations);
      return outcome;
    }
    outcome.metrics = pingpong_metrics(result);
    outcome.ok = true;
    return outcome;
  }

 private:
  static CommandSpec side_command(const PointContext& point, const HostFacts& facts,
                                  const std::string& server_address) {
    const PointParams& p = point.params;
    CommandSpec spec;
    spec.timeout = point.timeout;
    spec.argv = {"ibv_rc_pingpong"};
    if (has_instance_device(facts)) {
      spec.argv.insert(spec.argv.end(), {"-d", use_instance_device(facts, spec)});
    } else if (std::string device = host_fact(facts, "rdma_device"); !device.empty()) {
      spec.argv.insert(spec.argv.end(), {"-d", device});
    }
    if (std::string gid = gid_index_for(facts, p); !gid.empty()) {
      spec.argv.insert(spec.argv.end(), {"-g", gid});
    }
    spec.argv.insert(spec.argv.end(),
                     {"-n", p.has("iterations") ? p.text("iterations") : "100", "-s",
                      p.has("size") ? p.text("size") : "4096", "-p", std::to_string(point.port)});
    if (p.has("validate") && p.flag("validate")) {
      spec.argv.push_back("-c");
    }
    if (!server_address.empty()) {
      spec.argv.push_back(server_address);
    }
    return spec;
  }
};

}  // namespace

const Benchmark& pingpong_benchmark() {
  static const PingpongBenchmark benchmark;
  return benchmark;
}

}  // namespace ernic
