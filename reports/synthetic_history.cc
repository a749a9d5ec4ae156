#include "synthetic_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <random>
#include <stdexcept>

#include "history/history_file.h"
#include "history/statistics.h"

namespace ernic::reports {
namespace {

std::string timestamp(std::size_t index, const char* format) {
  std::time_t t = 1780000000 + static_cast<std::time_t>(index) * 3600;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[40];
  std::strftime(text, sizeof text, format, &tm);
  return text;
}

double round_to(double value, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

struct PointSpec {
  const char* kind;  // bw | lat | tcp
  const char* verb;
  std::uint64_t size;
};

}  // namespace

nlohmann::json synthetic_record(std::size_t index, const SyntheticOptions& options) {
  std::mt19937_64 rng(options.seed * 1000003 + index);
  std::normal_distribution<double> noise(1.0, options.noise);
  const std::string& runner = options.runner_classes[index % options.runner_classes.size()];
  bool hosted = runner == "github-hosted";
  std::string run_id = fmt::format("{}", 40000000000ULL + index);
  std::string sha = fmt::format("{:08x}", static_cast<std::uint32_t>(rng()));

  static constexpr PointSpec kPoints[] = {
      {"bw", "send", 4096},     {"bw", "send", 65536}, {"bw", "send", 1048576},
      {"bw", "write", 65536},   {"lat", "send", 4096}, {"lat", "send", 65536},
      {"lat", "send", 1048576}, {"tcp", "", 0},
  };
  nlohmann::json points = nlohmann::json::array();
  nlohmann::json series_bw = nlohmann::json::object();
  nlohmann::json series_lat = nlohmann::json::object();
  double tcp_median = 0;
  for (const auto& spec : kPoints) {
    nlohmann::json point;
    nlohmann::json samples = nlohmann::json::array();
    std::vector<double> primary;
    double scale = hosted ? 0.6 : 1.0;
    for (std::size_t rep = 1; rep <= options.repetitions; ++rep) {
      nlohmann::json metrics;
      std::string kind = spec.kind;
      if (kind == "bw") {
        double base = spec.size == 4096 ? 0.3 : (spec.size == 65536 ? 2.4 : 5.5);
        double avg = round_to(base * scale * noise(rng), 3);
        metrics = {{"bw_avg_GBs", avg},
                   {"bw_peak_GBs", round_to(avg * 1.04, 3)},
                   {"msg_rate_mpps", round_to(avg * 1e3 / static_cast<double>(spec.size), 4)}};
        primary.push_back(avg * 1.04);
      } else if (kind == "lat") {
        double base = spec.size == 4096 ? 245 : (spec.size == 65536 ? 257 : 673);
        double typical = round_to(base / scale * noise(rng), 2);
        metrics = {{"lat_typical_us", typical}, {"lat_p99_us", round_to(typical * 1.3, 2)}};
        primary.push_back(typical);
      } else {
        double bw = round_to(0.34 * scale * noise(rng), 3);
        metrics = {{"bandwidth_GBs", bw}};
        primary.push_back(bw);
      }
      samples.push_back(
          {{"rep", rep}, {"warm", rep > 1}, {"duration_s", 1.5}, {"metrics", metrics}});
    }
    double median = ernic::median(primary);
    std::string kind = spec.kind;
    if (kind == "tcp") {
      point = {{"id", "tcp[protocol=tcp,reverse=false]"},
               {"benchmark", "tcp"},
               {"tool", "iperf3"},
               {"params", {{"protocol", "tcp"}, {"reverse", "false"}, {"duration", "2000"}}},
               {"commands",
                {{"server", "iperf3 -s -1 --bind 10.77.0.1 -J"},
                 {"client", "iperf3 -c 10.77.0.1 -t 2 -b 0 -J"}}},
               {"metrics", {{"bandwidth_GBs", {{"unit", "GB/s"}, {"better", "higher"}}}}}};
      tcp_median = median;
    } else {
      std::string tool = fmt::format("ib_{}_{}", spec.verb, kind);
      point = {
          {"id", fmt::format("{}[verb={},size={}]", kind, spec.verb, spec.size)},
          {"benchmark", kind == "bw" ? "bandwidth" : "latency"},
          {"tool", "perftest"},
          {"params", {{"verb", spec.verb}, {"size", std::to_string(spec.size)}}},
          {"commands",
           {{"server", fmt::format("{} -d rxe0 -x 1 -s {} -n 1000", tool, spec.size)},
            {"client", fmt::format("{} -d rxe0 -x 1 -s {} -n 1000 10.77.0.1", tool, spec.size)}}}};
      if (kind == "bw") {
        point["metrics"] = {{"bw_avg_GBs", {{"unit", "GB/s"}, {"better", "higher"}}},
                            {"bw_peak_GBs", {{"unit", "GB/s"}, {"better", "higher"}}},
                            {"msg_rate_mpps", {{"unit", "Mpps"}, {"better", "higher"}}}};
        if (std::string(spec.verb) == "send") {
          series_bw[std::to_string(spec.size)] = round_to(median, 3);
        }
      } else {
        point["metrics"] = {{"lat_typical_us", {{"unit", "us"}, {"better", "lower"}}},
                            {"lat_p99_us", {{"unit", "us"}, {"better", "lower"}}}};
        series_lat[std::to_string(spec.size)] = round_to(median, 2);
      }
    }
    point["status"] = "passed";
    point["reason"] = nullptr;
    point["repetitions"] = options.repetitions;
    point["log"] =
        fmt::format("steps/{:03}-{}.log", points.size() + 1, point["id"].get<std::string>());
    point["samples"] = std::move(samples);
    points.push_back(std::move(point));
  }
  nlohmann::json record;
  record["generated"] = timestamp(index, "%Y-%m-%d %H:%M:%S UTC");
  record["sha"] = sha;
  record["run_id"] = run_id;
  record["node"] = hosted ? "fv-az123" : "ernic-lab-1";
  record["runner"] = runner;
  record["series"] = {{"bandwidth", series_bw}, {"latency", series_lat}};
  record["badges"] = {{"rdma_bw_GBs", series_bw["1048576"]},
                      {"tcp_bw_GBs", round_to(tcp_median, 3)},
                      {"nvmeof_iops_M", nullptr}};
  record["ernicctl"] = {
      {"schema", 1},
      {"version", "0.1.0"},
      {"git_sha", sha},
      {"status", "passed"},
      {"started", timestamp(index, "%Y-%m-%dT%H:%M:%SZ")},
      {"duration_s", 42.5},
      {"run_dir", fmt::format("runs/{}-synthetic", timestamp(index, "%Y%m%dT%H%M%SZ"))},
      {"scenario",
       {{"name", "synthetic"},
        {"path", "scenarios/synthetic.yaml"},
        {"sha256", fmt::format("{:016x}", options.seed)}}},
      {"accelerator", "kvm"},
      {"functional_only", false},
      {"environment",
       {{"hostname", record["node"]},
        {"kernel", "6.1.0-28-amd64"},
        {"cpu_model", "synthetic CPU"},
        {"cpu_cores", 2}}},
      {"hosts",
       {{{"name", "guest1"},
         {"provider", "libvirt"},
         {"address", "192.168.200.10"},
         {"t_init_s", round_to(30 * noise(rng), 2)},
         {"vcpus", 4}},
        {{"name", "guest2"},
         {"provider", "libvirt"},
         {"address", "192.168.200.20"},
         {"t_init_s", round_to(31 * noise(rng), 2)},
         {"vcpus", 4}}}},
      {"tools", {{"perftest", "6.06"}, {"iperf3", "3.12"}}},
      {"emulator", {{"kind", "embedded"}}},
      {"points", std::move(points)},
      {"ab_pairs",
       {{{"name", "write vs send at 64 KiB"},
         {"a", "bw[verb=send,size=65536]"},
         {"b", "bw[verb=write,size=65536]"},
         {"metric", "bw_avg_GBs"}}}},
  };
  return record;
}

void write_synthetic_history(const std::filesystem::path& file, const SyntheticOptions& options) {
  if (options.runner_classes.empty()) {
    throw std::invalid_argument("synthetic history needs at least one runner class");
  }
  if (file.has_parent_path()) {
    std::filesystem::create_directories(file.parent_path());
  }
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  for (std::size_t i = 0; i < options.records; ++i) {
    out << serialize_history_record(synthetic_record(i, options)) << '\n';
  }
  if (!out) {
    throw std::runtime_error(fmt::format("cannot write {}", file.string()));
  }
}

}  // namespace ernic::reports
