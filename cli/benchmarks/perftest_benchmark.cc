// The perftest benchmark module: ib_{send,write,read}_{bw,lat} between a server host and a
// client host. On hosts attached to embedded emulator instances it runs under the instance's
// verbs environment, or (`program: load-generator`) ernicctl's own load generator instead.
#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "benchmarks/benchmark.h"
#include "benchmarks/instance_device.h"
#include "benchmarks/perftest_errors.h"
#include "benchmarks/perftest_parser.h"
#include "benchmarks/registry.h"
#include "history/history_record.h"

namespace ernic {
namespace {

constexpr std::uint64_t kBadgeSize = 1048576;  // rocm-ernic's rdma_bw_GBs badge: send bw, 1 MiB
constexpr const char* kLoadGenerator = "load-generator";

std::vector<std::string> split_args(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) {
    words.push_back(word);
  }
  return words;
}

std::string perftest_program(const std::string& verb, const std::string& mode) {
  return fmt::format("ib_{}_{}", verb, mode);
}

// The offset in `text` of the last character of line `line` (1-based): its newline, or the
// text's last character when it has none; npos when the text has fewer lines.
std::size_t line_end(std::string_view text, int line) {
  std::size_t start = 0;
  for (int at = 1; at < line; ++at) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) {
      return start;
    }
    ++start;
  }
  if (start >= text.size()) {
    return std::string_view::npos;
  }
  std::size_t end = text.find('\n', start);
  return end == std::string_view::npos ? text.size() - 1 : end;
}

// Rung 2 for real perftest, which prints no time to its first QP in RTS: it prints its first
// table row only after its QPs reached RTS, exchanged their addresses and measured, so the time
// from the client's start to the moment that row (up to its newline) arrived is an upper bound.
// nullopt when no arrival times were kept (`ernicctl parse`) or the row was not on stdout.
std::optional<double> time_to_first_row_ms(const CommandResult& client, const PerftestTable& table,
                                           const OutputArrivals& arrivals) {
  if (table.rows.empty()) {
    return std::nullopt;
  }
  // The parser numbered the lines of stdout followed by stderr (CommandResult::output()).
  std::size_t end = line_end(client.output(), table.rows.front().line);
  if (end == std::string_view::npos || end >= client.out.size()) {
    return std::nullopt;
  }
  return arrivals.arrival_ms(end);
}

// Why a repetition failed when one side failed on its own and the other side's errors are only
// the consequence: a server that cannot calibrate its clock exits before the final handshake,
// and its client then "Couldn't read remote address", which points at the network. The side
// that failed first is named first. nullopt when no side did (paired_tool_error() decides).
struct FirstFailure {
  std::string error;
  std::string retryable_cause;  // ParseOutcome::retryable_cause
};
std::optional<FirstFailure> first_failure(const CommandResult* server, const CommandResult& client,
                                          const std::string& server_error,
                                          const std::string& client_error) {
  using perftest_errors::has_independent_error;
  auto with_consequence = [](std::string error, const char* other, const std::string& its) {
    return its.empty() ? error : fmt::format("{}; {}, as a consequence: {}", error, other, its);
  };
  if (server != nullptr) {
    // perftest's own failures first: either side may fail to calibrate its clock.
    struct Side {
      const char* name;
      const CommandResult& result;
      const char* other;
      const CommandResult& other_result;
      const std::string& other_error;
    };
    for (const Side& side : {Side{"server", *server, "client", client, client_error},
                             Side{"client", client, "server", *server, server_error}}) {
      auto own = perftest_errors::own_failure(side.result.output());
      if (own && !has_independent_error(side.other_result.output())) {
        return FirstFailure{with_consequence(fmt::format("{}: {}", side.name, own->message),
                                             side.other, side.other_error),
                            own->transient ? own->cause : ""};
      }
    }
    if (!server_error.empty() && has_independent_error(server->output()) && !client_error.empty() &&
        !has_independent_error(client.output())) {
      return FirstFailure{
          with_consequence(fmt::format("server: {}", server_error), "client", client_error), ""};
    }
  }
  return std::nullopt;
}

