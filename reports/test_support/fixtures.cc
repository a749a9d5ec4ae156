#include "test_support/fixtures.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

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
    samples.push_back({{"rep", i + 1}, {"warm", i > 0}, {"duration_s", 1.0},
                       {"metrics", {{metric, values[i]}}}});
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
        {"scenario", {{"name", scenario}, {"path", "scenarios/" + scenario + ".yaml"}, {"sha256", "abc"}}},
        {"accelerator", "kvm"},
        {"functional_only", false},
        {"hosts", {{{"name", "server"}, {"provider", "netns"}, {"address", "10.77.0.1"}, {"t_init_s", 0.02}}}},
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
