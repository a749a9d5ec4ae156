#include "scenario/scenario_loader.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <fstream>
#include <set>
#include <sstream>

#include "benchmarks/benchmark.h"
#include "common/edit_distance.h"
#include "common/units.h"
#include "emulators/emulator_kind.h"
#include "setup/setup_step.h"

namespace ernic {
namespace {

std::shared_ptr<const ObjectSchema> object(ObjectSchema schema) {
  return std::make_shared<const ObjectSchema>(std::move(schema));
}

std::vector<std::string> provider_names() {
  std::vector<std::string> names;
  for (const auto* provider : all_host_providers()) {
    names.emplace_back(provider->name());
  }
  return names;
}

std::vector<std::string> step_names() {
  std::vector<std::string> names;
  for (const auto* step : all_setup_steps()) {
    names.emplace_back(step->kind());
  }
  return names;
}

std::vector<std::string> tool_names() {
  std::vector<std::string> names;
  for (const auto* benchmark : all_benchmarks()) {
    names.emplace_back(benchmark->tool());
  }
  return names;
}

const FieldSchema kNameField{.name = "name",
                             .kind = ValueKind::kString,
                             .description = "Unique name, used in logs and point ids",
                             .required = true};

const FieldSchema kInstanceField{
    .name = "instance",
    .kind = ValueKind::kInteger,
    .description = "Emulator instance the host is attached to (1 = manager)",
    .minimum = 1,
    .maximum = 64};

std::vector<std::string> emulator_kind_names() {
  std::vector<std::string> names;
  for (const auto* kind : all_emulator_kinds()) {
    names.emplace_back(kind->name());
  }
  return names;
}

ObjectSchema emulator_schema_for(const EmulatorKind* kind) {
  ObjectSchema schema;
  schema.description =
      kind ? std::string(kind->description()) : "Emulator instances started for the run";
  schema.fields = {{.name = "kind",
                    .kind = ValueKind::kEnum,
                    .description = "Which emulator the run starts",
                    .required = true,
                    .enum_values = emulator_kind_names()}};
  if (kind) {
    for (const auto& field : kind->schema().fields) {
      schema.fields.push_back(field);
    }
  }
  return schema;
}

ObjectSchema host_schema_for(const HostProvider& provider) {
  ObjectSchema schema;
  schema.description = std::string(provider.description());
  schema.fields = {kNameField,
                   {.name = "provider",
                    .kind = ValueKind::kEnum,
                    .description = "How the host comes to exist",
                    .required = true,
                    .enum_values = provider_names()},
                   {.name = "address",
                    .kind = ValueKind::kIpv4,
                    .description = "Test-network address; providers assign one when omitted"},
                   kInstanceField};
  for (const auto& field : provider.host_schema().fields) {
    schema.fields.push_back(field);
  }
  return schema;
}

ObjectSchema step_schema_for(const SetupStep& step) {
  ObjectSchema schema;
  schema.description = std::string(step.description());
  schema.fields = {{.name = "step",
                    .kind = ValueKind::kEnum,
                    .description = "The kind of step",
                    .required = true,
                    .enum_values = step_names()},
                   {.name = "hosts",
                    .kind = ValueKind::kList,
                    .description = "Hosts to apply the step to (default: all)",
                    .element = ValueKind::kString}};
  for (const auto& field : step.schema().fields) {
    schema.fields.push_back(field);
  }
  return schema;
}

ObjectSchema benchmark_schema_for(const Benchmark* tool) {
  ObjectSchema schema;
  schema.description = tool ? std::string(tool->description()) : "A benchmark";
  schema.fields = {
      kNameField,
      {.name = "tool",
       .kind = ValueKind::kEnum,
       .description = "The benchmark module",
       .required = true,
       .enum_values = tool_names()},
      {.name = "server",
       .kind = ValueKind::kString,
       .description = "Host that runs the server side"},
      {.name = "client",
       .kind = ValueKind::kString,
       .description = "Host that runs the client side (the only side of single-host tools)",
       .required = true},
      {.name = "repetitions",
       .kind = ValueKind::kInteger,
       .description = "Samples per point",
       .default_text = "1",
       .minimum = 1,
       .maximum = 10000},
      {.name = "timeout",
       .kind = ValueKind::kDuration,
       .description = "Limit for one repetition of one point; it is killed and recorded as failed",
       .default_text = "60s"},
      {.name = "port",
       .kind = ValueKind::kInteger,
       .description = "First TCP port; each point gets its own",
       .minimum = 1024,
       .maximum = 65000},
      {.name = "params",
       .kind = ValueKind::kObject,
       .description = "Tool parameters; a list value expands into one point per value",
       .object = tool ? object(tool->params()) : object(ObjectSchema{})},
  };
  return schema;
}

ObjectSchema top_level_schema() {
  ObjectSchema history{.description = "Where results are appended", .fields = {}};
  history.fields = {
      {.name = "enabled", .kind = ValueKind::kBoolean, .default_text = "true"},
      {.name = "path",
       .kind = ValueKind::kString,
       .description = "JSONL history, relative to the current directory",
       .default_text = "perf/history.jsonl"},
      {.name = "tracked_sizes",
       .kind = ValueKind::kList,
       .description = "Sizes published in series and badges",
       .element = ValueKind::kSize,
       .default_text = "[4KiB, 64KiB, 1MiB]"},
  };
  ObjectSchema ab_pair{.description = "B/A comparison measured side by side", .fields = {}};
  ab_pair.fields = {kNameField,
                    {.name = "a",
                     .kind = ValueKind::kString,
                     .description = "Baseline benchmark",
                     .required = true},
                    {.name = "b",
                     .kind = ValueKind::kString,
                     .description = "Candidate benchmark",
                     .required = true},
                    {.name = "metric",
                     .kind = ValueKind::kString,
                     .description = "Metric to compare",
                     .required = true}};

  ObjectSchema schema;
  schema.description = "An ernicctl scenario (schema v1)";
  schema.fields = {
      {.name = "version",
       .kind = ValueKind::kInteger,
       .description = "Schema version",
       .minimum = 1,
       .maximum = 1},
      {.name = "name",
       .kind = ValueKind::kString,
       .description = "Scenario name: letters, digits, '.', '_' and '-'",
       .required = true},
      {.name = "description", .kind = ValueKind::kString},
      {.name = "runner",
       .kind = ValueKind::kString,
       .description = "Runner class: results of different classes are never charted together",
       .default_text = "local"},
      // hosts, setup and benchmarks are checked entry by entry against the provider's, step's
      // and tool's own schema; these describe only the outer shape.
      {.name = "hosts",
       .kind = ValueKind::kList,
       .description = "Hosts, each named, with a provider",
       .required = true},
      {.name = "setup", .kind = ValueKind::kList, .description = "Setup steps, in order"},
      {.name = "benchmarks",
       .kind = ValueKind::kList,
       .description = "Benchmarks; matrix parameters expand into points",
       .required = true},
      // Checked against the kind's own schema in check_entries.
      {.name = "emulator",
       .kind = ValueKind::kObject,
       .description = "Emulator instances started for the run"},
      {.name = "history", .kind = ValueKind::kObject, .object = object(history)},
      {.name = "ab_pairs", .kind = ValueKind::kList, .object = object(ab_pair)},
  };
  for (const auto* provider : all_host_providers()) {
    if (const ObjectSchema* settings = provider->settings_schema()) {
      schema.fields.push_back(
          {.name = std::string(provider->name()),
           .kind = ValueKind::kObject,
           .description = fmt::format("Settings of the {} provider", provider->name()),
           .object = object(*settings)});
    }
  }
  return schema;
}

std::string sha256_hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += fmt::format("{:02x}", digest[i]);
  }
  return hex;
}

