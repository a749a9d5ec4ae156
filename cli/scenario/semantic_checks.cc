#include "scenario/semantic_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/edit_distance.h"
#include "emulators/emulator_kind.h"
#include "hosts/provider.h"
#include "scenario/param_matrix.h"
#include "scenario/platform.h"
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

  // A host name, or each name of a host list.
  void check(const YAML::Node& node, const std::string& path) const {
    if (node && node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        check(node[i], fmt::format("{}[{}]", path, i));
      }
      return;
    }
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

std::size_t hosts_given(const YAML::Node& hosts) {
  return hosts.IsSequence() ? hosts.size() : 1;
}

// `tenants: N` over the `server:` and `client:` lists (one host alone serves every tenant).
void check_tenant_count(const YAML::Node& entry, const std::string& path, const std::string& file,
                        Diagnostics& out) {
  const YAML::Node& count_node = entry["tenants"];
  std::optional<long long> count = integer_value(count_node, tenant_count_field());
  if (!count) {
    return;  // the schema check reports it
  }
  for (const char* side : {"server", "client"}) {
    const YAML::Node& hosts = entry[side];
    if (hosts && hosts.IsSequence() && hosts.size() < static_cast<std::size_t>(*count)) {
      out.push_back(diagnostic_at(
          hosts, file, fmt::format("{}.{}", path, side),
          fmt::format("tenants: {} takes the i-th {} of this list, which names {} host{}", *count,
                      side, hosts.size(), hosts.size() == 1 ? "" : "s")));
    }
  }
  for (long long i = 0; i < *count && entry["server"] && entry["client"]; ++i) {
    auto nth = [&](const char* side) {
      const YAML::Node& hosts = entry[side];
      std::size_t at = static_cast<std::size_t>(i);
      return hosts.IsSequence() ? (at < hosts.size() ? scalar_text(hosts[at]) : "")
                                : scalar_text(hosts);
    };
    if (*count > 1 && !nth("server").empty() && nth("server") == nth("client")) {
      out.push_back(diagnostic_at(
          entry["client"], file, path + ".client",
          fmt::format("tenant t{} has {} as its server and its client: each tenant's pair is two "
                      "hosts",
                      i + 1, nth("client"))));
    }
  }
}

