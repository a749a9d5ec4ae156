#pragma once

// The figure a finished point's progress line shows.
#include <string>

#include "plan/plan.h"
#include "run/run_result.h"

namespace ernic {

// A passed point's headline metric with its unit (the tenants' median and their fairness for
// a point of several tenants); a point that did not pass gives its reason.
std::string point_headline(const PlannedPoint& point, const PointResult& result);

}  // namespace ernic