// Applies one `--set a.b.c=value`. List items are addressed by index or by their name.
void apply_override(YAML::Node root, const std::string& assignment, Diagnostics& out) {
  auto fail = [&](const std::string& path, const std::string& message) {
    out.push_back(Diagnostic{.file = "--set", .path = path, .message = message});
  };
  auto equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    fail(assignment, "expected key.path=value");
    return;
  }
  std::string path = assignment.substr(0, equals);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(equals + 1));
  } catch (const YAML::Exception& e) {
    fail(path, fmt::format("the value is not valid YAML: {}", e.msg));
    return;
  }
  std::vector<std::string> keys;
  std::stringstream stream(path);
  for (std::string key; std::getline(stream, key, '.');) {
    if (key.empty()) {
      fail(path, "empty key in the path");
      return;
    }
    keys.push_back(key);
  }
  YAML::Node node = root;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    bool last = i + 1 == keys.size();
    if (node.IsSequence()) {
      YAML::Node item;
      bool found = false;
      bool is_index = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
      if (is_index && std::stoul(key) < node.size()) {
        item = node[std::stoul(key)];
        found = true;
      } else {
        for (std::size_t j = 0; j < node.size(); ++j) {
          if (node[j].IsMap() && node[j]["name"] && node[j]["name"].Scalar() == key) {
            item = node[j];
            found = true;
          }
        }
      }
      if (!found) {
        fail(path, fmt::format("no list item '{}' (give an index or an item's name)", key));
        return;
      }
      if (last) {
        fail(path, "cannot replace a whole list item; set one of its keys");
        return;
      }
      node.reset(item);
      continue;
    }
    if (!node.IsMap() && !node.IsNull()) {
      fail(path, fmt::format("'{}' is not a mapping", keys[i > 0 ? i - 1 : 0]));
      return;
    }
    if (last) {
      node[key] = value;
      return;
    }
    YAML::Node child = node[key];
    node.reset(child);
  }
}