// `tenants:` as a list of pairs: the hosts are there, not in `server:` and `client:`.
void check_tenant_list(const YAML::Node& entry, const std::string& path,
                       const HostReferences& hosts, const std::string& file, Diagnostics& out) {
  const YAML::Node& tenants = entry["tenants"];
  if (tenants.size() == 0) {
    out.push_back(diagnostic_at(tenants, file, path + ".tenants",
                                "expected at least one tenant, found an empty list"));
  }
  for (const char* side : {"server", "client"}) {
    if (entry[side]) {
      out.push_back(diagnostic_at(
          entry[side], file, fmt::format("{}.{}", path, side),
          fmt::format("'{}' and a list of tenants: give each tenant's {} in `tenants:`", side,
                      side)));
    }
  }
  for (std::size_t t = 0; t < tenants.size(); ++t) {
    if (!tenants[t].IsMap()) {
      continue;
    }
    std::string at = fmt::format("{}.tenants[{}]", path, t);
    hosts.check(tenants[t]["server"], at + ".server");
    hosts.check(tenants[t]["client"], at + ".client");
    std::string server = scalar_text(tenants[t]["server"]);
    if (tenants.size() > 1 && !server.empty() && server == scalar_text(tenants[t]["client"])) {
      out.push_back(diagnostic_at(
          tenants[t], file, at,
          fmt::format("tenant {} has {} as its server and its client: each tenant's pair is two "
                      "hosts",
                      t + 1, server)));
    }
  }
}

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
    const YAML::Node& tenants = entry["tenants"];
    bool tenant_list = tenants && tenants.IsSequence();
    if (tenant_list) {
      check_tenant_list(entry, path, hosts, file, out);
    } else if (tenants && tenants.IsScalar()) {
      check_tenant_count(entry, path, file, out);
    } else {
      for (const char* side : {"server", "client"}) {
        if (entry[side] && hosts_given(entry[side]) > 1) {
          out.push_back(diagnostic_at(
              entry[side], file, fmt::format("{}.{}", path, side),
              fmt::format("a list of {} hosts needs `tenants: N` (tenant i runs on the i-th)",
                          side)));
        }
      }
    }
    if (!tenant_list && !entry["client"]) {
      out.push_back(diagnostic_at(entry, file, path + ".client",
                                  "missing required key 'client' (a host name, or `tenants:` "
                                  "listing server/client pairs)"));
    }
    // A server and client on one host is allowed (loopback runs).
    const Benchmark* tool = platform.tool(scalar_text(entry["tool"]));
    bool has_server =
        tenant_list ? std::all_of(tenants.begin(), tenants.end(),
                                  [](const YAML::Node& t) { return t.IsMap() && t["server"]; })
                    : static_cast<bool>(entry["server"]);
    if (tool != nullptr && tool->needs_server() && !has_server) {
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

// `concurrent:` names benchmarks that exist, at least two per group, each in one group.
void check_concurrent(const YAML::Node& groups, const std::vector<std::string>& benchmark_names,
                      const std::string& file, Diagnostics& out) {
  std::set<std::string> grouped;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const YAML::Node& names = groups[i].IsMap() ? groups[i]["benchmarks"] : YAML::Node();
    if (!is_list(names)) {
      continue;
    }
    std::string path = fmt::format("concurrent[{}].benchmarks", i);
    if (names.size() < 2) {
      out.push_back(diagnostic_at(names, file, path,
                                  "a concurrent group runs at least two benchmarks together"));
    }
    for (std::size_t j = 0; j < names.size(); ++j) {
      const YAML::Node& name = names[j];
      if (!name.IsScalar()) {
        continue;
      }
      std::string at = fmt::format("{}[{}]", path, j);
      if (!contains(benchmark_names, name.Scalar())) {
        std::string message = fmt::format("no benchmark named '{}'", name.Scalar());
        if (auto guess = closest_match(name.Scalar(), benchmark_names); !guess.empty()) {
          message += fmt::format("; did you mean '{}'?", guess);
        }
        out.push_back(diagnostic_at(name, file, at, message));
      } else if (!grouped.insert(name.Scalar()).second) {
        out.push_back(diagnostic_at(
            name, file, at,
            fmt::format("benchmark '{}' is already in a concurrent group", name.Scalar())));
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
  const Config config = make_config(emulator, schema, file, "emulator");
  int instances = kind->instance_count(config);
  const YAML::Node& hosts = root["hosts"];
  std::vector<std::string> host_names;
  for (const auto& host : hosts) {
    if (host.IsMap() && host["name"] && host["name"].IsScalar()) {
      host_names.push_back(host["name"].Scalar());
    }
  }
  kind->check(config, host_names, out);
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
  if (is_list(root["concurrent"])) {
    check_concurrent(root["concurrent"], benchmark_names, file, out);
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

void check_guest_region_machines(const Platform& platform, const Scenario& scenario,
                                 Diagnostics& out) {
  const EmulatorKind* kind = platform.emulator_kind(scenario.emulator.kind);
  if (kind == nullptr || !kind->serves_guest_regions()) {
    return;
  }
  auto machine_of = [&platform](const HostSpec& host) {
    const HostProvider* provider = platform.provider(host.provider);
    return provider != nullptr ? provider->machine_of(host) : std::string();
  };
  auto where = [](const std::string& machine) {
    return machine.empty() ? std::string("this machine") : machine;
  };
  for (const HostSpec& guest : scenario.hosts) {
    const HostProvider* provider = platform.provider(guest.provider);
    if (!guest.config.has("instance") || provider == nullptr ||
        !provider->reaches_instances_through_regions()) {
      continue;
    }
    const int instance = static_cast<int>(guest.config.integer("instance", 0));
    const std::string on = kind->placed_on(scenario.emulator.config, instance);
    std::string instance_machine;
    if (!on.empty()) {
      auto host = std::find_if(scenario.hosts.begin(), scenario.hosts.end(),
                               [&on](const HostSpec& h) { return h.name == on; });
      instance_machine = host != scenario.hosts.end() ? machine_of(*host) : "";
    }
    const std::string guest_machine = machine_of(guest);
    if (guest_machine != instance_machine) {
      out.push_back(guest.config.diagnostic(
          "instance",
          fmt::format("hosts.{}: its QEMU runs on {} and maps instance {}'s guest region, the "
                      "shared memory of the machine the instance runs on, which is {}{}; place "
                      "the instance on the guest's machine (emulator.instances as a list, entry "
                      "{}: {{on: HOST}}, HOST a host of the scenario reached at {})",
                      guest.name, where(guest_machine), instance, where(instance_machine),
                      on.empty() ? "" : fmt::format(" (on: {})", on), instance,
                      where(guest_machine))));
    }
  }
}

void check_concurrent_points(const Platform& platform, const Scenario& scenario, Diagnostics& out) {
  for (std::size_t i = 0; i < scenario.concurrent.size(); ++i) {
    const ConcurrentGroup& group = scenario.concurrent[i];
    const BenchmarkEntry* first = nullptr;
    std::size_t first_points = 0;
    for (std::size_t j = 0; j < group.benchmarks.size(); ++j) {
      auto entry =
          std::find_if(scenario.benchmarks.begin(), scenario.benchmarks.end(),
                       [&](const BenchmarkEntry& e) { return e.name == group.benchmarks[j]; });
      if (entry == scenario.benchmarks.end()) {
        continue;
      }
      std::size_t points =
          expand_params(entry->params, platform.tool(entry->tool)->params()).size();
      if (first == nullptr) {
        first = &*entry;
        first_points = points;
        continue;
      }
      if (points != first_points || entry->repetitions != first->repetitions) {
        const YAML::Node node = scenario.root["concurrent"][i]["benchmarks"][j];
        out.push_back(diagnostic_at(
            node, scenario.file.string(), fmt::format("concurrent[{}].benchmarks[{}]", i, j),
            fmt::format("{} has {} point{} of {} repetition{}, {} has {} of {}: the points of a "
                        "concurrent group start in pairs",
                        entry->name, points, points == 1 ? "" : "s", entry->repetitions,
                        entry->repetitions == 1 ? "" : "s", first->name, first_points,
                        first->repetitions)));
      }
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
