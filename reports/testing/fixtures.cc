#include "testing/fixtures.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "history/statistics.h"

namespace ernic::reports::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "ernic-reports-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
}

nlohmann::json make_point(const std::string& id, const std::string& tool,
                          const nlohmann::json& params, const std::string& metric,
                          const std::string& unit, const std::string& better,
                          const std::vector<double>& values, const std::string& status,
                          const std::string& reason) {
  nlohmann::json samples = nlohmann::json::array();
  for (std::size_t i = 0; i < values.size(); ++i) {
    samples.push_back(
        {{"rep", i + 1}, {"warm", i > 0}, {"duration_s", 1.0}, {"metrics", {{metric, values[i]}}}});
  }
  nlohmann::json point = {
      {"id", id},
      {"benchmark", tool == "iperf3" ? "tcp" : "sweep"},
      {"tool", tool},
      {"params", params},
      {"status", status},
      {"reason", reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(reason)},
      {"log", "steps/001-" + id + ".log"},
      {"commands", {{"client", tool + " --client"}, {"server", tool + " --server"}}},
      {"repetitions", values.size()},
      {"metrics", {{metric, {{"unit", unit}, {"better", better}}}}},
      {"samples", samples},
  };
  return point;
}

nlohmann::json make_group(const std::string& name, const std::vector<std::string>& points,
                          const std::vector<std::string>& members,
                          const std::vector<double>& jain_per_repetition) {
  nlohmann::json repetitions = nlohmann::json::array();
  for (std::size_t i = 0; i < jain_per_repetition.size(); ++i) {
    repetitions.push_back({{"rep", i + 1},
                           {"jain_index", jain_per_repetition[i]},
                           {"min_share", 0.4},
                           {"max_share", 0.6}});
  }
  auto stats = ernic::summarize(jain_per_repetition);
  nlohmann::json fairness = {{"metric", "bw_avg_GBs"},
                             {"unit", "GB/s"},
                             {"members", members},
                             {"tenants", members.size()},
                             {"jain_index",
                              {{"n", stats ? stats->n : 0},
                               {"median", stats ? stats->median : 0},
                               {"min", stats ? stats->min : 0},
                               {"max", stats ? stats->max : 0}}},
                             {"min_share", 0.4},
                             {"max_share", 0.6},
                             {"repetitions", repetitions}};
  return {{"group", 1},
          {"name", name},
          {"points", points},
          {"rung", 5},
          {"fairness", nlohmann::json::array({fairness})}};
}

nlohmann::json make_ladder_record(const std::string& run_id) {
  nlohmann::json send = {{"verb", "send"}, {"size", "4096"}};
  nlohmann::json points = nlohmann::json::array();
  points.push_back(make_point("bw[verb=send,size=4096]", "perftest", send, "bw_avg_GBs", "GB/s",
                              "higher", {3.0, 3.2}));
  points[0]["samples"][0]["metrics"]["time_to_first_rts_ms"] = 12.5;
  points[0]["samples"][1]["metrics"]["time_to_first_rts_ms"] = 13.5;
  points[0]["metrics"]["time_to_first_rts_ms"] = {{"unit", "ms"}, {"better", "lower"}};
  nlohmann::json sustained = send;
  sustained["sustained"] = "true";
  points.push_back(make_point("soak[verb=send,size=4096]", "perftest", sustained, "bw_avg_GBs",
                              "GB/s", "higher", {2.5, 2.7}));
  points.push_back(make_point("tenants[verb=send,size=4096]", "perftest", send, "bw_avg_GBs",
                              "GB/s", "higher", {1.5, 1.4}));
  points.push_back(make_point("lat[verb=send,size=4096]", "perftest", send, "lat_typical_us", "us",
                              "lower", {5.0}));
  points.push_back(make_point("lat-loaded[verb=send,size=4096]", "perftest", send, "lat_typical_us",
                              "us", "lower", {9.0, 9.4}));
  for (std::size_t multi : {2, 4}) {
    points[multi]["samples"][0]["tenant"] = 1;
    points[multi]["samples"][1]["tenant"] = 2;
    points[multi]["samples"][1]["rep"] = 1;
  }
  points[2]["summary"]["jain_index"] = {{"n", 1},       {"median", 0.998}, {"mean", 0.998},
                                        {"min", 0.998}, {"max", 0.998},    {"p99", 0.998}};
  points[2]["metrics"]["jain_index"] = {{"unit", ""}, {"better", "higher"}};
  auto record = make_record(run_id, "2026-11-30 05:40:00 UTC", "local", points);
  record["ernicctl"]["ab_pairs"] = {{{"name", "latency under load"},
                                     {"a", "lat[verb=send,size=4096]"},
                                     {"b", "lat-loaded[verb=send,size=4096]"},
                                     {"metric", "lat_typical_us"}}};
  return record;
}

nlohmann::json make_record(const std::string& run_id, const std::string& generated,
                           const std::string& runner, nlohmann::json points,
                           const std::string& status, const std::string& scenario) {
  return {
      {"generated", generated},
      {"sha", run_id.substr(0, 8)},
      {"run_id", run_id},
      {"node", "test-node"},
      {"runner", runner},
      {"series", nlohmann::json::object()},
      {"badges", {{"rdma_bw_GBs", nullptr}, {"tcp_bw_GBs", nullptr}, {"nvmeof_iops_M", nullptr}}},
      {"ernicctl",
       {{"schema", 1},
        {"version", "0.1.0"},
        {"git_sha", "1a2b3c4d"},
        {"status", status},
        {"started", "2026-11-30T05:40:00Z"},
        {"duration_s", 12.5},
        {"run_dir", "runs/" + run_id},
        {"scenario",
         {{"name", scenario}, {"path", "scenarios/" + scenario + ".yaml"}, {"sha256", "abc"}}},
        {"accelerator", "kvm"},
        {"functional_only", false},
        {"hosts",
         {{{"name", "server"},
           {"provider", "netns"},
           {"address", "10.77.0.1"},
           {"t_init_s", 0.02}}}},
        {"tools", {{"iperf3", "3.12"}}},
        {"points", std::move(points)}}},
  };
}

CommandOutcome run_ernicctl(const std::string& arguments) {
  TempDir dir;
  auto out = dir / "out";
  auto err = dir / "err";
  std::string command = std::string(ERNIC_BINARY) + " " + arguments + " >" + out.string() + " 2>" +
                        err.string() + " </dev/null";
  int status = std::system(command.c_str());
  CommandOutcome outcome;
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  outcome.out = read_text(out);
  outcome.err = read_text(err);
  return outcome;
}

}  // namespace ernic::reports::testing