class PerftestBenchmark final : public Benchmark {
 public:
  std::optional<OutputParser> output_parser() const override { return perftest_output_parser(); }
  std::string_view tool() const override { return "perftest"; }
  std::string_view description() const override {
    return "perftest RDMA bandwidth and latency (ib_{send,write,read}_{bw,lat}) between two "
           "hosts";
  }

  const ObjectSchema& params() const override {
    static const ObjectSchema schema{
        .description = "perftest parameters",
        .fields = {
            {.name = "program",
             .kind = ValueKind::kEnum,
             .description =
                 "What measures on hosts attached to embedded emulator instances: perftest "
                 "(Debian's ib_* programs through the instance's verbs device) or "
                 "load-generator (`ernicctl perf`, which also prints a row per second of a "
                 "duration-mode bandwidth test: a sustained point's drift). Other hosts run "
                 "perftest and refuse load-generator",
             .enum_values = {"perftest", kLoadGenerator},
             .default_text = "perftest"},
            {.name = "verb",
             .kind = ValueKind::kEnum,
             .description = "RDMA operation",
             .matrix = true,
             .enum_values = {"send", "write", "read"},
             .default_text = "send"},
            {.name = "mode",
             .kind = ValueKind::kEnum,
             .description = "bw (ib_*_bw) or lat (ib_*_lat)",
             .matrix = true,
             .enum_values = {"bw", "lat"},
             .default_text = "bw"},
            {.name = "size",
             .kind = ValueKind::kSize,
             .description = "Message size (-s)",
             .matrix = true,
             .default_text = "64KiB"},
            {.name = "iterations",
             .kind = ValueKind::kInteger,
             .description = "Iterations per size (-n). Above 20000 perftest does not measure "
                            "the bandwidth peak",
             .default_text = "1000",
             .minimum = 1},
            {.name = "duration",
             .kind = ValueKind::kDuration,
             .description = "Run each point for this long instead of `iterations` times "
                            "(perftest's -D, in whole seconds, rounded up): a slow link "
                            "(TCG guests, a loaded machine) then takes the same time as a fast "
                            "one. Bandwidth tests measure no peak in this mode, and latency "
                            "tests only the average"},
            {.name = "sustained",
             .kind = ValueKind::kBoolean,
             .description = "A sustained point (the ladder's rung 4; needs `duration:`, minutes "
                            "rather than seconds): the record adds the drift (median of the last "
                            "tenth of the per-second rates over the first tenth) and the worst "
                            "second. The embedded load generator (`program: load-generator`) "
                            "reports per second; real perftest does not, so its sustained "
                            "points record no drift",
             .default_text = "false",
             .needs = "duration"},
            {.name = "tx_depth",
             .kind = ValueKind::kInteger,
             .description = "Send queue depth (-t)",
             .minimum = 1},
            {.name = "qps",
             .kind = ValueKind::kInteger,
             .description = "Queue pairs (-q)",
             .minimum = 1},
            {.name = "report_gbits",
             .kind = ValueKind::kBoolean,
             .description = "Bandwidth tests print Gb/s (--report_gbits); ignored by latency "
                            "tests",
             .default_text = "true"},
            {.name = "gid_index",
             .kind = ValueKind::kInteger,
             .description = "GID index (-x) when the gid-index setup step did not find one; "
                            "on an embedded emulator instance's device 0 (its first GID) by "
                            "default",
             .minimum = 0},
            {.name = "extra_args",
             .kind = ValueKind::kString,
             .description = "More perftest arguments, separated by spaces (real perftest "
                            "only: `program: load-generator` refuses them)"},
        }};
    return schema;
  }

  std::vector<MetricInfo> metrics() const override {
    return {{"bw_peak_GBs", "GB/s", Better::kHigher},
            {"bw_avg_GBs", "GB/s", Better::kHigher},
            {"msg_rate_mpps", "Mpps", Better::kHigher},
            {"lat_min_us", "us", Better::kLower},
            {"lat_max_us", "us", Better::kLower},
            {"lat_typical_us", "us", Better::kLower},
            {"lat_avg_us", "us", Better::kLower},
            {"lat_stdev_us", "us", Better::kLower},
            {"lat_p99_us", "us", Better::kLower},
            {"lat_p999_us", "us", Better::kLower},
            // Rung 2: from process start to the first QP in RTS (the embedded load generator's).
            {"time_to_first_rts_ms", "ms", Better::kLower},
            // Rung 2's upper bound: from the client's start to its first table row.
            {"time_to_first_row_ms", "ms", Better::kLower}};
  }