std::string scalar(const YAML::Node& node, const std::string& fallback = "") {
  return node && node.IsScalar() ? node.Scalar() : fallback;
}

bool valid_scenario_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

void check_entries(const YAML::Node& root, const std::string& file, Diagnostics& out) {
  if (root["emulator"] && root["emulator"].IsMap()) {
    const YAML::Node& emulator = root["emulator"];
    const EmulatorKind* kind =
        emulator["kind"] ? find_emulator_kind(scalar(emulator["kind"])) : nullptr;
    validate(emulator, emulator_schema_for(kind), file, "emulator", out);
    int instances = kind ? kind->instance_count(emulator) : 0;
    if (kind && root["hosts"] && root["hosts"].IsSequence()) {
      for (std::size_t i = 0; i < root["hosts"].size(); ++i) {
        const YAML::Node& instance = root["hosts"][i]["instance"];
        if (instance && instance.IsScalar() &&
            std::all_of(instance.Scalar().begin(), instance.Scalar().end(), ::isdigit) &&
            std::stoi(instance.Scalar()) > instances) {
          out.push_back(
              diagnostic_at(instance, file, fmt::format("hosts[{}].instance", i),
                            fmt::format("the emulator has {} instance{}, there is no instance {}",
                                        instances, instances == 1 ? "" : "s", instance.Scalar())));
        }
      }
    }
  }
  // Hosts: the provider decides which keys an entry takes.
  if (root["hosts"] && root["hosts"].IsSequence()) {
    const YAML::Node& hosts = root["hosts"];
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      std::string path = fmt::format("hosts[{}]", i);
      const YAML::Node& host = hosts[i];
      if (!host.IsMap()) {
        out.push_back(diagnostic_at(host, file, path, "expected a mapping with name and provider"));
        continue;
      }
      HostProvider* provider = find_host_provider(scalar(host["provider"]));
      if (provider == nullptr) {
        // Without a known provider, check the keys every host has, so typos get suggestions.
        ObjectSchema generic;
        generic.fields = {kNameField,
                          {.name = "provider",
                           .kind = ValueKind::kEnum,
                           .required = true,
                           .enum_values = provider_names()},
                          {.name = "address", .kind = ValueKind::kIpv4},
                          kInstanceField};
        for (const auto* any : all_host_providers()) {
          for (const auto& field : any->host_schema().fields) {
            if (!generic.find(field.name)) {
              generic.fields.push_back(field);
            }
          }
        }
        validate(host, generic, file, path, out);
        continue;
      }
      validate(host, host_schema_for(*provider), file, path, out);
    }
  }
  if (root["setup"] && root["setup"].IsSequence()) {
    const YAML::Node& steps = root["setup"];
    for (std::size_t i = 0; i < steps.size(); ++i) {
      std::string path = fmt::format("setup[{}]", i);
      const SetupStep* step =
          steps[i].IsMap() ? find_setup_step(scalar(steps[i]["step"])) : nullptr;
      if (step == nullptr) {
        FieldSchema kind{.name = "step",
                         .kind = ValueKind::kEnum,
                         .required = true,
                         .enum_values = step_names()};
        if (!steps[i].IsMap()) {
          out.push_back(
              diagnostic_at(steps[i], file, path, "expected a mapping with a 'step' key"));
        } else if (!steps[i]["step"]) {
          out.push_back(diagnostic_at(steps[i], file, path, "missing required key 'step'"));
        } else {
          validate_field(steps[i]["step"], kind, file, path + ".step", out);
        }
        continue;
      }
      validate(steps[i], step_schema_for(*step), file, path, out);
    }
  }
  if (root["benchmarks"] && root["benchmarks"].IsSequence()) {
    const YAML::Node& benchmarks = root["benchmarks"];
    for (std::size_t i = 0; i < benchmarks.size(); ++i) {
      std::string path = fmt::format("benchmarks[{}]", i);
      if (!benchmarks[i].IsMap()) {
        out.push_back(
            diagnostic_at(benchmarks[i], file, path, "expected a mapping with name and tool"));
        continue;
      }
      validate(benchmarks[i], benchmark_schema_for(find_benchmark(scalar(benchmarks[i]["tool"]))),
               file, path, out);
    }
  }
}

