#pragma once

#include <yaml-cpp/yaml.h>

#include <vector>

#include "base/schema.h"
#include "benchmarks/benchmark.h"

namespace ernic {

// A benchmark entry's points' parameters: one list of canonical values per parameter of
// `schema` (defaults filled in), then their cartesian product, the first declared parameter
// varying slowest. The semantic checks count points with it; the planner numbers them.
std::vector<PointParams> expand_params(const YAML::Node& params, const ObjectSchema& schema);

}  // namespace ernic
