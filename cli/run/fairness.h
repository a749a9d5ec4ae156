#pragma once

#include <optional>
#include <string>

#include "history/history_record.h"
#include "run/run_result.h"

namespace ernic {

// Jain's index over a point's tenants, for its headline metric when that is a throughput
// (higher is better), in every repetition all tenants passed, and its spread over the
// repetitions. nullopt for a point with one tenant, a latency headline, or no such repetition.
std::optional<FairnessRecord> point_fairness(const PointResult& result);

// "J 0.998, shares 0.24-0.26", for the point's summary line.
std::string describe_fairness(const FairnessRecord& fairness);

}  // namespace ernic