// Checks that need the whole scenario: names unique, references resolve.
void check_references(const YAML::Node& root, const std::string& file, Diagnostics& out) {
  std::vector<std::string> host_names;
  if (root["hosts"] && root["hosts"].IsSequence()) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < root["hosts"].size(); ++i) {
      const YAML::Node& name = root["hosts"][i]["name"];
      if (name && name.IsScalar()) {
        if (!seen.insert(name.Scalar()).second) {
          out.push_back(diagnostic_at(name, file, fmt::format("hosts[{}].name", i),
                                      fmt::format("host '{}' is defined twice", name.Scalar())));
        }
        host_names.push_back(name.Scalar());
      }
    }
  }
  auto check_host = [&](const YAML::Node& node, const std::string& path) {
    if (!node || !node.IsScalar()) {
      return;
    }
    if (std::find(host_names.begin(), host_names.end(), node.Scalar()) == host_names.end()) {
      std::string message = fmt::format("no host named '{}'", node.Scalar());
      if (auto guess = closest_match(node.Scalar(), host_names); !guess.empty()) {
        message += fmt::format("; did you mean '{}'?", guess);
      }
      out.push_back(diagnostic_at(node, file, path, message));
    }
  };
  std::vector<std::string> benchmark_names;
  if (root["benchmarks"] && root["benchmarks"].IsSequence()) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < root["benchmarks"].size(); ++i) {
      const YAML::Node& entry = root["benchmarks"][i];
      if (!entry.IsMap()) {
        continue;
      }
      std::string path = fmt::format("benchmarks[{}]", i);
      if (entry["name"] && entry["name"].IsScalar()) {
        if (!seen.insert(entry["name"].Scalar()).second) {
          out.push_back(diagnostic_at(
              entry["name"], file, path + ".name",
              fmt::format("benchmark '{}' is defined twice", entry["name"].Scalar())));
        }
        benchmark_names.push_back(entry["name"].Scalar());
      }
      check_host(entry["server"], path + ".server");
      check_host(entry["client"], path + ".client");
      const Benchmark* tool = find_benchmark(scalar(entry["tool"]));
      if (tool != nullptr && tool->needs_server() && !entry["server"]) {
        out.push_back(diagnostic_at(entry, file, path,
                                    fmt::format("missing required key 'server': {} runs a server "
                                                "and a client",
                                                tool->tool())));
      }
      if (tool != nullptr && entry["server"] && entry["client"] && entry["server"].IsScalar() &&
          entry["client"].IsScalar() && entry["server"].Scalar() == entry["client"].Scalar() &&
          tool->needs_server()) {
        // Allowed (loopback runs), but only on providers where that makes sense: no error.
      }
    }
  }
  if (root["setup"] && root["setup"].IsSequence()) {
    for (std::size_t i = 0; i < root["setup"].size(); ++i) {
      const YAML::Node& hosts = root["setup"][i]["hosts"];
      if (hosts && hosts.IsSequence()) {
        for (std::size_t j = 0; j < hosts.size(); ++j) {
          check_host(hosts[j], fmt::format("setup[{}].hosts[{}]", i, j));
        }
      }
    }
  }
  if (root["ab_pairs"] && root["ab_pairs"].IsSequence()) {
    for (std::size_t i = 0; i < root["ab_pairs"].size(); ++i) {
      for (const char* side : {"a", "b"}) {
        const YAML::Node& ref = root["ab_pairs"][i][side];
        if (ref && ref.IsScalar() &&
            std::find(benchmark_names.begin(), benchmark_names.end(), ref.Scalar()) ==
                benchmark_names.end()) {
          out.push_back(diagnostic_at(ref, file, fmt::format("ab_pairs[{}].{}", i, side),
                                      fmt::format("no benchmark named '{}'", ref.Scalar())));
        }
      }
    }
  }
  if (root["name"] && root["name"].IsScalar() && !valid_scenario_name(root["name"].Scalar())) {
    out.push_back(diagnostic_at(root["name"], file, "name",
                                fmt::format("expected letters, digits, '.', '_' or '-' (it names "
                                            "the run directory), found '{}'",
                                            root["name"].Scalar())));
  }
}

