#include "history/record.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include "common/version.h"
#include "hosts/process_command.h"

namespace ernic {
namespace {

std::string read_key(const char* file, const std::string& key, char separator) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) == 0) {
      auto at = line.find(separator);
      if (at == std::string::npos) {
        continue;
      }
      std::string value = line.substr(at + 1);
      value.erase(0, value.find_first_not_of(" \t\""));
      while (!value.empty() && (value.back() == '"' || value.back() == ' ')) {
        value.pop_back();
      }
      return value;
    }
  }
  return "";
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// The commit measured: given by CI, else the checkout we run in.
std::string measured_sha() {
  std::string sha = env_or("ERNIC_SHA", env_or("GITHUB_SHA", ""));
  if (sha.empty()) {
    try {
      sha = run_or_throw({"git", "rev-parse", "HEAD"}, std::chrono::milliseconds(5000));
    } catch (const std::exception&) {
      sha = "unknown";
    }
  }
  while (!sha.empty() && std::isspace(static_cast<unsigned char>(sha.back()))) {
    sha.pop_back();
  }
  return sha.substr(0, 8);
}

std::string iso8601(std::chrono::system_clock::time_point time) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(time));
}

}  // namespace

nlohmann::json summarize(std::vector<double> values) {
  if (values.empty()) {
    return nullptr;
  }
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  double median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  double sum = 0;
  for (double v : values) {
    sum += v;
  }
  std::size_t p99_rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n)));
  return {{"n", n},
          {"median", median},
          {"mean", sum / static_cast<double>(n)},
          {"min", values.front()},
          {"max", values.back()},
          {"p99", values[std::max<std::size_t>(p99_rank, 1) - 1]}};
}

nlohmann::json capture_environment() {
  utsname names{};
  ::uname(&names);
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  std::string memory = read_key("/proc/meminfo", "MemTotal", ':');
  double memory_bytes = memory.empty() ? 0 : std::stod(memory) * 1024;
  return {{"hostname", hostname},
          {"kernel", names.release},
          {"arch", names.machine},
          {"cpu_model", read_key("/proc/cpuinfo", "model name", ':')},
          {"cpu_cores", std::thread::hardware_concurrency()},
          {"memory_bytes", memory_bytes},
          {"os", read_key("/etc/os-release", "PRETTY_NAME", '=')}};
}

RunAccelerator run_accelerator(const std::vector<HostRecord>& hosts) {
  std::set<std::string> seen;
  for (const auto& host : hosts) {
    if (auto it = host.facts.find("accelerator"); it != host.facts.end()) {
      seen.insert(it->second);
    }
  }
  RunAccelerator result;
  if (seen.size() == 1) {
    result.name = *seen.begin();
  } else if (seen.size() > 1) {
    result.name = "mixed";
  }
  result.functional_only = seen.count("tcg") > 0;
  return result;
}