  std::string headline_metric(const PointParams& params) const override {
    if (text_or(params, "mode", "bw") != "lat") {
      return "bw_avg_GBs";
    }
    // Duration mode (-D) measures only the average latency.
    return params.has("duration") ? "lat_avg_us" : "lat_typical_us";
  }

  std::vector<Program> programs_for(const HostFacts& facts,
                                    const PointParams& params) const override {
    if (attached_to_instance(facts)) {
      if (load_generator_chosen(params)) {
        return {};  // built into ernicctl
      }
      std::vector<Program> needed = programs();
      for (Program& program : needed) {
        program.instead = "or measure with ernicctl's load generator (`program: load-generator`)";
      }
      return needed;
    }
    return programs();
  }

  std::optional<CommandSpec> version_command() const override {
    return CommandSpec{.argv = {"ib_send_bw", "--version"}, .timeout = std::chrono::seconds(10)};
  }
  // "Version: 6.06" (perftest's own version, not the Debian package's).
  std::string parse_version(const CommandResult& result) const override {
    static const std::regex kVersion(R"(Version: *([0-9][^ \n]*))");
    std::smatch match;
    const std::string output = result.output();
    return std::regex_search(output, match, kVersion) ? match[1].str() : "";
  }

  std::string measured_by(const PointParams& params, const HostFacts& client_facts) const override {
    return attached_to_instance(client_facts) && load_generator_chosen(params)
               ? "ernicctl load generator"
               : "perftest";
  }

  std::vector<Program> programs() const override {
    std::vector<Program> programs;
    for (const char* verb : {"send", "write", "read"}) {
      for (const char* mode : {"bw", "lat"}) {
        programs.push_back({perftest_program(verb, mode), "perftest"});
      }
    }
    return programs;
  }

  PointCommands commands(const PointContext& point) const override {
    PointCommands commands;
    ServerCommand server;
    server.spec = side_command(point, point.server_facts, "");
    server.readiness.listening_port = point.port;
    server.readiness.description = fmt::format(
        "{} server listening on port {}", program_label(point, point.server_facts), point.port);
    commands.server = std::move(server);
    commands.client = side_command(point, point.client_facts, point.server->address());
    return commands;
  }

