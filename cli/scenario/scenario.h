#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/config_value.h"
#include "hosts/provider.h"

namespace ernic {

// A `setup:` entry: one step applied to some hosts, in scenario order.
struct SetupEntry {
  std::string step;
  std::vector<std::string> hosts;
  Config config;  // the whole entry, typed by the step's schema
};

// One server/client pair of a benchmark entry: every point of the entry runs on all of its
// tenants at once (`tenants:`).
struct Tenant {
  std::string name;    // "t1", "t2", ... unless the scenario names it
  std::string server;  // host names; server is empty for single-host tools
  std::string client;
};

// A `benchmarks:` entry; its matrix parameters expand into points (see plan/planner.h).
struct BenchmarkEntry {
  std::string name;
  std::string tool;
  std::string server;  // the first tenant's host names; server is empty for single-host tools
  std::string client;
  std::vector<Tenant> tenants;  // the scenario's; the first is `server` and `client`
  YAML::Node params;
  int repetitions = 1;
  std::chrono::milliseconds timeout{60000};
  std::uint16_t base_port = 0;  // 0: the tool's default

  bool multi_tenant() const { return tenants.size() > 1; }
  // `tenants`, or the one tenant of `server` and `client` for an entry built without them.
  std::vector<Tenant> all_tenants() const {
    return tenants.empty() ? std::vector<Tenant>{{"t1", server, client}} : tenants;
  }
};

// A declared comparison: B over A, measured side by side in one run (methodology item 3).
struct AbPair {
  std::string name;
  std::string a;  // benchmark names; points pair up by equal parameters
  std::string b;
  std::string metric;
};

// A `concurrent:` group: benchmark entries whose points start together, the k-th point of each
// entry with the k-th of the others (every server ready before any client starts).
struct ConcurrentGroup {
  std::string name;
  std::vector<std::string> benchmarks;
};

struct HistorySettings {
  bool enabled = true;
  std::filesystem::path path = "perf/history.jsonl";
  std::vector<std::uint64_t> tracked_sizes = {4096, 65536, 1048576};
  // Whether the record's top-level `series` and `badges`, which rocm-ernic's publisher and
  // `ernicctl report`'s badges read, come from this scenario. Otherwise they are left empty
  // and the series go under `ernicctl.series`, where only ernicctl's per-scenario trends read
  // them.
  bool publish = true;
};

struct EmulatorSettings {
  std::string kind = "none";  // none | embedded | external
  Config config;              // the section, typed by the kind's schema
};

// A scenario after validation and --set overrides: everything the planner needs, nothing
// about how it will run.
struct Scenario {
  std::filesystem::path file;
  std::string name;
  std::string description;
  std::string runner = "auto";  // "auto" is resolved when the record is written
  std::vector<HostSpec> hosts;
  EmulatorSettings emulator;
  std::vector<SetupEntry> setup;
  std::vector<BenchmarkEntry> benchmarks;
  std::vector<AbPair> ab_pairs;
  std::vector<ConcurrentGroup> concurrent;
  HistorySettings history;
  // The document typed by the top-level schema, for the sections providers read (`netns:`,
  // `libvirt:`) and the emulator kind.
  Config settings;

  YAML::Node root;            // the resolved document, for the loader and the run directory
  std::string resolved_yaml;  // as written into the run directory
  std::string sha256;         // of resolved_yaml

  const HostSpec* find_host(const std::string& host_name) const;
};

}  // namespace ernic
