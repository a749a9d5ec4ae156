// The iperf3 benchmark module: TCP and UDP streams between two hosts.
#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "benchmarks/benchmark.h"
#include "benchmarks/iperf3_parser.h"
#include "benchmarks/registry.h"
#include "history/history_record.h"

namespace ernic {
namespace {

class Iperf3Benchmark final : public Benchmark {
 public:
  std::optional<OutputParser> output_parser() const override {
    return OutputParser{"iperf3", "iperf3 -J or --json-stream output (client or server side)",
                        &parse_iperf3_file};
  }
  std::string_view tool() const override { return "iperf3"; }
  std::string_view description() const override {
    return "iperf3 TCP/UDP throughput from the client host to the server host (-J output)";
  }

  const ObjectSchema& params() const override {
    static const ObjectSchema schema{
        .description = "iperf3 parameters",
        .fields = {
            {.name = "protocol",
             .kind = ValueKind::kEnum,
             .description = "tcp or udp",
             .matrix = true,
             .enum_values = {"tcp", "udp"},
             .default_text = "tcp"},
            {.name = "reverse",
             .kind = ValueKind::kBoolean,
             .description = "Server sends, client receives (-R)",
             .matrix = true,
             .default_text = "false"},
            {.name = "parallel",
             .kind = ValueKind::kInteger,
             .description = "Parallel streams (-P)",
             .matrix = true,
             .default_text = "1",
             .minimum = 1,
             .maximum = 128},
            {.name = "duration",
             .kind = ValueKind::kDuration,
             .description = "Test length (-t)",
             .default_text = "10s"},
            {.name = "omit",
             .kind = ValueKind::kDuration,
             .description = "Warm-up left out of the result (-O)",
             .default_text = "0s"},
            {.name = "bitrate",
             .kind = ValueKind::kBandwidth,
             .description = "Target rate passed verbatim to -b; 0 = unlimited. Very low caps "
                            "such as 10K stall TCP",
             .matrix = true,
             .default_text = "0 for tcp, 100M for udp"},
            {.name = "length", .kind = ValueKind::kSize, .description = "Buffer length (-l)"},
        }};
    return schema;
  }

  std::vector<MetricInfo> metrics() const override {
    return {{"bandwidth_GBs", "GB/s", Better::kHigher},
            {"sender_bandwidth_GBs", "GB/s", Better::kHigher},
            {"retransmits", "count", Better::kLower},
            {"jitter_ms", "ms", Better::kLower},
            {"lost_pct", "%", Better::kLower},
            {"cpu_host_pct", "%", Better::kLower},
            {"cpu_remote_pct", "%", Better::kLower}};
  }

  std::vector<Program> programs() const override { return {{"iperf3", "iperf3"}}; }

  std::optional<CommandSpec> version_command() const override {
    return CommandSpec{
        .argv = {"iperf3", "--version"}, .timeout = std::chrono::seconds(5), .env = {}};
  }
  // "iperf 3.12 (cJSON 1.7.15)" -> "3.12"
  std::string parse_version(const CommandResult& result) const override {
    std::istringstream words(result.out.substr(0, result.out.find('\n')));
    std::string name, version;
    words >> name >> version;
    return name == "iperf" ? version : "";
  }

  PointCommands commands(const PointContext& point) const override {
    const PointParams& p = point.params;
    std::string port = std::to_string(point.port);
    PointCommands commands;
    ServerCommand server;
    server.spec.argv = {"iperf3", "-s", "-1", "--bind", point.server->address(), "-p", port};
    server.spec.timeout = point.timeout;
    // iperf3 -s -1 serves exactly one client, and a connect probe would be that client: the
    // server is ready when its listening socket exists.
    server.readiness.listening_port = point.port;
    server.readiness.description = fmt::format("iperf3 server listening on port {}", port);
    commands.server = std::move(server);

    bool udp = p.text("protocol") == "udp";
    std::string bitrate = p.has("bitrate") ? p.text("bitrate") : (udp ? "100M" : "0");
    double seconds = p.milliseconds("duration") / 1000.0;
    auto& argv = commands.client.argv;
    argv = {"iperf3",
            "-c",
            point.server->address(),
            "-p",
            port,
            "-J",
            "-t",
            fmt::format("{}", std::max(1.0, std::ceil(seconds))),
            "-b",
            bitrate,
            "--connect-timeout",
            "5000"};
    if (p.integer("parallel") > 1) {
      argv.insert(argv.end(), {"-P", p.text("parallel")});
    }
    if (p.flag("reverse")) {
      argv.push_back("-R");
    }
    if (udp) {
      argv.push_back("-u");
    }
    if (double omit = p.milliseconds("omit") / 1000.0; omit > 0) {
      argv.insert(argv.end(), {"-O", fmt::format("{}", std::ceil(omit))});
    }
    if (p.has("length")) {
      argv.insert(argv.end(), {"-l", p.text("length")});
    }
    commands.client.timeout = point.timeout;
    return commands;
  }

  ParseOutcome parse(const CommandResult* /*server*/, const CommandResult& client,
                     const PointContext& /*point*/) const override {
    ParseOutcome outcome;
    // iperf3 -J exits 0 on some failures and 1 on others; the JSON says which it was.
    try {
      Iperf3Result result = parse_iperf3(client.out + client.err);
      outcome.details = result.to_json();
      outcome.metrics["bandwidth_GBs"] = result.bandwidth_bits_per_second() / 8e9;
      if (!result.interval_bits_per_second.empty()) {
        std::vector<double> rates;
        for (double bits : result.interval_bits_per_second) {
          rates.push_back(bits / 8e9);
        }
        outcome.distributions[kBandwidthDistribution] =
            Distribution::series(std::move(rates), result.interval_s.value_or(1.0));
      }
      if (result.sender_bits_per_second) {
        outcome.metrics["sender_bandwidth_GBs"] = *result.sender_bits_per_second / 8e9;
      }
      if (result.retransmits) {
        outcome.metrics["retransmits"] = static_cast<double>(*result.retransmits);
      }
      if (result.jitter_ms) {
        outcome.metrics["jitter_ms"] = *result.jitter_ms;
      }
      if (result.lost_percent) {
        outcome.metrics["lost_pct"] = *result.lost_percent;
      }
      if (result.cpu_host_percent) {
        outcome.metrics["cpu_host_pct"] = *result.cpu_host_percent;
      }
      if (result.cpu_remote_percent) {
        outcome.metrics["cpu_remote_pct"] = *result.cpu_remote_percent;
      }
      outcome.ok = client.ok();
      if (!outcome.ok) {
        outcome.error = fmt::format("iperf3 client: {}", client.describe());
      }
    } catch (const ParseError& e) {
      outcome.error = e.what();
      if (!client.ok()) {
        outcome.error += fmt::format(" (client {})", client.describe());
      }
    }
    return outcome;
  }

  void publish(const PointSummary& point, const std::vector<std::uint64_t>& /*tracked_sizes*/,
               PublishedFigures& figures) const override {
    const PointParams& p = *point.params;
    auto bandwidth = point.median.find("bandwidth_GBs");
    if (p.text("protocol") == "tcp" && !p.flag("reverse") && bandwidth != point.median.end() &&
        !figures.badges.contains(badge_key(Badge::kTcp))) {
      figures.badges[badge_key(Badge::kTcp)] = bandwidth->second;
    }
  }
};

}  // namespace

const Benchmark& iperf3_benchmark() {
  static const Iperf3Benchmark benchmark;
  return benchmark;
}

}  // namespace ernic
