#include "plan/point_selection.h"

#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <fstream>

#include "builtin_platform.h"
#include "scenario/platform.h"
#include "scenario/scenario_loader.h"
#include "scratch_dir.h"

namespace ernic {
namespace {

struct Planned {
  const Platform platform = builtin_platform();
  std::optional<Scenario> scenario;
  Plan plan;
  Planned() {
    auto loaded = load_scenario_text(platform, R"(name: s
hosts: [{name: a, provider: local}, {name: b, provider: local}]
benchmarks:
  - {name: bw, tool: perftest, server: a, client: b,
     params: {verb: [send, write, read], mode: bw, size: [4KiB, 64KiB]}}
  - {name: tcp, tool: iperf3, server: a, client: b, repetitions: 2, params: {reverse: [false, true]}}
)",
                                     "s.yaml", {});
    REQUIRE(loaded.diagnostics.empty());
    scenario = std::move(loaded.scenario);
    plan = make_plan(*scenario, platform);
    REQUIRE(plan.points.size() == 8);
  }
  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const auto& point : plan.points) {
      out.push_back(point.id);
    }
    return out;
  }
};

using Ids = std::vector<std::string>;

TEST_CASE("point patterns: * and ? are wildcards, brackets are literal", "[selection]") {
  CHECK(matches_pattern("bw[verb=write,*]", "bw[verb=write,mode=bw,size=4KiB]"));
  CHECK_FALSE(matches_pattern("bw[verb=write,*]", "bw[verb=read,mode=bw,size=4KiB]"));
  CHECK(matches_pattern("*size=64KiB]", "bw[verb=send,mode=bw,size=64KiB]"));
  CHECK(matches_pattern("tcp[reverse=?????]", "tcp[reverse=false]"));
  CHECK_FALSE(matches_pattern("tcp[reverse=????]", "tcp[reverse=false]"));
  CHECK(matches_pattern("[*", "[x]"));
  CHECK_FALSE(matches_pattern("b", "bw"));
  CHECK(matches_pattern("*", ""));
}

TEST_CASE("--only and --skip select points in plan order, renumbered", "[selection]") {
  Planned p;
  select_points(p.plan, {.only = {"bw[verb=write,*]", "tcp*"}, .skip = {"*reverse=true*"}});
  CHECK(p.ids() == Ids{"bw[verb=write,mode=bw,size=4KiB]", "bw[verb=write,mode=bw,size=64KiB]",
                       "tcp[protocol=tcp,reverse=false,parallel=1]"});
  CHECK(p.plan.points[2].index == 2);
  CHECK(p.plan.points[2].repetitions == 2);
  CHECK(p.plan.selection == "--only 'bw[verb=write,*]' --only 'tcp*' --skip '*reverse=true*'");
}

TEST_CASE("--repeat sets every selected point's repetitions", "[selection]") {
  Planned p;
  select_points(p.plan, {.only = {"tcp*"}, .repeat = 5});
  REQUIRE(p.plan.points.size() == 2);
  CHECK(p.plan.points[0].repetitions == 5);
  CHECK(p.plan.points[1].repetitions == 5);
}

TEST_CASE("an unmatched pattern is an error listing the closest ids", "[selection]") {
  Planned p;
  try {
    select_points(p.plan, {.only = {"bw[verb=wirte,*]"}});
    FAIL("no error");
  } catch (const SelectionError& e) {
    std::string message = e.what();
    CHECK(message.find("no point matches 'bw[verb=wirte,*]'") != std::string::npos);
    CHECK(message.find("\n  bw[verb=write,mode=bw,size=4KiB]") != std::string::npos);
  }
  CHECK(p.plan.points.size() == 8);
}

TEST_CASE("--rerun-failed selects the points that failed in a run directory", "[selection]") {
  Planned p;
  testing::ScratchDir dir("ernic-rerun");
  std::ofstream(dir / "record.json") << R"({"ernicctl": {"points": [
    {"id": "bw[verb=send,mode=bw,size=4KiB]", "status": "passed"},
    {"id": "bw[verb=read,mode=bw,size=64KiB]", "status": "failed", "reason": "timed out"},
    {"id": "tcp[protocol=tcp,reverse=true,parallel=1]", "status": "failed"}]}})";
  select_points(p.plan, {.rerun_failed = dir});
  CHECK(p.ids() ==
        Ids{"bw[verb=read,mode=bw,size=64KiB]", "tcp[protocol=tcp,reverse=true,parallel=1]"});
  Planned missing;
  CHECK_THROWS_AS(select_points(missing.plan, {.rerun_failed = dir / "nope"}), SelectionError);
}

}  // namespace
}  // namespace ernic
