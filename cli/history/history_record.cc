#include "history/history_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "history/statistics.h"

namespace ernic {
namespace {

using nlohmann::json;

template <typename T>
json optional_json(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

// Fields that older records and other tools leave out are written only when present.
template <typename T>
void put_present(json& out, const char* key, const std::optional<T>& value) {
  if (value) {
    out[key] = *value;
  }
}

}  // namespace

const char* series_key(Series s) {
  switch (s) {
    case Series::kBandwidth:
      return "bandwidth";
    case Series::kLatency:
      return "latency";
    case Series::kNvmeof:
      return "nvmeof";
    case Series::kTcp:
      return "tcp";
  }
  return "";
}

const char* badge_key(Badge b) {
  switch (b) {
    case Badge::kRdma:
      return "rdma_bw_GBs";
    case Badge::kTcp:
      return "tcp_bw_GBs";
    case Badge::kNvmeof:
      return "nvmeof_iops_M";
    case Badge::kS3:
      return "s3_bw_GBs";
  }
  return "";
}

std::string PointRecord::param(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? "" : it->second;
}

std::vector<std::string> PointRecord::measured_metrics() const {
  std::set<std::string> names;
  for (const auto& [name, stats] : summary) {
    names.insert(name);
  }
  for (const auto& sample : samples) {
    for (const auto& [name, value] : sample.metrics) {
      names.insert(name);
    }
  }
  return {names.begin(), names.end()};
}

std::vector<double> PointRecord::values(const std::string& metric) const {
  std::vector<double> out;
  for (const auto& sample : samples) {
    if (auto it = sample.metrics.find(metric); it != sample.metrics.end()) {
      out.push_back(it->second);
    }
  }
  return out;
}

std::vector<const Distribution*> PointRecord::distributions(const std::string& kind) const {
  std::vector<const Distribution*> out;
  for (const auto& sample : samples) {
    if (auto it = sample.distributions.find(kind); it != sample.distributions.end()) {
      out.push_back(&it->second);
    }
  }
  return out;
}

std::optional<double> PointRecord::median(const std::string& metric) const {
  if (auto it = summary.find(metric); it != summary.end()) {
    return it->second.median;
  }
  auto list = values(metric);
  if (list.empty()) {
    return std::nullopt;
  }
  return ernic::median(std::move(list));
}

std::string PointRecord::log_paths() const {
  std::string out = log.value_or("");
  for (const auto& path : logs) {
    out += (out.empty() ? "" : ", ") + path;
  }
  return out;
}

std::string ErnicctlPart::emulator_kind() const {
  if (emulator.is_object() && emulator.contains("kind") && emulator["kind"].is_string()) {
    return emulator["kind"].get<std::string>();
  }
  return "";
}

std::string RecordHead::runner_class() const {
  return runner && !runner->empty() ? *runner : kDefaultRunnerClass;
}

std::vector<std::pair<std::uint64_t, double>> RecordHead::values(Series s) const {
  std::vector<std::pair<std::uint64_t, double>> out;
  if (s == Series::kTcp) {
    if (auto tcp = badge(Badge::kTcp)) {
      out.emplace_back(0, *tcp);
    }
    return out;
  }
  auto it = series.find(series_key(s));
  if (it == series.end()) {
    return out;
  }
  for (const auto& [key, value] : it->second) {
    std::uint64_t size = 0;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), size);
    if (ec == std::errc() && end == key.data() + key.size()) {
      out.emplace_back(size, value);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<double> RecordHead::badge(Badge b) const {
  auto it = badges.find(badge_key(b));
  return it == badges.end() ? std::nullopt : it->second;
}

std::string RecordHead::date() const {
  auto space = generated.find(' ');
  return space == std::string::npos ? generated : generated.substr(0, space);
}

const std::vector<PointRecord>& HistoryRecord::points() const {
  static const std::vector<PointRecord> none;
  return ernicctl ? ernicctl->points : none;
}

void to_json(json& out, const EnvironmentInfo& environment) {
  out = json::object();
  put_present(out, "hostname", environment.hostname);
  put_present(out, "kernel", environment.kernel);
  put_present(out, "arch", environment.arch);
  put_present(out, "cpu_model", environment.cpu_model);
  put_present(out, "cpu_cores", environment.cpu_cores);
  put_present(out, "memory_bytes", environment.memory_bytes);
  put_present(out, "os", environment.os);
}

void to_json(json& out, const HostInfo& host) {
  out = {{"name", host.name},
         {"provider", host.provider},
         {"address", host.address},
         {"t_init_s", optional_json(host.t_init_s)},
         {"facts", host.facts}};
  put_present(out, "vcpus", host.vcpus);
  put_present(out, "memory_bytes", host.memory_bytes);
}

void to_json(json& out, const Distribution& distribution) {
  auto rounded = [](const std::vector<double>& values) {
    json list = json::array();
    for (double v : values) {
      list.push_back(round_significant(v));
    }
    return list;
  };
  out = {{"n", distribution.count}};
  if (distribution.raw()) {
    out["values"] = rounded(distribution.values);
  } else {
    out["min"] = round_significant(distribution.min);
    out["max"] = round_significant(distribution.max);
    out["q"] = rounded(distribution.quantiles);
    if (!distribution.probabilities.empty()) {
      out["p"] = distribution.probabilities;
    }
  }
  put_present(out, "interval_s", distribution.interval_s);
}

void to_json(json& out, const PointRecord& point) {
  json metrics = json::object();
  for (const auto& [name, info] : point.metrics) {
    metrics[name] = {{"unit", info.unit}, {"better", info.better}};
  }
  json samples = json::array();
  for (const auto& sample : point.samples) {
    json entry = {{"rep", sample.rep}, {"warm", sample.warm}, {"metrics", sample.metrics}};
    put_present(entry, "duration_s", sample.duration_s);
    put_present(entry, "tool_s", sample.tool_s);
    if (!sample.distributions.empty()) {
      entry["distributions"] = sample.distributions;
    }
    put_present(entry, "tenant", sample.tenant);
    put_present(entry, "tenant_name", sample.tenant_name);
    put_present(entry, "failure", sample.failure);
    if (!sample.retries.empty()) {
      entry["retries"] = sample.retries;
    }
    samples.push_back(std::move(entry));
  }
  json summary = json::object();
  for (const auto& [name, s] : point.summary) {
    summary[name] = {{"n", s.n},     {"median", s.median}, {"mean", s.mean},
                     {"min", s.min}, {"max", s.max},       {"p99", s.p99}};
  }
  out = {{"id", point.id},         {"benchmark", point.benchmark},
         {"tool", point.tool},     {"params", point.params},
         {"status", point.status}, {"reason", optional_json(point.reason)},
         {"logs", point.logs},     {"commands", point.commands},
         {"hosts", point.hosts},   {"metrics", metrics},
         {"samples", samples},     {"summary", summary}};
  put_present(out, "log", point.log);
  put_present(out, "measured_by", point.measured_by);
  put_present(out, "repetitions", point.repetitions);
  put_present(out, "duration_s", point.duration_s);
  put_present(out, "fairness", point.fairness);
  put_present(out, "group", point.group);
  if (!point.tenants.empty()) {
    json tenants = json::object();
    for (const auto& [name, tenant] : point.tenants) {
      tenants[name] = {{"hosts", tenant.hosts}, {"commands", tenant.commands}};
    }
    out["tenants"] = tenants;
  }
  if (!point.instances.empty()) {
    json instances = json::object();
    for (const auto& [id, traffic] : point.instances) {
      instances[id] = {{"bytes_sent", traffic.bytes_sent},
                       {"bytes_received", traffic.bytes_received}};
    }
    out["instances"] = instances;
  }
  if (point.rung) {
    out["rung"] = rung_number(*point.rung);
    json overrides = json::object();
    for (const auto& [metric, rung] : point.metric_rungs) {
      overrides[metric] = rung_number(rung);
    }
    if (!overrides.empty()) {
      out["metric_rungs"] = overrides;
    }
  }
}

void to_json(json& out, const FairnessRecord& fairness) {
  json repetitions = json::array();
  for (const auto& rep : fairness.repetitions) {
    repetitions.push_back({{"rep", rep.rep},
                           {"jain_index", rep.jain},
                           {"min_share", rep.min_share},
                           {"max_share", rep.max_share}});
  }
  out = {{"metric", fairness.metric},
         {"tenants", fairness.tenants},
         {"jain_index",
          {{"n", fairness.jain.n},
           {"median", fairness.jain.median},
           {"min", fairness.jain.min},
           {"max", fairness.jain.max}}},
         {"min_share", fairness.min_share},
         {"max_share", fairness.max_share},
         {"repetitions", repetitions}};
  if (!fairness.members.empty()) {
    out["unit"] = fairness.unit;
    out["members"] = fairness.members;
  }
}

void to_json(json& out, const GroupRecord& group) {
  out = {{"group", group.group},
         {"name", group.name},
         {"points", group.points},
         {"fairness", group.fairness},
         {"rung", rung_number(Rung::kMultiTenant)}};
}

std::string group_figure_name(const GroupRecord& group, const FairnessRecord& fairness) {
  std::string name = "group " + group.name + ":";
  for (std::size_t i = 0; i < group.points.size(); ++i) {
    name += (i == 0 ? " " : " + ") + group.points[i];
  }
  return group.fairness.size() > 1 ? name + " (" + fairness.metric + ")" : name;
}

std::optional<FairnessRecord> read_fairness(const json& in) {
  if (!in.is_object()) {
    return std::nullopt;
  }
  auto number = [](const json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  FairnessRecord fairness;
  fairness.metric = in.value("metric", std::string());
  fairness.tenants = static_cast<int>(number(in, "tenants"));
  json jain = in.value("jain_index", json::object());
  if (jain.is_object()) {
    fairness.jain.n = static_cast<std::size_t>(number(jain, "n"));
    fairness.jain.median = fairness.jain.mean = number(jain, "median");
    fairness.jain.min = number(jain, "min");
    fairness.jain.max = fairness.jain.p99 = number(jain, "max");
  }
  fairness.min_share = number(in, "min_share");
  fairness.max_share = number(in, "max_share");
  for (const auto& rep : in.value("repetitions", json::array())) {
    if (rep.is_object()) {
      fairness.repetitions.push_back({static_cast<int>(number(rep, "rep")),
                                      number(rep, "jain_index"), number(rep, "min_share"),
                                      number(rep, "max_share")});
    }
  }
  if (auto unit = in.find("unit"); unit != in.end() && unit->is_string()) {
    fairness.unit = unit->get<std::string>();
  }
  for (const auto& member : in.value("members", json::array())) {
    if (member.is_string()) {
      fairness.members.push_back(member.get<std::string>());
    }
  }
  return fairness;
}

void to_json(json& out, const ErnicctlPart& part) {
  json ab_pairs = json::array();
  for (const auto& pair : part.ab_pairs) {
    ab_pairs.push_back(
        {{"name", pair.name}, {"a", pair.a}, {"b", pair.b}, {"metric", pair.metric}});
  }
  out = {{"schema", part.schema},
         {"version", part.version},
         {"git_sha", part.git_sha},
         {"status", part.status},
         {"error", optional_json(part.error)},
         {"started", part.started},
         {"run_dir", part.run_dir},
         {"scenario",
          {{"name", part.scenario.name},
           {"path", part.scenario.path},
           {"sha256", part.scenario.sha256},
           {"description", part.scenario.description}}},
         {"accelerator", part.accelerator},
         {"functional_only", part.functional_only},
         {"environment", part.environment},
         {"hosts", part.hosts},
         {"tools", part.tools},
         {"emulator", part.emulator},
         {"points", part.points},
         {"ab_pairs", ab_pairs}};
  if (!part.groups.empty()) {
    out["groups"] = part.groups;
  }
  if (!part.series.empty()) {
    out["series"] = part.series;
  }
  put_present(out, "finished", part.finished);
  put_present(out, "duration_s", part.duration_s);
  put_present(out, "run_token", part.run_token);
  put_present(out, "selection", part.selection);
  if (part.attached_to) {
    json attached = {{"up_run_dir", part.attached_to->up_run_dir},
                     {"up_run_token", part.attached_to->up_run_token},
                     {"rebuilt", part.attached_to->rebuilt}};
    put_present(attached, "up_since", part.attached_to->up_since);
    out["attached_to"] = attached;
  }
}

void to_json(json& out, const HistoryRecord& record) {
  json badges = json::object();
  for (const auto& [name, value] : record.badges) {
    badges[name] = optional_json(value);
  }
  out = {{"generated", record.generated}, {"sha", record.sha},       {"run_id", record.run_id},
         {"node", record.node},           {"series", record.series}, {"badges", badges}};
  put_present(out, "runner", record.runner);
  put_present(out, "ernicctl", record.ernicctl);
}

}  // namespace ernic