nlohmann::json build_history_record(const Scenario& scenario, const RunResult& run) {
  using nlohmann::json;
  json environment = capture_environment();
  PublishedFigures figures;
  json points = json::array();
  for (const auto& result : run.points) {
    const PlannedPoint& point = *result.point;
    json params = json::object();
    for (const auto& [key, value] : point.params.entries()) {
      params[key] = value;
    }
    json metrics_info = json::object();
    std::map<std::string, std::vector<double>> values;
    for (const auto& metric : point.tool->metrics()) {
      metrics_info[metric.name] = {
          {"unit", metric.unit}, {"better", metric.better == Better::kHigher ? "higher" : "lower"}};
    }
    json samples = json::array();
    for (const auto& sample : result.samples) {
      samples.push_back({{"rep", sample.repetition},
                         {"warm", sample.warm},
                         {"duration_s", sample.duration_s},
                         {"tool_s", sample.tool_s},
                         {"metrics", sample.metrics}});
      for (const auto& [name, value] : sample.metrics) {
        values[name].push_back(value);
      }
    }
    json summary = json::object();
    PointSummary published{.params = &point.params, .median = {}};
    if (result.status == PointStatus::kPassed) {
      for (auto& [name, list] : values) {
        summary[name] = summarize(list);
        published.median[name] = summary[name]["median"].get<double>();
      }
      if (run.status != RunStatus::kIncomplete) {
        point.tool->publish(published, scenario.history.tracked_sizes, figures);
      }
    }
    json logs = json::array();
    for (const auto& log : result.logs) {
      logs.push_back(std::filesystem::relative(log, run.run_dir).string());
    }
    json commands = {{"client", result.client_command}};
    if (!result.server_command.empty()) {
      commands["server"] = result.server_command;
    }
    points.push_back({{"id", point.id},
                      {"benchmark", point.entry->name},
                      {"tool", point.tool->tool()},
                      {"params", params},
                      {"status", to_string(result.status)},
                      {"reason", result.reason.empty() ? json(nullptr) : json(result.reason)},
                      {"logs", logs},
                      {"commands", commands},
                      {"hosts", {{"server", point.entry->server}, {"client", point.entry->client}}},
                      {"repetitions", point.entry->repetitions},
                      {"duration_s", result.duration_s},
                      {"metrics", metrics_info},
                      {"samples", samples},
                      {"summary", summary}});
  }
  json hosts = json::array();
  for (const auto& host : run.hosts) {
    hosts.push_back({{"name", host.name},
                     {"provider", host.provider},
                     {"address", host.address},
                     {"t_init_s", host.t_init_s},
                     {"facts", host.facts}});
  }
  json ab_pairs = json::array();
  for (const auto& pair : scenario.ab_pairs) {
    ab_pairs.push_back(
        {{"name", pair.name}, {"a", pair.a}, {"b", pair.b}, {"metric", pair.metric}});
  }
  json series = json::object();
  for (const auto& [name, by_size] : figures.series) {
    series[name] = by_size;
  }
  json badges = {{"rdma_bw_GBs", nullptr}, {"tcp_bw_GBs", nullptr}, {"nvmeof_iops_M", nullptr}};
  for (const auto& [name, value] : figures.badges) {
    badges[name] = value;
  }
  double duration = std::chrono::duration<double>(run.finished - run.started).count();
  RunAccelerator accelerator = run_accelerator(run.hosts);
  json ernic = {
      {"schema", 1},
      {"version", ernic_version()},
      {"git_sha", ernic_git_sha()},
      {"status", to_string(run.status)},
      {"error", run.fatal_error.empty() ? json(nullptr) : json(run.fatal_error)},
      {"started", iso8601(run.started)},
      {"finished", iso8601(run.finished)},
      {"duration_s", duration},
      {"run_dir", run.run_dir.string()},
      {"run_token", run.run_token},
      {"scenario",
       {{"name", scenario.name},
        {"path", scenario.file.string()},
        {"sha256", scenario.sha256},
        {"description", scenario.description}}},
      {"accelerator", accelerator.name},
      {"functional_only", accelerator.functional_only},
      {"environment", environment},
      {"hosts", hosts},
      {"tools", run.tool_versions},
      {"emulator", run.emulator.is_null() ? json{{"kind", scenario.emulator.kind}} : run.emulator},
      {"points", points},
      {"ab_pairs", ab_pairs},
  };
  return {{"generated", fmt::format("{:%Y-%m-%d %H:%M:%S} UTC",
                                    std::chrono::floor<std::chrono::seconds>(run.finished))},
          {"sha", measured_sha()},
          {"run_id", env_or("GITHUB_RUN_ID", run.run_name)},
          {"node", env_or("ERNIC_NODE", environment["hostname"].get<std::string>())},
          {"runner", scenario.runner},
          {"series", series},
          {"badges", badges},
          {"ernicctl", ernic}};
}

}  // namespace ernic
