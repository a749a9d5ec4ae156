#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "scenario/platform.h"
#include "scenario/scenario.h"

namespace ernic {

// One benchmark point: a tool with every parameter fixed, run `repetitions` times.
struct PlannedPoint {
  int index = 0;   // 0-based, in run order
  std::string id;  // "tcp[protocol=udp,reverse=false,parallel=1]"
  const BenchmarkEntry* entry = nullptr;
  const Benchmark* tool = nullptr;
  PointParams params;
  std::uint16_t port = 0;            // the first tenant's
  std::vector<std::uint16_t> ports;  // one per tenant of the entry, the first is `port`
  bool port_fixed = false;  // the scenario chose it (`port:`): used as is, never re-reserved
  int repetitions = 1;      // the entry's, unless the run's selection says otherwise (--repeat)
  int together = -1;        // index into Plan::together; -1: the point starts on its own
};

// Points of a `concurrent:` group that start together: the k-th point of each of its entries.
struct PlannedStart {
  int group = 0;  // 1-based, in scenario order
  std::string name;
  std::vector<int> points;  // indices into Plan::points, the group's entries in order
};

// What a run will do, decided before anything starts (ninja's Plan): the executor only
// carries it out, and the dry run only prints it.
struct Plan {
  const Scenario* scenario = nullptr;
  std::vector<PlannedPoint> points;
  std::vector<PlannedStart> together;
  // How the points were selected from the scenario's (`--only 'bw[*]'`); empty: all of them.
  std::string selection;
};

// Expands every benchmark's matrix parameters into points, in scenario order, the first
// declared parameter varying slowest.
Plan make_plan(const Scenario& scenario, const Platform& platform);

}  // namespace ernic
