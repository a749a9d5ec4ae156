#include "run/record.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include "base/version.h"
#include "history/statistics.h"
#include "hosts/process_command.h"
#include "run/fairness.h"
#include "run/sustained.h"

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

}  // namespace

std::string iso8601(std::chrono::system_clock::time_point time) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(time));
}

std::string resolve_runner_class(std::string_view declared, std::string_view runner_environment) {
  if (declared.empty() || declared == "auto") {
    return runner_environment == "github-hosted" ? "github-hosted" : "self-hosted";
  }
  return std::string(declared);
}

std::string resolve_runner_class(std::string_view declared) {
  const char* environment = std::getenv("RUNNER_ENVIRONMENT");
  return resolve_runner_class(declared, environment != nullptr ? environment : "");
}

EnvironmentInfo capture_environment() {
  utsname names{};
  ::uname(&names);
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  std::string memory = read_key("/proc/meminfo", "MemTotal", ':');
  double memory_bytes = memory.empty() ? 0 : std::stod(memory) * 1024;
  return {.hostname = hostname,
          .kernel = names.release,
          .arch = names.machine,
          .cpu_model = read_key("/proc/cpuinfo", "model name", ':'),
          .cpu_cores = std::thread::hardware_concurrency(),
          .memory_bytes = memory_bytes,
          .os = read_key("/etc/os-release", "PRETTY_NAME", '=')};
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

namespace {

PointRecord point_record(const PointResult& result, const Scenario& scenario,
                         const RunResult& run) {
  const PlannedPoint& point = *result.point;
  PointRecord out{.id = point.id,
                  .benchmark = point.entry->name,
                  .tool = std::string(point.tool->tool()),
                  .status = to_string(result.status),
                  .hosts = {{"server", point.entry->server}, {"client", point.entry->client}},
                  .repetitions = point.repetitions,
                  .duration_s = result.duration_s};
  for (const auto& [key, value] : point.params.entries()) {
    out.params[key] = value;
  }
  if (!result.reason.empty()) {
    out.reason = result.reason;
  }
  for (const auto& log : result.logs) {
    out.logs.push_back(std::filesystem::relative(log, run.run_dir).string());
  }
  out.commands["client"] = result.client_command;
  if (!result.server_command.empty()) {
    out.commands["server"] = result.server_command;
  }
  if (!result.measured_by.empty()) {
    out.measured_by = result.measured_by;
  }
  for (const auto& [id, traffic] : result.instances) {
    out.instances[std::to_string(id)] = traffic;
  }
  if (point.entry->multi_tenant()) {
    for (const Tenant& tenant : point.entry->tenants) {
      TenantRecord& recorded = out.tenants[tenant.name];
      recorded.hosts = {{"server", tenant.server}, {"client", tenant.client}};
      if (auto it = result.tenant_commands.find(tenant.name); it != result.tenant_commands.end()) {
        recorded.commands = it->second;
      }
    }
  }
  std::vector<MetricInfo> declared = point.tool->metrics();
  if (is_sustained(point.params)) {
    declared.insert(declared.end(), sustained_metrics().begin(), sustained_metrics().end());
  }
  for (const auto& metric : declared) {
    out.metrics[metric.name] = {metric.unit, metric.better == Better::kHigher ? "higher" : "lower"};
  }
  std::map<std::string, std::vector<double>> values;
  for (const auto& sample : result.samples) {
    out.samples.push_back(
        {.rep = sample.repetition,
         .warm = sample.warm,
         .duration_s = sample.duration_s,
         .tool_s = sample.tool_s,
         .metrics = sample.metrics,
         .distributions = sample.distributions,
         .tenant = sample.tenant != 0 ? std::optional(sample.tenant) : std::nullopt,
         .tenant_name = sample.tenant != 0 ? std::optional(sample.tenant_name) : std::nullopt,
         .failure = sample.failure.empty() ? std::nullopt : std::optional(sample.failure),
         .retries = sample.retries});
    for (const auto& [name, value] : sample.metrics) {
      values[name].push_back(value);
    }
  }
  if (result.status == PointStatus::kPassed) {
    for (const auto& [name, list] : values) {
      out.summary[name] = *summarize(list);
    }
  }
  if (int group = point.together >= 0 ? concurrent_group_number(scenario, point.entry->name) : 0;
      group > 0) {
    out.group = group;
  }
  out.fairness = point_fairness(result);
  if (out.fairness) {
    // A metric like the others, so that `compare` sees it (higher is better).
    out.metrics[kJainIndexMetric] = {"", "higher"};
    if (result.status == PointStatus::kPassed) {
      out.summary[kJainIndexMetric] = out.fairness->jain;
    }
  }
  assign_rungs(out);
  return out;
}

// rocm-ernic's series and badges, from the passed points of a run that was not interrupted;
// under ernicctl.series instead when the scenario does not publish them (history.publish).
void publish_figures(const Scenario& scenario, const RunResult& run, HistoryRecord& record) {
  for (Badge badge : kRecordedBadges) {
    record.badges[badge_key(badge)] = std::nullopt;
  }
  if (run.status == RunStatus::kIncomplete) {
    return;
  }
  PublishedFigures figures;
  for (std::size_t i = 0; i < run.points.size(); ++i) {
    const PointRecord& point = record.ernicctl->points[i];
    // The trend series are rung 3's: a sustained or multi-tenant point's figures are not
    // joined to them.
    if (!point.passed() || point_rung(point) != Rung::kExecution) {
      continue;
    }
    PointSummary published{.params = &run.points[i].point->params, .median = {}};
    for (const auto& [name, summary] : point.summary) {
      published.median[name] = summary.median;
    }
    run.points[i].point->tool->publish(published, scenario.history.tracked_sizes, figures);
  }
  if (!scenario.history.publish) {
    // Not the scenario that feeds rocm-ernic's series and badges: its trends stay its own.
    for (const auto& [name, by_size] : figures.series) {
      record.ernicctl->series[name] = by_size;
    }
    return;
  }
  for (const auto& [name, by_size] : figures.series) {
    record.series[name] = by_size;
  }
  for (const auto& [name, value] : figures.badges) {
    record.badges[name] = value;
  }
}

}  // namespace

HistoryRecord build_history_record(const Scenario& scenario, const RunResult& run) {
  EnvironmentInfo environment = capture_environment();
  RunAccelerator accelerator = run_accelerator(run.hosts);
  ErnicctlPart part{
      .schema = 1,
      .version = ernic_version(),
      .git_sha = ernic_git_sha(),
      .status = to_string(run.status),
      .error = run.fatal_error.empty() ? std::nullopt : std::optional(run.fatal_error),
      .started = iso8601(run.started),
      .finished = iso8601(run.finished),
      .duration_s = std::chrono::duration<double>(run.finished - run.started).count(),
      .run_dir = run.run_dir.string(),
      .run_token = run.run_token,
      .selection = run.selection.empty() ? std::nullopt : std::optional(run.selection),
      .scenario = {.name = scenario.name,
                   .path = scenario.file.string(),
                   .sha256 = scenario.sha256,
                   .description = scenario.description},
      .accelerator = accelerator.name,
      .functional_only = accelerator.functional_only,
      .environment = environment,
      .tools = run.tool_versions,
      .emulator =
          run.emulator.is_null() ? nlohmann::json{{"kind", scenario.emulator.kind}} : run.emulator,
  };
  for (const auto& host : run.hosts) {
    part.hosts.push_back({.name = host.name,
                          .provider = host.provider,
                          .address = host.address,
                          .t_init_s = host.attached ? std::nullopt : std::optional(host.t_init_s),
                          .facts = host.facts});
  }
  if (run.attached_to) {
    const AttachedTo& attached = *run.attached_to;
    part.attached_to = AttachedToRecord{
        .up_run_dir = attached.up_run_dir,
        .up_run_token = attached.up_run_token,
        .up_since = attached.up_since.empty() ? std::nullopt : std::optional(attached.up_since),
        .rebuilt = attached.rebuilt};
  }
  for (const auto& result : run.points) {
    part.points.push_back(point_record(result, scenario, run));
  }
  part.groups = group_fairness(scenario, run);
  for (const auto& pair : scenario.ab_pairs) {
    part.ab_pairs.push_back({pair.name, pair.a, pair.b, pair.metric});
  }
  HistoryRecord record{
      {
          .generated = fmt::format("{:%Y-%m-%d %H:%M:%S} UTC",
                                   std::chrono::floor<std::chrono::seconds>(run.finished)),
          .sha = measured_sha(),
          .run_id = env_or("GITHUB_RUN_ID", run.run_name),
          .node = env_or("ERNIC_NODE", environment.hostname.value_or("")),
          .runner = resolve_runner_class(scenario.runner),
      },
      std::move(part),
  };
  publish_figures(scenario, run, record);
  return record;
}

}  // namespace ernic
