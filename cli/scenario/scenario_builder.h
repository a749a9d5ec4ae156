#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "scenario/scenario.h"

namespace ernic {

struct Platform;

// The typed Scenario of a document that passed the schema and reference checks
// (scenario_loader.cc runs them first); reads values as the schema guarantees them, so
// nothing here can fail. Hosts, setup entries and the emulator section get their component's
// configuration as typed values (make_config).
Scenario build_scenario(const Platform& platform, const YAML::Node& root, const std::string& file);

}  // namespace ernic
