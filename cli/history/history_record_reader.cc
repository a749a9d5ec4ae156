// Reading a history record: tolerant of what older records, rocm-ernic's lines and other tools
// leave out or spell differently, and naming every mistyped field for `history validate`.
#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "history/history_record.h"

namespace ernic {
namespace {

using nlohmann::json;

// Reads fields of one JSON object, keeping defaults for missing or mistyped ones and naming
// every mistyped one in `problems` (when given).
class FieldReader {
 public:
  FieldReader(const json& object, std::string path, std::vector<std::string>* problems)
      : object_(object), path_(std::move(path)), problems_(problems) {}

  bool is_object() const { return object_.is_object(); }

  const json* find(const char* key) const {
    if (!object_.is_object()) {
      return nullptr;
    }
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  void problem(const std::string& text) const {
    if (problems_ != nullptr) {
      problems_->push_back(text);
    }
  }

  template <typename T>
  void read(const char* key, T& out) const {
    if (const json* value = find(key); value != nullptr && !value->is_null()) {
      convert_or_complain(key, *value, out);
    }
  }

  template <typename T>
  void read(const char* key, std::optional<T>& out) const {
    if (const json* value = find(key); value != nullptr && !value->is_null()) {
      T read_value{};
      if (convert_or_complain(key, *value, read_value)) {
        out = std::move(read_value);
      }
    }
  }

  // A map of text values; numbers and other scalars are kept as their JSON text.
  void read(const char* key, std::map<std::string, std::string>& out) const {
    const json* value = find(key);
    if (value == nullptr || value->is_null()) {
      return;
    }
    if (!value->is_object()) {
      problem(name(key) + " must be an object");
      return;
    }
    for (const auto& [k, v] : value->items()) {
      out[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }

  // An object (or array) below this one; a null reader when missing or of another type.
  FieldReader child(const char* key, json::value_t type) const {
    const json* value = find(key);
    if (value != nullptr && value->type() != type && !value->is_null()) {
      problem(fmt::format("{} must be an {}", name(key),
                          type == json::value_t::array ? "array" : "object"));
      value = nullptr;
    }
    if (value == nullptr || value->type() != type) {
      return FieldReader(null_json(), name(key), problems_);
    }
    return FieldReader(*value, name(key), problems_);
  }

  const json& raw() const { return object_; }
  const std::string& path() const { return path_; }
  std::vector<std::string>* problems() const { return problems_; }

 private:
  template <typename T>
  bool convert_or_complain(const char* key, const json& value, T& out) const {
    if constexpr (std::is_same_v<T, std::string>) {
      if (value.is_string()) {
        out = value.get<std::string>();
        return true;
      }
      problem(name(key) + " must be a string");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (value.is_boolean()) {
        out = value.get<bool>();
        return true;
      }
      problem(name(key) + " must be true or false");
    } else {
      if (value.is_number()) {
        out = value.get<T>();
        return true;
      }
      problem(name(key) + " must be a number");
    }
    return false;
  }

  static const json& null_json() {
    static const json null;
    return null;
  }

  const json& object_;
  std::string path_;
  std::vector<std::string>* problems_;
};

bool is_number_key(const std::string& key) {
  return !key.empty() &&
         std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A list of numbers; nullopt when it is not one.
std::optional<std::vector<double>> number_list(const json& value) {
  if (!value.is_array()) {
    return std::nullopt;
  }
  std::vector<double> out;
  for (const auto& v : value) {
    if (!v.is_number()) {
      return std::nullopt;
    }
    out.push_back(v.get<double>());
  }
  return out;
}

SampleRecord read_sample(const FieldReader& in) {
  SampleRecord sample;
  in.read("rep", sample.rep);
  in.read("warm", sample.warm);
  in.read("duration_s", sample.duration_s);
  in.read("tool_s", sample.tool_s);
  in.read("tenant", sample.tenant);
  in.read("tenant_name", sample.tenant_name);
  in.read("failure", sample.failure);
  auto retries = in.child("retries", json::value_t::array);
  for (const auto& retry : retries.raw()) {
    if (retry.is_string()) {
      sample.retries.push_back(retry.get<std::string>());
    }
  }
  auto metrics = in.child("metrics", json::value_t::object);
  if (metrics.is_object()) {
    for (const auto& [name, value] : metrics.raw().items()) {
      if (value.is_number()) {
        sample.metrics[name] = value.get<double>();
      }
    }
  }
  auto distributions = in.child("distributions", json::value_t::object);
  if (distributions.is_object()) {
    for (const auto& [kind, value] : distributions.raw().items()) {
      if (auto read = read_distribution(value, distributions.name(kind.c_str()), in.problems())) {
        sample.distributions[kind] = std::move(*read);
      }
    }
  }
  return sample;
}

void read_point_metrics(const FieldReader& in, PointRecord& point) {
  auto declared = in.child("metrics", json::value_t::object);
  if (declared.is_object()) {
    for (const auto& [name, info] : declared.raw().items()) {
      FieldReader field(info, declared.name(name.c_str()), nullptr);
      MetricDeclaration metric;
      field.read("unit", metric.unit);
      field.read("better", metric.better);
      if (metric.better != "higher" && metric.better != "lower") {
        in.problem(fmt::format("{}.{}.better must be higher or lower", declared.path(), name));
      }
      point.metrics[name] = std::move(metric);
    }
  }
  auto summary = in.child("summary", json::value_t::object);
  if (summary.is_object()) {
    for (const auto& [name, stats] : summary.raw().items()) {
      FieldReader field(stats, summary.name(name.c_str()), in.problems());
      const json* median = field.find("median");
      if (median == nullptr || !median->is_number()) {
        continue;
      }
      MetricSummary s;
      field.read("n", s.n);
      field.read("median", s.median);
      field.read("mean", s.mean);
      field.read("min", s.min);
      field.read("max", s.max);
      field.read("p99", s.p99);
      point.summary[name] = s;
    }
  }
}

// `rung` and `metric_rungs` (1..5); absent in records written before rungs, which point_rung()
// and metric_rung() derive with the writer's rule.
void read_point_rungs(const FieldReader& in, PointRecord& point) {
  auto rung_at = [&](const json& value, const std::string& path) -> std::optional<Rung> {
    auto rung = value.is_number_integer() ? rung_from_number(value.get<int>()) : std::nullopt;
    if (!rung) {
      in.problem(path + " must be a rung number, 1 to 5");
    }
    return rung;
  };
  if (const json* rung = in.find("rung"); rung != nullptr && !rung->is_null()) {
    point.rung = rung_at(*rung, in.name("rung"));
  }
  auto overrides = in.child("metric_rungs", json::value_t::object);
  for (const auto& [metric, value] : overrides.raw().items()) {
    if (auto rung = rung_at(value, overrides.name(metric.c_str()))) {
      point.metric_rungs[metric] = *rung;
    }
  }
}

PointRecord read_point(const FieldReader& in) {
  PointRecord point;
  if (const json* id = in.find("id"); id == nullptr || !id->is_string()) {
    in.problem(in.name("id") + " must be a string");
  }
  in.read("id", point.id);
  in.read("benchmark", point.benchmark);
  in.read("tool", point.tool);
  in.read("params", point.params);
  in.read("status", point.status);
  if (point.status != "passed" && point.status != "failed" && point.status != "skipped") {
    in.problem(in.path() + ".status must be passed, failed or skipped");
  }
  in.read("reason", point.reason);
  if (point.status == "failed" && !point.reason) {
    in.problem(in.path() + " failed without a reason");
  }
  in.read("log", point.log);
  auto logs = in.child("logs", json::value_t::array);
  for (const auto& log : logs.raw()) {
    if (log.is_string()) {
      point.logs.push_back(log.get<std::string>());
    }
  }
  in.read("commands", point.commands);
  in.read("measured_by", point.measured_by);
  in.read("hosts", point.hosts);
  auto tenants = in.child("tenants", json::value_t::object);
  for (const auto& [tenant_name, value] : tenants.raw().items()) {
    FieldReader tenant(value, tenants.name(tenant_name.c_str()), in.problems());
    if (!tenant.is_object()) {
      in.problem(tenant.path() + " must be an object");
      continue;
    }
    tenant.read("hosts", point.tenants[tenant_name].hosts);
    tenant.read("commands", point.tenants[tenant_name].commands);
  }
  auto instances = in.child("instances", json::value_t::object);
  for (const auto& [id, value] : instances.raw().items()) {
    FieldReader instance(value, instances.name(id.c_str()), in.problems());
    if (!instance.is_object()) {
      in.problem(instance.path() + " must be an object");
      continue;
    }
    instance.read("bytes_sent", point.instances[id].bytes_sent);
    instance.read("bytes_received", point.instances[id].bytes_received);
  }
  in.read("repetitions", point.repetitions);
  in.read("duration_s", point.duration_s);
  in.read("group", point.group);
  read_point_metrics(in, point);
  if (auto fairness = in.raw().find("fairness"); fairness != in.raw().end()) {
    point.fairness = read_fairness(*fairness);
  }
  read_point_rungs(in, point);
  auto samples = in.child("samples", json::value_t::array);
  for (std::size_t i = 0; i < samples.raw().size(); ++i) {
    point.samples.push_back(read_sample(
        FieldReader(samples.raw()[i], fmt::format("{}[{}]", samples.path(), i), in.problems())));
  }
  return point;
}

HostInfo read_host(const FieldReader& in) {
  HostInfo host;
  in.read("name", host.name);
  in.read("provider", host.provider);
  in.read("address", host.address);
  in.read("t_init_s", host.t_init_s);
  in.read("facts", host.facts);
  in.read("vcpus", host.vcpus);
  in.read("memory_bytes", host.memory_bytes);
  return host;
}

void read_environment(const FieldReader& in, EnvironmentInfo& environment) {
  in.read("hostname", environment.hostname);
  in.read("kernel", environment.kernel);
  in.read("arch", environment.arch);
  in.read("cpu_model", environment.cpu_model);
  in.read("cpu_cores", environment.cpu_cores);
  in.read("memory_bytes", environment.memory_bytes);
  in.read("os", environment.os);
}

// `series` of `in` (the record's top level, or its ernicctl part): {name: {size: value}}.
void read_series(const FieldReader& in, const std::string& label,
                 std::map<std::string, std::map<std::string, double>>& out) {
  const json* series = in.find("series");
  if (series == nullptr) {
    return;
  }
  if (!series->is_object()) {
    in.problem(fmt::format("\"{}\" must be an object", label));
    return;
  }
  for (const auto& [name, sizes] : series->items()) {
    if (!sizes.is_object()) {
      in.problem(fmt::format("{}.{} must be an object of size: value", label, name));
      continue;
    }
    auto& values = out[name];
    for (const auto& [size, value] : sizes.items()) {
      if (!is_number_key(size)) {
        in.problem(fmt::format("{}.{}: size \"{}\" is not a number of bytes", label, name, size));
      }
      if (!value.is_number()) {
        in.problem(fmt::format("{}.{}.{} must be a number", label, name, size));
      } else {
        values[size] = value.get<double>();
      }
    }
  }
}

ErnicctlPart read_part(const FieldReader& in) {
  ErnicctlPart part;
  if (const json* schema = in.find("schema"); schema == nullptr || !schema->is_number_integer()) {
    in.problem("ernicctl.schema must be an integer");
  } else {
    part.schema = schema->get<int>();
  }
  in.read("version", part.version);
  in.read("git_sha", part.git_sha);
  in.read("status", part.status);
  if (part.status != "passed" && part.status != "failed" && part.status != "incomplete") {
    in.problem("ernicctl.status must be passed, failed or incomplete");
  }
  in.read("error", part.error);
  in.read("started", part.started);
  in.read("finished", part.finished);
  in.read("duration_s", part.duration_s);
  in.read("run_dir", part.run_dir);
  in.read("run_token", part.run_token);
  in.read("selection", part.selection);
  if (auto attached = in.child("attached_to", json::value_t::object); attached.is_object()) {
    AttachedToRecord record;
    attached.read("up_run_dir", record.up_run_dir);
    attached.read("up_run_token", record.up_run_token);
    attached.read("up_since", record.up_since);
    attached.read("rebuilt", record.rebuilt);
    part.attached_to = std::move(record);
  }
  auto scenario = in.child("scenario", json::value_t::object);
  scenario.read("name", part.scenario.name);
  scenario.read("path", part.scenario.path);
  scenario.read("sha256", part.scenario.sha256);
  scenario.read("description", part.scenario.description);
  in.read("accelerator", part.accelerator);
  in.read("functional_only", part.functional_only);
  read_environment(in.child("environment", json::value_t::object), part.environment);
  auto hosts = in.child("hosts", json::value_t::array);
  for (std::size_t i = 0; i < hosts.raw().size(); ++i) {
    part.hosts.push_back(read_host(
        FieldReader(hosts.raw()[i], fmt::format("{}[{}]", hosts.path(), i), in.problems())));
  }
  in.read("tools", part.tools);
  if (const json* emulator = in.find("emulator"); emulator != nullptr) {
    part.emulator = *emulator;
  }
  auto points = in.child("points", json::value_t::array);
  for (std::size_t i = 0; i < points.raw().size(); ++i) {
    std::string path = fmt::format("ernicctl.points[{}]", i);
    if (!points.raw()[i].is_object()) {
      in.problem(path + " must be an object");
      continue;
    }
    part.points.push_back(read_point(FieldReader(points.raw()[i], path, in.problems())));
  }
  auto pairs = in.child("ab_pairs", json::value_t::array);
  for (const auto& pair : pairs.raw()) {
    FieldReader field(pair, "ernicctl.ab_pairs[]", in.problems());
    AbPairRecord ab;
    field.read("name", ab.name);
    field.read("a", ab.a);
    field.read("b", ab.b);
    field.read("metric", ab.metric);
    part.ab_pairs.push_back(std::move(ab));
  }
  auto groups = in.child("groups", json::value_t::array);
  for (std::size_t i = 0; i < groups.raw().size(); ++i) {
    FieldReader field(groups.raw()[i], fmt::format("ernicctl.groups[{}]", i), in.problems());
    if (!field.is_object()) {
      in.problem(field.path() + " must be an object");
      continue;
    }
    GroupRecord group;
    field.read("group", group.group);
    field.read("name", group.name);
    for (const auto& id : field.child("points", json::value_t::array).raw()) {
      if (id.is_string()) {
        group.points.push_back(id.get<std::string>());
      }
    }
    for (const auto& fairness : field.child("fairness", json::value_t::array).raw()) {
      if (auto read = read_fairness(fairness)) {
        group.fairness.push_back(std::move(*read));
      }
    }
    part.groups.push_back(std::move(group));
  }
  read_series(in, "ernicctl.series", part.series);
  return part;
}

void read_required_text(const FieldReader& in, const char* key, std::string& out) {
  const json* value = in.find(key);
  if (value == nullptr) {
    in.problem(fmt::format("missing \"{}\"", key));
  } else if (!value->is_string() || value->get<std::string>().empty()) {
    in.problem(fmt::format("\"{}\" must be a non-empty string", key));
  } else {
    out = value->get<std::string>();
  }
}

void read_published(const FieldReader& in, HistoryRecord& record) {
  read_series(in, "series", record.series);
  if (const json* badges = in.find("badges"); badges != nullptr) {
    if (!badges->is_object()) {
      in.problem("\"badges\" must be an object");
    } else {
      for (const auto& [name, value] : badges->items()) {
        if (value.is_number()) {
          record.badges[name] = value.get<double>();
        } else {
          record.badges[name] = std::nullopt;
          if (!value.is_null()) {
            in.problem(fmt::format("badges.{} must be a number or null", name));
          }
        }
      }
    }
  }
}

}  // namespace

std::optional<Distribution> read_distribution(const json& value, const std::string& path,
                                              std::vector<std::string>* problems) {
  auto fail = [&](const std::string& why) -> std::optional<Distribution> {
    if (problems != nullptr) {
      problems->push_back(fmt::format("{} {}", path, why));
    }
    return std::nullopt;
  };
  if (!value.is_object()) {
    return fail("must be an object");
  }
  const json* n = value.contains("n") ? &value["n"] : nullptr;
  if (n == nullptr || !n->is_number_integer() || n->get<long long>() < 1) {
    return fail("must have a count n of at least 1");
  }
  Distribution out;
  if (value.contains("values")) {
    auto values = number_list(value["values"]);
    if (!values || values->size() != n->get<std::size_t>()) {
      return fail("must list n numbers as values");
    }
    std::size_t size = values->size();
    out = Distribution::of(std::move(*values), size);
  } else {
    auto quantiles = value.contains("q") ? number_list(value["q"]) : std::nullopt;
    auto probabilities =
        value.contains("p") ? number_list(value["p"]) : std::optional<std::vector<double>>{};
    bool knots_ok = probabilities
                        ? quantiles && probabilities->size() == quantiles->size() &&
                              std::is_sorted(probabilities->begin(), probabilities->end()) &&
                              std::all_of(probabilities->begin(), probabilities->end(),
                                          [](double p) { return p > 0 && p < 1; })
                        : quantiles && quantiles->size() == Distribution::kSketchQuantiles;
    if (!knots_ok || !value.value("min", json()).is_number() ||
        !value.value("max", json()).is_number()) {
      return fail(
          fmt::format("must have values, or min, max and {} quantiles q (or q at probabilities p)",
                      Distribution::kSketchQuantiles));
    }
    out.count = n->get<std::size_t>();
    out.min = value["min"].get<double>();
    out.max = value["max"].get<double>();
    out.quantiles = std::move(*quantiles);
    if (probabilities) {
      out.probabilities = std::move(*probabilities);
    }
  }
  if (const auto& interval = value.value("interval_s", json()); interval.is_number()) {
    out.interval_s = interval.get<double>();
  }
  return out;
}

HistoryRecord read_history_record(const json& object, std::vector<std::string>* problems) {
  HistoryRecord record;
  if (!object.is_object()) {
    if (problems != nullptr) {
      problems->push_back("not a JSON object");
    }
    return record;
  }
  FieldReader in(object, "", problems);
  read_required_text(in, "generated", record.generated);
  read_required_text(in, "sha", record.sha);
  read_required_text(in, "run_id", record.run_id);
  static const std::regex kGenerated(R"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC)");
  if (problems != nullptr && !record.generated.empty() &&
      !std::regex_match(record.generated, kGenerated)) {
    problems->push_back("\"generated\" must read \"YYYY-MM-DD HH:MM:SS UTC\"");
  }
  if (const json* node = in.find("node"); node != nullptr) {
    if (node->is_string()) {
      record.node = node->get<std::string>();
    } else {
      in.problem("\"node\" must be a string");
    }
  }
  if (const json* runner = in.find("runner"); runner != nullptr) {
    if (runner->is_string()) {
      record.runner = runner->get<std::string>();
    } else {
      in.problem("\"runner\" must be a string");
    }
  }
  read_published(in, record);
  if (const json* part = in.find("ernicctl"); part != nullptr) {
    if (!part->is_object()) {
      in.problem("\"ernicctl\" must be an object");
    } else {
      record.ernicctl = read_part(FieldReader(*part, "ernicctl", problems));
    }
  }
  return record;
}

std::optional<json> parse_history_line(std::string_view text, std::string& error) {
  try {
    auto parsed = json::parse(text);
    if (parsed.is_object()) {
      return parsed;
    }
    error = "not a JSON object";
  } catch (const json::exception& e) {
    // parse_error for broken text, out_of_range for a number such as 1e999: both unreadable
    error = fmt::format("not valid JSON ({})", e.what());
  }
  return std::nullopt;
}

void from_json(const json& json_value, HistoryRecord& record) {
  record = read_history_record(json_value);
}

}  // namespace ernic
