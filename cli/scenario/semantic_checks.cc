#include "scenario/semantic_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/edit_distance.h"
#include "emulators/emulator_kind.h"
#include "hosts/provider.h"
#include "platform/platform.h"
#include "scenario/scenario.h"
#include "scenario/scenario_schema.h"

namespace ernic {
namespace {

// The classes rocm-ernic's publisher charts, and `auto`, which becomes one of them.
const std::vector<std::string> kChartedRunnerClasses = {"auto", "github-hosted", "self-hosted"};

bool is_list(const YAML::Node& node) {
  return node && node.IsSequence();
}

bool valid_scenario_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The names of a list's entries, each name defined once.
std::vector<std::string> unique_names(const YAML::Node& list, const std::string& list_path,
                                      const char* what, const std::string& file, Diagnostics& out) {
  std::vector<std::string> names;
  if (!is_list(list)) {
    return names;
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& name = list[i].IsMap() ? list[i]["name"] : YAML::Node();
    if (!name || !name.IsScalar()) {
      continue;
    }
    if (!seen.insert(name.Scalar()).second) {
      out.push_back(diagnostic_at(name, file, fmt::format("{}[{}].name", list_path, i),
                                  fmt::format("{} '{}' is defined twice", what, name.Scalar())));
    }
    names.push_back(name.Scalar());
  }
  return names;
}

class HostReferences {
 public:
  HostReferences(std::vector<std::string> names, const std::string& file, Diagnostics& out)
      : names_(std::move(names)), file_(file), out_(out) {}

  void check(const YAML::Node& node, const std::string& path) const {
    if (!node || !node.IsScalar() || contains(names_, node.Scalar())) {
      return;
    }
    std::string message = fmt::format("no host named '{}'", node.Scalar());
    if (auto guess = closest_match(node.Scalar(), names_); !guess.empty()) {
      message += fmt::format("; did you mean '{}'?", guess);
    }
    out_.push_back(diagnostic_at(node, file_, path, message));
  }

 private:
  std::vector<std::string> names_;
  const std::string& file_;
  Diagnostics& out_;
};

void check_benchmarks(const Platform& platform, const YAML::Node& benchmarks,
                      const HostReferences& hosts, const std::string& file, Diagnostics& out) {
  for (std::size_t i = 0; i < benchmarks.size(); ++i) {
    const YAML::Node& entry = benchmarks[i];
    if (!entry.IsMap()) {
      continue;
    }
    std::string path = fmt::format("benchmarks[{}]", i);
    hosts.check(entry["server"], path + ".server");
    hosts.check(entry["client"], path + ".client");
    // A server and client on one host is allowed (loopback runs).
    const Benchmark* tool = platform.tool(scalar_text(entry["tool"]));
    if (tool != nullptr && tool->needs_server() && !entry["server"]) {
      out.push_back(
          diagnostic_at(entry, file, path,
                        fmt::format("missing required key 'server': {} runs a server and a client",
                                    tool->tool())));
    }
  }
}

void check_setup_hosts(const YAML::Node& setup, const HostReferences& hosts) {
  for (std::size_t i = 0; i < setup.size(); ++i) {
    const YAML::Node& names = setup[i].IsMap() ? setup[i]["hosts"] : YAML::Node();
    if (!is_list(names)) {
      continue;
    }
    for (std::size_t j = 0; j < names.size(); ++j) {
      hosts.check(names[j], fmt::format("setup[{}].hosts[{}]", i, j));
    }
  }
}

void check_ab_pairs(const YAML::Node& pairs, const std::vector<std::string>& benchmark_names,
                    const std::string& file, Diagnostics& out) {
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    for (const char* side : {"a", "b"}) {
      const YAML::Node& ref = pairs[i].IsMap() ? pairs[i][side] : YAML::Node();
      if (ref && ref.IsScalar() && !contains(benchmark_names, ref.Scalar())) {
        out.push_back(diagnostic_at(ref, file, fmt::format("ab_pairs[{}].{}", i, side),
                                    fmt::format("no benchmark named '{}'", ref.Scalar())));
      }
    }
  }
}

// Hosts attach to instances the emulator section starts.
void check_instances(const Platform& platform, const YAML::Node& root, const std::string& file,
                     Diagnostics& out) {
  const YAML::Node& emulator = root["emulator"];
  if (!emulator || !emulator.IsMap() || !is_list(root["hosts"])) {
    return;
  }
  const EmulatorKind* kind = platform.emulator_kind(scalar_text(emulator["kind"]));
  if (kind == nullptr) {
    return;
  }
  // The kind reads its section as typed values: only a section its schema accepts (the schema
  // check reports the problems; they are not repeated here).
  ObjectSchema schema = emulator_schema_for(platform, kind);
  Diagnostics section_problems;
  validate(emulator, schema, file, "emulator", section_problems);
  if (!section_problems.empty()) {
    return;
  }
  int instances = kind->instance_count(make_config(emulator, schema, file, "emulator"));
  const YAML::Node& hosts = root["hosts"];
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const YAML::Node& instance = hosts[i].IsMap() ? hosts[i]["instance"] : YAML::Node();
    std::optional<long long> number = integer_value(instance, host_instance_field());
    if (number && *number > instances) {
      out.push_back(
          diagnostic_at(instance, file, fmt::format("hosts[{}].instance", i),
                        fmt::format("the emulator has {} instance{}, there is no instance {}",
                                    instances, instances == 1 ? "" : "s", *number)));
    }
  }
}

}  // namespace