  ParseOutcome parse(const CommandResult* server, const CommandResult& client,
                     const PointContext& point) const override {
    const PointParams& p = point.params;
    std::string verb = text_or(p, "verb", "send");
    std::string mode = text_or(p, "mode", "bw");
    std::uint64_t size = p.has("size") ? p.bytes("size") : 65536;

    ParseOutcome outcome;
    PerftestOutput client_output = parse_perftest_output(client.output());
    outcome.details["client"] = perftest_output_to_json(client_output);
    std::optional<PerftestOutput> server_output;
    if (server != nullptr) {
      server_output = parse_perftest_output(server->output());
      outcome.details["server"] = perftest_output_to_json(*server_output);
    }

    // A server that printed no table at all is fine (the server of ib_read_lat never does);
    // one that printed an error or a table cut short is not.
    std::string server_error =
        server_output && server_output->error_line > 0 ? server_output->error : "";
    if (auto first = first_failure(server, client, server_error, client_output.error)) {
      outcome.error = std::move(first->error);
      outcome.retryable_cause = std::move(first->retryable_cause);
      return outcome;
    }
    outcome.error = paired_tool_error(client_output.error, client, server_error);
    if (!outcome.error.empty()) {
      return outcome;
    }
    if (server != nullptr && server->term_signal == 0 && !server->timed_out &&
        !server->interrupted && server->exit_code != 0) {
      outcome.error = fmt::format("server {}", server->describe());
      return outcome;
    }

    const PerftestTable* table = client_output.table(PerftestSide::kClient);
    if (table == nullptr) {
      table = &client_output.tables.front();
    }
    if (!table->verb.empty() && (table->verb != verb || to_string(table->mode) != mode)) {
      outcome.error = fmt::format("client printed a '{}' table, expected {}", table->test,
                                  perftest_program(verb, mode));
      return outcome;
    }
    const PerftestRow* row = table->row_for_size(size);
    if (row == nullptr) {
      std::string sizes;
      for (const auto& each : table->rows) {
        sizes += (sizes.empty() ? "" : ", ") + std::to_string(each.bytes);
      }
      outcome.error = fmt::format("client table has no row for size {} (sizes: {})", size, sizes);
      return outcome;
    }
    outcome.metrics = perftest_row_metrics(*table, *row);
    if (client_output.time_to_first_rts_ms) {
      outcome.metrics["time_to_first_rts_ms"] = *client_output.time_to_first_rts_ms;
    }
    if (auto first_row = time_to_first_row_ms(client, *table, point.client_arrivals)) {
      outcome.metrics["time_to_first_row_ms"] = *first_row;
    }
    if (auto distribution = perftest_row_distribution(*table, *row)) {
      outcome.distributions[distribution->kind] = std::move(distribution->distribution);
    }
    if (p.has("duration")) {
      // -D prints 0 for the peak it does not measure.
      outcome.metrics.erase("bw_peak_GBs");
    }
    // Duration mode (-D) prints only t_avg; every other latency table has t_min.
    bool measured = mode == "bw" ? outcome.metrics.contains("bw_avg_GBs")
                                 : outcome.metrics.contains("lat_min_us") ||
                                       outcome.metrics.contains("lat_avg_us");
    if (!measured) {
      outcome.metrics.clear();
      outcome.error = fmt::format("cannot convert the client's '{}' unit to {}", table->unit(),
                                  mode == "bw" ? "GB/s" : "microseconds");
      return outcome;
    }
    outcome.ok = true;
    return outcome;
  }

  void publish(const PointSummary& point, const std::vector<std::uint64_t>& tracked_sizes,
               PublishedFigures& figures) const override {
    const PointParams& p = *point.params;
    if (text_or(p, "verb", "send") != "send" || !p.has("size")) {
      return;
    }
    std::uint64_t size = p.bytes("size");
    bool tracked =
        std::find(tracked_sizes.begin(), tracked_sizes.end(), size) != tracked_sizes.end();
    std::string key = std::to_string(size);
    auto median = [&](const char* metric) -> std::optional<double> {
      auto found = point.median.find(metric);
      return found == point.median.end() ? std::nullopt : std::optional<double>(found->second);
    };
    if (text_or(p, "mode", "bw") == "bw") {
      // rocm-ernic publishes the peak; perftest does not always measure it.
      std::optional<double> value = median("bw_peak_GBs");
      if (!value) {
        value = median("bw_avg_GBs");
      }
      if (!value) {
        return;
      }
      if (tracked) {
        figures.series[series_key(Series::kBandwidth)].try_emplace(key, *value);
      }
      if (size == kBadgeSize) {
        figures.badges.try_emplace(badge_key(Badge::kRdma), *value);
      }
    } else if (auto typical = median("lat_typical_us"); typical && tracked) {
      figures.series[series_key(Series::kLatency)].try_emplace(key, *typical);
    }
  }

 private:
  static std::string text_or(const PointParams& p, const std::string& name,
                             const std::string& fallback) {
    return p.has(name) ? p.text(name) : fallback;
  }

  static bool load_generator_chosen(const PointParams& p) {
    return text_or(p, "program", "perftest") == kLoadGenerator;
  }

