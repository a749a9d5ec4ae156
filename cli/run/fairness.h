#pragma once

#include <optional>
#include <string>
#include <vector>

#include "history/history_record.h"
#include "run/run_result.h"

namespace ernic {

// Jain's index over a point's tenants, for its headline metric when that is a throughput
// (higher is better), in every repetition all tenants passed, and its spread over the
// repetitions. nullopt for a point with one tenant, a latency headline, or no such repetition.
std::optional<FairnessRecord> point_fairness(const PointResult& result);

// The starts of the run's `concurrent:` groups (the points that ran together), in run order,
// each with Jain's index over its members (every tenant of every point) whose headline metric is
// the same throughput in the same unit: one index per such metric with at least two members,
// over the repetitions in which every one of them passed.
std::vector<GroupRecord> group_fairness(const Scenario& scenario, const RunResult& run);

// The 1-based number of the `concurrent:` group that holds the benchmark entry, 0 for none.
int concurrent_group_number(const Scenario& scenario, const std::string& entry);

// "J 0.998, shares 0.24-0.26", for the point's summary line.
std::string describe_fairness(const FairnessRecord& fairness);
// "J 0.998 over bw_avg_GBs of bulk[...] t1, bulk[...] t2, probe[...], shares 0.24-0.26".
std::string describe_group_fairness(const FairnessRecord& fairness);

}  // namespace ernic
