#include "synthetic_history.h"

#include <catch2/catch.hpp>

#include "history_tools.h"
#include "record_points.h"
#include "run_index.h"
#include "testing/fixtures.h"

using namespace ernic::reports;

TEST_CASE("synthetic records follow the history format and alternate runner classes") {
  SyntheticOptions options;
  auto first = synthetic_record(0, options);
  CHECK(record_problems(first).empty());
  CHECK(first["runner"] == "github-hosted");
  CHECK(synthetic_record(1, options)["runner"] == "self-hosted");
  CHECK(synthetic_record(0, options) == first);  // deterministic
  auto typed = ernic::read_history_record(first);
  auto points = points_of(typed);
  REQUIRE(points.size() == 8);
  CHECK(points[0].kind == PointKind::kBandwidth);
  CHECK(points[0].verb == "send");
  CHECK(points[0].size == 4096u);
  CHECK(points[4].kind == PointKind::kLatency);
  CHECK(points[7].kind == PointKind::kTcp);
  CHECK(points[0].record->values("bw_avg_GBs").size() == options.repetitions);
  CHECK(first["series"]["bandwidth"].size() == 3);
  CHECK(synthetic_record(1, options)["generated"] > first["generated"]);
}