  // Whether this side runs the load generator; throws std::invalid_argument, naming the cause,
  // when the point asks for it where it cannot run or with arguments it does not take.
  static bool runs_load_generator(const PointContext& point, const HostFacts& facts,
                                  const char* side) {
    if (!load_generator_chosen(point.params)) {
      return false;
    }
    if (!attached_to_instance(facts)) {
      throw std::invalid_argument(fmt::format(
          "benchmark {}: `program: load-generator` runs only on hosts attached to an embedded "
          "emulator instance (`provider: embedded`), and its {} host is not",
          point.benchmark, side));
    }
    if (point.params.has("extra_args")) {
      throw std::invalid_argument(
          fmt::format("benchmark {}: `extra_args` are perftest's arguments, which ernicctl's "
                      "load generator does not take (`program: load-generator`)",
                      point.benchmark));
    }
    return true;
  }

  static std::string program_label(const PointContext& point, const HostFacts& facts) {
    std::string name = perftest_program(text_or(point.params, "verb", "send"),
                                        text_or(point.params, "mode", "bw"));
    return attached_to_instance(facts) && load_generator_chosen(point.params)
               ? "ernicctl perf " + name.substr(3)
               : name;
  }

  // One side's command line; `server_address` is empty for the server.
  static CommandSpec side_command(const PointContext& point, const HostFacts& facts,
                                  const std::string& server_address) {
    const PointParams& p = point.params;
    std::string verb = text_or(p, "verb", "send");
    std::string mode = text_or(p, "mode", "bw");
    bool bandwidth = mode == "bw";
    CommandSpec spec;
    spec.timeout = point.timeout;
    auto& argv = spec.argv;
    bool generator =
        runs_load_generator(point, facts, server_address.empty() ? "server" : "client");
    if (generator) {
      argv = {host_fact(facts, "ernicctl"), "perf", verb + "_" + mode, "--socket",
              host_fact(facts, "perf_socket")};
      // The load generator's out-of-band listener defaults to loopback; a server reached over a
      // test network (an SSH host attached to an instance) listens on its test address.
      if (server_address.empty() && point.server != nullptr &&
          point.server->address() != "127.0.0.1") {
        argv.insert(argv.end(), {"--bind", point.server->address()});
      }
    } else {
      argv = {perftest_program(verb, mode)};
      if (has_instance_device(facts)) {
        argv.insert(argv.end(), {"-d", use_instance_device(facts, spec)});
      } else if (std::string device = host_fact(facts, "rdma_device"); !device.empty()) {
        argv.insert(argv.end(), {"-d", device});
      }
      if (std::string gid = gid_index_for(facts, p); !gid.empty()) {
        argv.insert(argv.end(), {"-x", gid});
      }
    }
    argv.insert(argv.end(), {"-s", p.has("size") ? p.text("size") : "65536"});
    if (p.has("duration")) {
      const auto seconds = static_cast<long long>(std::ceil(p.milliseconds("duration") / 1000));
      argv.insert(argv.end(), {"-D", std::to_string(std::max(1LL, seconds))});
    } else {
      argv.insert(argv.end(), {"-n", p.has("iterations") ? p.text("iterations") : "1000"});
    }
    if (p.has("tx_depth")) {
      argv.insert(argv.end(), {"-t", p.text("tx_depth")});
    }
    if (p.has("qps")) {
      argv.insert(argv.end(), {"-q", p.text("qps")});
    }
    if (bandwidth && (!p.has("report_gbits") || p.flag("report_gbits"))) {
      argv.push_back("--report_gbits");
    }
    // The distributions the gate tests (docs/reports.md), printed by the client only: every
    // iteration of a latency test, and a row per second of a duration-mode bandwidth test (a flag
    // of the load generator; perftest itself has none that ends).
    bool client = !server_address.empty();
    if (client && !bandwidth && !p.has("duration")) {
      argv.push_back("-H");
    }
    if (client && bandwidth && p.has("duration") && generator) {
      argv.push_back("--report-per-second");
    }
    argv.insert(argv.end(), {"-p", std::to_string(point.port)});
    if (!generator && p.has("extra_args")) {
      for (std::string& word : split_args(p.text("extra_args"))) {
        argv.push_back(std::move(word));
      }
    }
    if (!server_address.empty()) {
      argv.push_back(server_address);
    }
    return spec;
  }
};

}  // namespace

const Benchmark& perftest_benchmark() {
  static const PerftestBenchmark benchmark;
  return benchmark;
}

}  // namespace ernic
