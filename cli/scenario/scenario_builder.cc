#include "scenario/scenario_builder.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include "base/schema.h"
#include "base/units.h"
#include "emulators/emulator_kind.h"
#include "scenario/platform.h"
#include "scenario/scenario_schema.h"
#include "setup/setup_step.h"

namespace ernic {
namespace {

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

std::vector<SetupEntry> setup_of(const Platform& platform, const YAML::Node& setup,
                                 const std::vector<HostSpec>& hosts, const std::string& file) {
  std::vector<SetupEntry> entries;
  for (std::size_t i = 0; i < setup.size(); ++i) {
    const YAML::Node& node = setup[i];
    const SetupStep* step = platform.setup_step(node["step"].Scalar());
    SetupEntry entry{.step = node["step"].Scalar(),
                     .hosts = {},
                     .config = make_config(node, step_schema_for(platform, *step), file,
                                           fmt::format("setup[{}]", i))};
    if (node["hosts"]) {
      for (const auto& host : node["hosts"]) {
        entry.hosts.push_back(host.Scalar());
      }
    } else {
      for (const auto& host : hosts) {
        entry.hosts.push_back(host.name);
      }
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// The i-th host of a `server:` or `client:` value: a host list, or one host for every tenant.
std::string nth_host(const YAML::Node& hosts, std::size_t i) {
  if (hosts && hosts.IsSequence()) {
    return i < hosts.size() ? hosts[i].Scalar() : "";
  }
  return scalar_text(hosts);
}

// `tenants:` as pairs, or a count over the `server:` and `client:` lists; without it, the one
// tenant of `server:` and `client:`. The semantic checks made sure the hosts exist.
std::vector<Tenant> tenants_of(const YAML::Node& node) {
  const YAML::Node& tenants = node["tenants"];
  std::vector<Tenant> out;
  if (tenants && tenants.IsSequence()) {
    for (std::size_t i = 0; i < tenants.size(); ++i) {
      out.push_back({scalar_text(tenants[i]["name"], fmt::format("t{}", i + 1)),
                     scalar_text(tenants[i]["server"]), scalar_text(tenants[i]["client"])});
    }
    return out;
  }
  std::size_t count = tenants ? tenants.as<std::size_t>() : 1;
  for (std::size_t i = 0; i < count; ++i) {
    out.push_back(
        {fmt::format("t{}", i + 1), nth_host(node["server"], i), nth_host(node["client"], i)});
  }
  return out;
}

BenchmarkEntry benchmark_of(const YAML::Node& node) {
  BenchmarkEntry entry;
  entry.name = node["name"].Scalar();
  entry.tool = node["tool"].Scalar();
  entry.tenants = tenants_of(node);
  entry.server = entry.tenants.front().server;
  entry.client = entry.tenants.front().client;
  entry.params = node["params"] ? node["params"] : YAML::Node(YAML::NodeType::Map);
  // The schema bounds both integers, so the conversions cannot fail.
  if (node["repetitions"]) {
    entry.repetitions = node["repetitions"].as<int>();
  }
  if (node["timeout"]) {
    entry.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        *parse_duration(node["timeout"].Scalar()));
  }
  if (node["port"]) {
    entry.base_port = static_cast<std::uint16_t>(node["port"].as<int>());
  }
  return entry;
}

HistorySettings history_of(const YAML::Node& history) {
  HistorySettings settings;
  if (!history) {
    return settings;
  }
  if (history["enabled"]) {
    settings.enabled = history["enabled"].Scalar() == "true";
  }
  if (history["path"]) {
    settings.path = history["path"].Scalar();
  }
  if (history["publish"]) {
    settings.publish = history["publish"].Scalar() == "true";
  }
  if (history["tracked_sizes"]) {
    settings.tracked_sizes.clear();
    for (const auto& size : history["tracked_sizes"]) {
      settings.tracked_sizes.push_back(*parse_size(size.Scalar()));
    }
  }
  return settings;
}

std::string emulator_kind_of(const YAML::Node& root) {
  return root["emulator"] ? scalar_text(root["emulator"]["kind"], "none") : "none";
}

// The top level as providers read it: the `emulator:` section takes its kind's keys.
ObjectSchema settings_schema(const Platform& platform, const YAML::Node& root) {
  ObjectSchema schema = top_level_schema(platform);
  const EmulatorKind* kind = platform.emulator_kind(emulator_kind_of(root));
  for (auto& field : schema.fields) {
    if (field.name == "emulator") {
      field.object = std::make_shared<const ObjectSchema>(emulator_schema_for(platform, kind));
    }
  }
  return schema;
}

std::vector<HostSpec> host_specs_of(const Platform& platform, const YAML::Node& root,
                                    const std::string& file) {
  std::vector<HostSpec> hosts;
  for (std::size_t i = 0; i < root["hosts"].size(); ++i) {
    const YAML::Node& node = root["hosts"][i];
    const HostProvider* provider = platform.provider(node["provider"].Scalar());
    hosts.push_back(HostSpec{.name = node["name"].Scalar(),
                             .provider = node["provider"].Scalar(),
                             .address = scalar_text(node["address"]),
                             .config = make_config(node, host_schema_for(platform, *provider), file,
                                                   fmt::format("hosts[{}]", i))});
  }
  return hosts;
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

Scenario build_scenario(const Platform& platform, const YAML::Node& root, const std::string& file) {
  Scenario scenario;
  scenario.file = file;
  scenario.root = root;
  scenario.name = root["name"].Scalar();
  scenario.description = scalar_text(root["description"]);
  scenario.runner = scalar_text(root["runner"], scenario.runner);
  scenario.hosts = host_specs_of(platform, root, file);
  scenario.settings = make_config(root, settings_schema(platform, root), file, "");
  scenario.emulator.kind = emulator_kind_of(root);
  scenario.emulator.config = scenario.settings.object("emulator");
  if (root["setup"]) {
    scenario.setup = setup_of(platform, root["setup"], scenario.hosts, file);
  }
  for (const auto& node : root["benchmarks"]) {
    scenario.benchmarks.push_back(benchmark_of(node));
  }
  if (root["ab_pairs"]) {
    for (const auto& node : root["ab_pairs"]) {
      scenario.ab_pairs.push_back(
          {node["name"].Scalar(), node["a"].Scalar(), node["b"].Scalar(), node["metric"].Scalar()});
    }
  }
  if (root["concurrent"]) {
    for (const auto& node : root["concurrent"]) {
      ConcurrentGroup group{.name = node["name"].Scalar(), .benchmarks = {}};
      for (const auto& name : node["benchmarks"]) {
        group.benchmarks.push_back(name.Scalar());
      }
      scenario.concurrent.push_back(std::move(group));
    }
  }
  scenario.history = history_of(root["history"]);
  YAML::Emitter emitter;
  emitter << root;
  scenario.resolved_yaml = std::string(emitter.c_str()) + "\n";
  scenario.sha256 = sha256_hex(scenario.resolved_yaml);
  return scenario;
}

}  // namespace ernic