void check_references(const Platform& platform, const YAML::Node& root, const std::string& file,
                      Diagnostics& out) {
  check_instances(platform, root, file, out);
  HostReferences hosts(unique_names(root["hosts"], "hosts", "host", file, out), file, out);
  std::vector<std::string> benchmark_names =
      unique_names(root["benchmarks"], "benchmarks", "benchmark", file, out);
  if (is_list(root["benchmarks"])) {
    check_benchmarks(platform, root["benchmarks"], hosts, file, out);
  }
  if (is_list(root["setup"])) {
    check_setup_hosts(root["setup"], hosts);
  }
  if (is_list(root["ab_pairs"])) {
    check_ab_pairs(root["ab_pairs"], benchmark_names, file, out);
  }
  if (root["name"] && root["name"].IsScalar() && !valid_scenario_name(root["name"].Scalar())) {
    out.push_back(diagnostic_at(root["name"], file, "name",
                                fmt::format("expected letters, digits, '.', '_' or '-' (it names "
                                            "the run directory), found '{}'",
                                            root["name"].Scalar())));
  }
}

void check_with_providers(const Platform& platform, const Scenario& scenario, Diagnostics& out) {
  for (const auto* provider : platform.providers) {
    std::vector<HostSpec> mine;
    for (const auto& host : scenario.hosts) {
      if (host.provider == provider->name()) {
        mine.push_back(host);
      }
    }
    if (!mine.empty()) {
      provider->check(mine, scenario.settings, out);
    }
  }
}

void check_for_warnings(const YAML::Node& root, const std::string& file, Diagnostics& out) {
  const YAML::Node& runner = root["runner"];
  if (!runner || !runner.IsScalar() || contains(kChartedRunnerClasses, runner.Scalar())) {
    return;
  }
  std::string message = fmt::format(
      "runner class '{}' is allowed, but rocm-ernic's publisher charts only github-hosted and "
      "self-hosted (auto picks one of them)",
      runner.Scalar());
  if (auto guess = closest_match(runner.Scalar(), kChartedRunnerClasses); !guess.empty()) {
    message += fmt::format("; did you mean '{}'?", guess);
  }
  Diagnostic warning = diagnostic_at(runner, file, "runner", std::move(message));
  warning.severity = Severity::kWarning;
  out.push_back(std::move(warning));
}

}  // namespace ernic
