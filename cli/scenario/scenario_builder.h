#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "scenario/scenario.h"

namespace ernic {

// The typed Scenario of a document that passed every check (scenario_loader.cc runs them
// first); reads values as the schema guarantees them, so nothing here can fail.
Scenario build_scenario(const YAML::Node& root, const std::string& file);

}  // namespace ernic