std::chrono::milliseconds to_ms(const std::string& text) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(*parse_duration(text));
}

Scenario build(const YAML::Node& root, const std::string& file) {
  Scenario scenario;
  scenario.file = file;
  scenario.root = root;
  scenario.name = root["name"].Scalar();
  scenario.description = scalar(root["description"]);
  scenario.runner = scalar(root["runner"], "local");
  for (const auto& node : root["hosts"]) {
    scenario.hosts.push_back(HostSpec{.name = node["name"].Scalar(),
                                      .provider = node["provider"].Scalar(),
                                      .address = scalar(node["address"]),
                                      .config = node});
  }
  if (root["emulator"]) {
    scenario.emulator.kind = root["emulator"]["kind"].Scalar();
    scenario.emulator.config = root["emulator"];
  }
  if (root["setup"]) {
    for (const auto& node : root["setup"]) {
      SetupEntry entry{.step = node["step"].Scalar(), .hosts = {}, .config = node};
      if (node["hosts"]) {
        for (const auto& host : node["hosts"]) {
          entry.hosts.push_back(host.Scalar());
        }
      } else {
        for (const auto& host : scenario.hosts) {
          entry.hosts.push_back(host.name);
        }
      }
      scenario.setup.push_back(std::move(entry));
    }
  }
  for (const auto& node : root["benchmarks"]) {
    BenchmarkEntry entry;
    entry.name = node["name"].Scalar();
    entry.tool = node["tool"].Scalar();
    entry.server = scalar(node["server"]);
    entry.client = node["client"].Scalar();
    entry.params = node["params"] ? node["params"] : YAML::Node(YAML::NodeType::Map);
    if (node["repetitions"]) {
      entry.repetitions = node["repetitions"].as<int>();
    }
    if (node["timeout"]) {
      entry.timeout = to_ms(node["timeout"].Scalar());
    }
    if (node["port"]) {
      entry.base_port = static_cast<std::uint16_t>(node["port"].as<int>());
    }
    scenario.benchmarks.push_back(std::move(entry));
  }
  if (root["ab_pairs"]) {
    for (const auto& node : root["ab_pairs"]) {
      scenario.ab_pairs.push_back(
          {node["name"].Scalar(), node["a"].Scalar(), node["b"].Scalar(), node["metric"].Scalar()});
    }
  }
  if (const YAML::Node& history = root["history"]) {
    if (history["enabled"]) {
      scenario.history.enabled = history["enabled"].Scalar() == "true";
    }
    if (history["path"]) {
      scenario.history.path = history["path"].Scalar();
    }
    if (history["tracked_sizes"]) {
      scenario.history.tracked_sizes.clear();
      for (const auto& size : history["tracked_sizes"]) {
        scenario.history.tracked_sizes.push_back(*parse_size(size.Scalar()));
      }
    }
  }
  YAML::Emitter emitter;
  emitter << root;
  scenario.resolved_yaml = std::string(emitter.c_str()) + "\n";
  scenario.sha256 = sha256_hex(scenario.resolved_yaml);
  return scenario;
}

}  // namespace

