#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "base/diagnostics.h"

namespace ernic {

struct Platform;
struct Scenario;

// Checks that need the whole scenario, beyond what each key's schema says: names are unique,
// the hosts a benchmark or setup step names exist, so do the benchmarks an A/B pair names and
// the emulator instances hosts attach to. Safe on a document that failed its schema check:
// values the schema rejected are skipped (it reported them).
void check_references(const Platform& platform, const YAML::Node& root, const std::string& file,
                      Diagnostics& out);

// The providers' own checks (e.g. a subnet large enough for its hosts), on the typed scenario
// of a document that passed every other check.
void check_with_providers(const Platform& platform, const Scenario& scenario, Diagnostics& out);

// Every guest that reaches its embedded instance through a guest region runs on the machine
// where that instance is placed (the region is that machine's shared memory).
void check_guest_region_machines(const Platform& platform, const Scenario& scenario,
                                 Diagnostics& out);

// `concurrent:` groups on the typed scenario: their benchmarks have as many points and
// repetitions each, so that the k-th points start together.
void check_concurrent_points(const Platform& platform, const Scenario& scenario, Diagnostics& out);

// What is allowed but probably not meant, as warnings (e.g. a runner class rocm-ernic's
// publisher does not chart).
void check_for_warnings(const YAML::Node& root, const std::string& file, Diagnostics& out);

}  // namespace ernic
