#include "synthetic_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <random>
#include <stdexcept>

#include "base/durable_file.h"
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

constexpr PointSpec kPoints[] = {
    {"bw", "send", 4096},  {"bw", "send", 65536},  {"bw", "send", 1048576},  {"bw", "write", 65536},
    {"lat", "send", 4096}, {"lat", "send", 65536}, {"lat", "send", 1048576}, {"tcp", "", 0},
};

// The random part of a record, deterministic for a seed and index: the draws are taken in one
// fixed order (the sha, then each sample, then the hosts' T_init).
class Draws {
 public:
  Draws(std::uint64_t seed, double spread) : rng_(seed), noise_(1.0, spread) {}
  std::uint32_t bits() { return static_cast<std::uint32_t>(rng_()); }
  double noise() { return noise_(rng_); }

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<double> noise_;
};

struct Sample {
  nlohmann::json metrics;
  double primary;  // the value the point's series and badges take the median of
};

// One repetition's metrics; `scale` slows down the github-hosted runners.
Sample synthetic_sample(const PointSpec& spec, double scale, Draws& draws) {
  std::string kind = spec.kind;
  if (kind == "bw") {
    double base = spec.size == 4096 ? 0.3 : (spec.size == 65536 ? 2.4 : 5.5);
    double avg = round_to(base * scale * draws.noise(), 3);
    return {{{"bw_avg_GBs", avg},
             {"bw_peak_GBs", round_to(avg * 1.04, 3)},
             {"msg_rate_mpps", round_to(avg * 1e3 / static_cast<double>(spec.size), 4)}},
            avg * 1.04};
  }
  if (kind == "lat") {
    double base = spec.size == 4096 ? 245 : (spec.size == 65536 ? 257 : 673);
    double typical = round_to(base / scale * draws.noise(), 2);
    return {{{"lat_typical_us", typical}, {"lat_p99_us", round_to(typical * 1.3, 2)}}, typical};
  }
  double bw = round_to(0.34 * scale * draws.noise(), 3);
  return {{{"bandwidth_GBs", bw}}, bw};
}

// What the point is: id, tool, parameters, commands and the metrics it declares.
nlohmann::json point_description(const PointSpec& spec) {
  std::string kind = spec.kind;
  if (kind == "tcp") {
    return {{"id", "tcp[protocol=tcp,reverse=false]"},
            {"benchmark", "tcp"},
            {"tool", "iperf3"},
            {"params", {{"protocol", "tcp"}, {"reverse", "false"}, {"duration", "2000"}}},
            {"commands",
             {{"server", "iperf3 -s -1 --bind 10.77.0.1 -J"},
              {"client", "iperf3 -c 10.77.0.1 -t 2 -b 0 -J"}}},
            {"metrics", {{"bandwidth_GBs", {{"unit", "GB/s"}, {"better", "higher"}}}}}};
  }
  std::string tool = fmt::format("ib_{}_{}", spec.verb, kind);
  nlohmann::json point = {
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
  } else {
    point["metrics"] = {{"lat_typical_us", {{"unit", "us"}, {"better", "lower"}}},
                        {"lat_p99_us", {{"unit", "us"}, {"better", "lower"}}}};
  }
  return point;
}

// The medians the record's series and badges show.
struct Medians {
  nlohmann::json bandwidth = nlohmann::json::object();  // send, by size
  nlohmann::json latency = nlohmann::json::object();
  double tcp = 0;

  void add(const PointSpec& spec, double median) {
    std::string kind = spec.kind;
    if (kind == "tcp") {
      tcp = median;
    } else if (kind == "bw") {
      if (std::string(spec.verb) == "send") {
        bandwidth[std::to_string(spec.size)] = round_to(median, 3);
      }
    } else {
      latency[std::to_string(spec.size)] = round_to(median, 2);
    }
  }
};

nlohmann::json synthetic_points(const SyntheticOptions& options, double scale, Draws& draws,
                                Medians& medians) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& spec : kPoints) {
    nlohmann::json samples = nlohmann::json::array();
    std::vector<double> primary;
    for (std::size_t rep = 1; rep <= options.repetitions; ++rep) {
      Sample sample = synthetic_sample(spec, scale, draws);
      primary.push_back(sample.primary);
      samples.push_back(
          {{"rep", rep}, {"warm", rep > 1}, {"duration_s", 1.5}, {"metrics", sample.metrics}});
    }
    medians.add(spec, ernic::median(primary));
    nlohmann::json point = point_description(spec);
    point["status"] = "passed";
    point["reason"] = nullptr;
    point["repetitions"] = options.repetitions;
    point["log"] =
        fmt::format("steps/{:03}-{}.log", points.size() + 1, point["id"].get<std::string>());
    point["samples"] = std::move(samples);
    points.push_back(std::move(point));
  }
  return points;
}

nlohmann::json ernicctl_part(std::size_t index, const SyntheticOptions& options,
                             const std::string& sha, const std::string& node, nlohmann::json points,
                             Draws& draws) {
  return {
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
       {{"hostname", node},
        {"kernel", "6.1.0-28-amd64"},
        {"cpu_model", "synthetic CPU"},
        {"cpu_cores", 2}}},
      {"hosts",
       {{{"name", "guest1"},
         {"provider", "libvirt"},
         {"address", "192.168.200.10"},
         {"t_init_s", round_to(30 * draws.noise(), 2)},
         {"vcpus", 4}},
        {{"name", "guest2"},
         {"provider", "libvirt"},
         {"address", "192.168.200.20"},
         {"t_init_s", round_to(31 * draws.noise(), 2)},
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
}

}  // namespace

nlohmann::json synthetic_record(std::size_t index, const SyntheticOptions& options) {
  Draws draws(options.seed * 1000003 + index, options.noise);
  const std::string& runner = options.runner_classes[index % options.runner_classes.size()];
  bool hosted = runner == "github-hosted";
  std::string sha = fmt::format("{:08x}", draws.bits());
  Medians medians;
  nlohmann::json points = synthetic_points(options, hosted ? 0.6 : 1.0, draws, medians);

  nlohmann::json record;
  record["generated"] = timestamp(index, "%Y-%m-%d %H:%M:%S UTC");
  record["sha"] = sha;
  record["run_id"] = fmt::format("{}", 40000000000ULL + index);
  record["node"] = hosted ? "fv-az123" : "ernic-lab-1";
  record["runner"] = runner;
  record["series"] = {{"bandwidth", medians.bandwidth}, {"latency", medians.latency}};
  record["badges"] = {{"rdma_bw_GBs", medians.bandwidth["1048576"]},
                      {"tcp_bw_GBs", round_to(medians.tcp, 3)},
                      {"nvmeof_iops_M", nullptr}};
  record["ernicctl"] = ernicctl_part(index, options, sha, record["node"].get<std::string>(),
                                     std::move(points), draws);
  return record;
}

void write_synthetic_history(const std::filesystem::path& file, const SyntheticOptions& options) {
  if (options.runner_classes.empty()) {
    throw std::invalid_argument("synthetic history needs at least one runner class");
  }
  // A thousand records a part: 100,000 records are most of a gigabyte, too much to hold.
  constexpr std::size_t kRecordsPerPart = 1000;
  std::size_t next = 0;
  write_file_durably_in_parts(
      file,
      [&](std::string& part) {
        part.clear();
        for (std::size_t end = std::min(next + kRecordsPerPart, options.records); next < end;
             ++next) {
          part += serialize_history_record(synthetic_record(next, options));
          part += '\n';
        }
        return !part.empty();
      },
      {.durability = Durability::kDerived});
}

}  // namespace ernic::reports