const HostSpec* Scenario::find_host(const std::string& host_name) const {
  for (const auto& host : hosts) {
    if (host.name == host_name) {
      return &host;
    }
  }
  return nullptr;
}

LoadResult load_scenario_text(const std::string& text, const std::string& file,
                              const std::vector<std::string>& overrides) {
  LoadResult result;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    result.diagnostics.push_back(Diagnostic{.file = file,
                                            .line = e.mark.line + 1,
                                            .column = e.mark.column + 1,
                                            .path = "",
                                            .message = fmt::format("malformed YAML: {}", e.msg)});
    return result;
  }
  if (!root.IsMap()) {
    result.diagnostics.push_back(diagnostic_at(
        root, file, "", "expected a mapping with name, hosts and benchmarks at the top level"));
    return result;
  }
  for (const auto& assignment : overrides) {
    apply_override(root, assignment, result.diagnostics);
  }
  if (!result.diagnostics.empty()) {
    return result;
  }
  validate(root, top_level_schema(), file, "", result.diagnostics);
  check_entries(root, file, result.diagnostics);
  check_references(root, file, result.diagnostics);
  if (result.diagnostics.empty()) {
    // Provider checks need well-formed hosts.
    for (auto* provider : all_host_providers()) {
      std::vector<HostSpec> mine;
      for (const auto& node : root["hosts"]) {
        if (node["provider"].Scalar() == provider->name()) {
          mine.push_back(HostSpec{node["name"].Scalar(), node["provider"].Scalar(),
                                  scalar(node["address"]), node});
        }
      }
      if (!mine.empty()) {
        provider->check(mine, root, file, result.diagnostics);
      }
    }
  }
  std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                   });
  if (result.diagnostics.empty()) {
    result.scenario = build(root, file);
  }
  return result;
}

LoadResult load_scenario(const std::filesystem::path& file,
                         const std::vector<std::string>& overrides) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    LoadResult result;
    result.diagnostics.push_back(
        Diagnostic{.file = file.string(),
                   .line = 0,
                   .column = 0,
                   .path = "",
                   .message = fmt::format("cannot read the scenario: {}", std::strerror(errno))});
    return result;
  }
  std::stringstream text;
  text << in.rdbuf();
  return load_scenario_text(text.str(), file.string(), overrides);
}

nlohmann::json scenario_json_schema() {
  nlohmann::json schema = to_json_schema(top_level_schema());
  schema["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  schema["title"] = "ernicctl scenario";
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto* provider : all_host_providers()) {
    auto one = to_json_schema(host_schema_for(*provider));
    one["properties"]["provider"] = {{"const", std::string(provider->name())}};
    hosts.push_back(one);
  }
  schema["properties"]["hosts"] = {
      {"type", "array"}, {"minItems", 1}, {"items", {{"oneOf", hosts}}}};
  nlohmann::json steps = nlohmann::json::array();
  for (const auto* step : all_setup_steps()) {
    auto one = to_json_schema(step_schema_for(*step));
    one["properties"]["step"] = {{"const", std::string(step->kind())}};
    steps.push_back(one);
  }
  schema["properties"]["setup"] = {{"type", "array"}, {"items", {{"oneOf", steps}}}};
  nlohmann::json tools = nlohmann::json::array();
  for (const auto* benchmark : all_benchmarks()) {
    auto one = to_json_schema(benchmark_schema_for(benchmark));
    one["properties"]["tool"] = {{"const", std::string(benchmark->tool())}};
    tools.push_back(one);
  }
  schema["properties"]["benchmarks"] = {
      {"type", "array"}, {"minItems", 1}, {"items", {{"oneOf", tools}}}};
  nlohmann::json emulators = nlohmann::json::array();
  for (const auto* kind : all_emulator_kinds()) {
    auto one = to_json_schema(emulator_schema_for(kind));
    one["properties"]["kind"] = {{"const", std::string(kind->name())}};
    emulators.push_back(one);
  }
  schema["properties"]["emulator"] = {{"oneOf", emulators}};
  return schema;
}

}  // namespace ernic
