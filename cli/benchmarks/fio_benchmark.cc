// The fio benchmark module: block I/O on the client host (rocm-ernic runs it against the
// emulator's NVMe-oF target), read from fio's JSON output.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "benchmarks/benchmark.h"
#include "benchmarks/fio_parser.h"
#include "benchmarks/registry.h"
#include "history/history_record.h"

namespace ernic {
namespace {

constexpr std::uint64_t kBadgeBlockSize = 4096;  // nvmeof_iops_M is a small-block figure
// fio prints a cumulative report this often (--status-interval): the point's progress over time.
constexpr double kStatusIntervalMs = 1000;

// fio reads a bare number as seconds and accepts "ms".
std::string fio_time(double milliseconds) {
  auto whole = static_cast<std::uint64_t>(std::llround(milliseconds));
  return whole % 1000 == 0 ? std::to_string(whole / 1000) : std::to_string(whole) + "ms";
}

class FioBenchmark final : public Benchmark {
 public:
  std::optional<OutputParser> output_parser() const override { return fio_output_parser(); }
  std::string_view tool() const override { return "fio"; }
  std::string_view description() const override {
    return "fio block I/O on the client host (--output-format=json, a report every second)";
  }
  bool needs_server() const override { return false; }

  const ObjectSchema& params() const override {
    static const ObjectSchema schema{
        .description = "fio parameters",
        .fields = {
            {.name = "filename",
             .kind = ValueKind::kString,
             .description = "The file or block device to test, e.g. /dev/nvme0n1",
             .required = true},
            {.name = "rw",
             .kind = ValueKind::kEnum,
             .description = "I/O pattern (--rw)",
             .matrix = true,
             .enum_values = {"read", "write", "randread", "randwrite", "readwrite", "randrw"},
             .default_text = "randread"},
            {.name = "bs",
             .kind = ValueKind::kSize,
             .description = "Block size (--bs)",
             .matrix = true,
             .default_text = "4KiB"},
            {.name = "size",
             .kind = ValueKind::kSize,
             .description = "Bytes of the target to use (--size)",
             .default_text = "64MiB"},
            {.name = "iodepth",
             .kind = ValueKind::kInteger,
             .description = "I/Os in flight (--iodepth)",
             .matrix = true,
             .default_text = "32",
             .minimum = 1},
            {.name = "ioengine",
             .kind = ValueKind::kString,
             .description = "--ioengine",
             .default_text = "libaio"},
            {.name = "direct",
             .kind = ValueKind::kBoolean,
             .description = "Bypass the page cache (--direct=1)",
             .default_text = "true"},
            {.name = "runtime",
             .kind = ValueKind::kDuration,
             .description = "Run time (--runtime with --time_based)",
             .default_text = "10s"},
        }};
    return schema;
  }

  std::vector<MetricInfo> metrics() const override {
    return {{"iops", "IO/s", Better::kHigher},         {"iops_M", "MIO/s", Better::kHigher},
            {"bw_avg_GBs", "GB/s", Better::kHigher},   {"read_iops", "IO/s", Better::kHigher},
            {"write_iops", "IO/s", Better::kHigher},   {"read_bw_GBs", "GB/s", Better::kHigher},
            {"write_bw_GBs", "GB/s", Better::kHigher}, {"clat_mean_us", "us", Better::kLower},
            {"clat_p50_us", "us", Better::kLower},     {"clat_p99_us", "us", Better::kLower},
            {"clat_p999_us", "us", Better::kLower}};
  }

  std::vector<Program> programs() const override { return {{"fio", "fio"}}; }

  PointCommands commands(const PointContext& point) const override {
    const PointParams& p = point.params;
    auto text_or = [&](const char* name, const char* fallback) {
      return p.has(name) ? p.text(name) : std::string(fallback);
    };
    PointCommands commands;
    commands.client.timeout = point.timeout;
    commands.client.argv = {
        "fio",
        "--name=ernic",
        "--filename=" + text_or("filename", ""),
        "--rw=" + text_or("rw", "randread"),
        "--bs=" + text_or("bs", "4096"),
        "--size=" + text_or("size", "67108864"),
        "--iodepth=" + text_or("iodepth", "32"),
        "--ioengine=" + text_or("ioengine", "libaio"),
        fmt::format("--direct={}", !p.has("direct") || p.flag("direct") ? 1 : 0),
        "--runtime=" + fio_time(p.has("runtime") ? p.milliseconds("runtime") : 10000.0),
        "--time_based",
        "--group_reporting",
        "--output-format=json",
        "--status-interval=" + fio_time(kStatusIntervalMs)};
    return commands;
  }

  ParseOutcome parse(const CommandResult* /*server*/, const CommandResult& client,
                     const PointContext& /*point*/) const override {
    ParseOutcome outcome;
    FioOutput output = parse_fio_output(client.out);
    outcome.details = fio_output_to_json(output);
    if (!output.error.empty()) {
      outcome.error = output.error;
      if (!client.ok()) {
        outcome.error += fmt::format(" (fio {}", client.describe());
        if (auto line = first_line(client.err); !line.empty()) {
          outcome.error += ": " + line;
        }
        outcome.error += ")";
      }
      return outcome;
    }
    if (!client.ok()) {
      outcome.error = fmt::format("fio {} although it printed a result", client.describe());
      return outcome;
    }
    outcome.metrics = fio_metrics(output);
    std::vector<double> rates = fio_interval_rates(output, kStatusIntervalMs);
    if (!rates.empty()) {
      for (double& rate : rates) {
        rate /= 1e9;  // GB/s, as bw_avg_GBs
      }
      outcome.distributions[kBandwidthDistribution] =
          Distribution::series(std::move(rates), kStatusIntervalMs / 1000);
    }
    outcome.ok = true;
    return outcome;
  }

  void publish(const PointSummary& point, const std::vector<std::uint64_t>& tracked_sizes,
               PublishedFigures& figures) const override {
    const PointParams& p = *point.params;
    if (!p.has("bs")) {
      return;
    }
    std::uint64_t bs = p.bytes("bs");
    if (auto bw = point.median.find("bw_avg_GBs");
        bw != point.median.end() &&
        std::find(tracked_sizes.begin(), tracked_sizes.end(), bs) != tracked_sizes.end()) {
      figures.series[series_key(Series::kNvmeof)].try_emplace(std::to_string(bs), bw->second);
    }
    if (auto iops = point.median.find("iops_M");
        iops != point.median.end() && bs == kBadgeBlockSize) {
      figures.badges.try_emplace(badge_key(Badge::kNvmeof), iops->second);
    }
  }

 private:
  static std::string first_line(const std::string& text) {
    auto start = text.find_first_not_of(" \t\r\n");
    if (start == std::string::npos) {
      return "";
    }
    return text.substr(start, text.find('\n', start) - start);
  }
};

}  // namespace

const Benchmark& fio_benchmark() {
  static const FioBenchmark benchmark;
  return benchmark;
}

}  // namespace ernic
