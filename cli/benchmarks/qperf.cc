// The qperf benchmark module: TCP bandwidth and latency between two hosts (qperf's tcp_bw and
// tcp_lat), the plain-TCP baseline an RDMA figure is set beside in an A/B pair.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "benchmarks/benchmark.h"
#include "benchmarks/registry.h"
#include "benchmarks/tool_text.h"

namespace ernic {
namespace {

// `-uu` makes qperf print every figure in its base unit (bytes/sec, ns); the other scales are
// read too, for files saved without it. qperf's prefixes are decimal.
const std::map<std::string_view, double> kRateUnits = {
    {"bytes/sec", 1.0}, {"KB/sec", 1e3}, {"MB/sec", 1e6}, {"GB/sec", 1e9}, {"TB/sec", 1e12}};
const std::map<std::string_view, double> kTimeUnits = {
    {"ns", 1e-3}, {"us", 1.0}, {"ms", 1e3}, {"sec", 1e6}};

// One "name = value unit" line of qperf's report, value scaled by `units`.
std::optional<double> figure(const std::vector<std::string_view>& words,
                             const std::map<std::string_view, double>& units) {
  if (words.size() != 4 || words[1] != "=") {
    return std::nullopt;
  }
  auto value = tool_text::parse_finite_number(words[2]);
  auto unit = units.find(words[3]);
  if (!value || unit == units.end()) {
    return std::nullopt;
  }
  return *value * unit->second;
}

// qperf's report: a "TEST:" heading per test, then indented "name = value unit" lines; a
// failure is "HOST: failed to connect" (or similar) on the heading's next line.
ParsedFile parse_qperf_text(std::string_view text) {
  ParsedFile parsed;
  parsed.data = nlohmann::json::object();
  std::string test;
  int number = 0;
  for (std::string_view line : tool_text::split_lines(text)) {
    ++number;
    auto words = tool_text::split_words(line);
    if (words.empty()) {
      continue;
    }
    if (words.size() == 1 && words[0].back() == ':') {
      test = std::string(words[0].substr(0, words[0].size() - 1));
      continue;
    }
    if (test == "tcp_bw" && words[0] == "bw") {
      if (auto bytes = figure(words, kRateUnits)) {
        parsed.data["bw_GBs"] = *bytes / 1e9;
        continue;
      }
    } else if (test == "tcp_lat" && words[0] == "latency") {
      if (auto us = figure(words, kTimeUnits)) {
        parsed.data["lat_us"] = *us;
        continue;
      }
    } else if (words.size() >= 2 && words[1] == "=") {
      continue;  // a figure we do not record (msg_rate, loc_cpus_used with -v)
    }
    parsed.error = ParseError("qperf", number,
                              fmt::format("not a qperf result: {}", tool_text::printable(line)))
                       .what();
    return parsed;
  }
  if (!parsed.data.contains("bw_GBs") && !parsed.data.contains("lat_us")) {
    parsed.error = ParseError("qperf", 0, "no tcp_bw or tcp_lat result").what();
  }
  return parsed;
}

class QperfBenchmark final : public Benchmark {
 public:
  std::string_view tool() const override { return "qperf"; }
  std::string_view description() const override {
    return "qperf TCP bandwidth and latency (tcp_bw, tcp_lat) from the client to the server host";
  }
  std::optional<OutputParser> output_parser() const override {
    return OutputParser{"qperf", "qperf tcp_bw / tcp_lat report (client side)", &parse_qperf_text};
  }

  const ObjectSchema& params() const override {
    static const ObjectSchema schema{.description = "qperf parameters",
                                     .fields = {
                                         {.name = "size",
                                          .kind = ValueKind::kSize,
                                          .description = "Message size (-m)",
                                          .matrix = true,
                                          .default_text = "64KiB"},
                                         {.name = "duration",
                                          .kind = ValueKind::kDuration,
                                          .description = "Length of each test (-t), whole seconds",
                                          .default_text = "2s"},
                                     }};
    return schema;
  }

  std::vector<MetricInfo> metrics() const override {
    return {{"bw_GBs", "GB/s", Better::kHigher}, {"lat_us", "us", Better::kLower}};
  }
  std::vector<Program> programs() const override { return {{"qperf", "qperf"}}; }
  std::optional<CommandSpec> version_command() const override {
    return CommandSpec{
        .argv = {"qperf", "--version"}, .timeout = std::chrono::seconds(5), .env = {}};
  }
  std::string parse_version(const CommandResult& result) const override {
    auto words = tool_text::split_words(result.out);  // "qperf 0.4.11"
    return words.size() >= 2 && words[0] == "qperf" ? std::string(words[1]) : "";
  }

  PointCommands commands(const PointContext& point) const override {
    std::string port = std::to_string(point.port);
    PointCommands commands;
    ServerCommand server;
    server.spec.argv = {"qperf", "--listen_port", port};
    server.spec.timeout = point.timeout;
    server.readiness.listening_port = point.port;
    server.readiness.description = fmt::format("qperf server listening on port {}", port);
    server.serves_until_stopped = true;  // a qperf server serves clients until it is stopped
    commands.server = std::move(server);
    double seconds = std::max(1.0, std::ceil(point.params.milliseconds("duration") / 1000.0));
    commands.client.argv = {"qperf",
                            point.server->address(),
                            "--listen_port",
                            port,
                            "-uu",
                            "-m",
                            point.params.text("size"),
                            "-t",
                            fmt::format("{}", seconds),
                            "tcp_bw",
                            "tcp_lat"};
    commands.client.timeout = point.timeout;
    return commands;
  }

  ParseOutcome parse(const CommandResult* /*server*/, const CommandResult& client,
                     const PointContext& /*point*/) const override {
    ParseOutcome outcome;
    ParsedFile parsed = parse_qperf_text(client.output());
    outcome.details = parsed.data;
    if (!parsed.error.empty()) {
      outcome.error = client.ok() ? parsed.error
                                  : fmt::format("qperf client {}: {}", client.describe(),
                                                tool_text::trim(client.output()));
      return outcome;
    }
    for (const auto& metric : metrics()) {
      if (parsed.data.contains(metric.name)) {
        outcome.metrics[metric.name] = parsed.data[metric.name].get<double>();
      }
    }
    outcome.ok = client.ok();
    if (!outcome.ok) {
      outcome.error = fmt::format("qperf client {}", client.describe());
    }
    return outcome;
  }
};

}  // namespace

const Benchmark& qperf_benchmark() {
  static const QperfBenchmark benchmark;
  return benchmark;
}

}  // namespace ernic
