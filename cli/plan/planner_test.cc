#include "plan/plan.h"

#include <catch2/catch.hpp>

#include "builtin_platform.h"
#include "scenario/param_matrix.h"
#include "scenario/platform.h"
#include "scenario/scenario_loader.h"

TEST_CASE("matrix parameters expand into the cartesian product, first one slowest") {
  const ernic::Platform platform = ernic::builtin_platform();
  auto loaded = ernic::load_scenario_text(platform, R"(name: m
hosts: [{name: a, provider: local}, {name: b, provider: local}]
benchmarks:
  - {name: t, tool: iperf3, server: a, client: b, params: {protocol: [tcp, udp], reverse: [false, true], duration: 1s}}
  - {name: u, tool: iperf3, server: a, client: b, port: 31000, params: {parallel: [1, 2, 4]}}
)",
                                          "m.yaml", {});
  REQUIRE(loaded.diagnostics.empty());
  auto plan = ernic::make_plan(*loaded.scenario, platform);
  REQUIRE(plan.points.size() == 7);
  CHECK(plan.points[0].id == "t[protocol=tcp,reverse=false,parallel=1]");
  CHECK(plan.points[1].id == "t[protocol=tcp,reverse=true,parallel=1]");
  CHECK(plan.points[2].id == "t[protocol=udp,reverse=false,parallel=1]");
  CHECK(plan.points[3].params.text("duration") == "1000");
  CHECK(plan.points[6].id == "u[protocol=tcp,reverse=false,parallel=4]");
  // Every point gets its own port; an explicit base port counts up within its benchmark.
  CHECK(plan.points[0].port != plan.points[1].port);
  CHECK(plan.points[4].port == 31000);
  CHECK(plan.points[6].port == 31002);
}

TEST_CASE("size ranges expand by their factor and lists keep their order") {
  ernic::ObjectSchema schema;
  schema.fields = {{.name = "size", .kind = ernic::ValueKind::kSize, .matrix = true}};
  auto sweep =
      ernic::expand_params(YAML::Load("{size: {from: 4KiB, to: 8MiB, factor: 2}}"), schema);
  REQUIRE(sweep.size() == 12);
  CHECK(sweep.front().bytes("size") == 4096);
  CHECK(sweep.back().bytes("size") == 8388608);
  auto by4 = ernic::expand_params(YAML::Load("{size: {from: 4KiB, to: 1MiB, factor: 4}}"), schema);
  REQUIRE(by4.size() == 5);
  CHECK(by4[4].bytes("size") == 1048576);
  auto listed = ernic::expand_params(YAML::Load("{size: [1MiB, 4096, 64KiB]}"), schema);
  REQUIRE(listed.size() == 3);
  CHECK(listed[0].bytes("size") == 1048576);
  CHECK(listed[1].bytes("size") == 4096);
}

TEST_CASE("every tenant of a point gets its own port; single tenants keep theirs") {
  const ernic::Platform platform = ernic::builtin_platform();
  auto loaded = ernic::load_scenario_text(platform, R"(name: m
hosts: [{name: a, provider: local}, {name: b, provider: local}, {name: c, provider: local}]
benchmarks:
  - {name: one, tool: iperf3, server: a, client: b, params: {parallel: [1, 2]}}
  - {name: many, tool: iperf3, tenants: 3, server: [a, b, c], client: [b, c, a], params: {parallel: [1, 2]}}
  - {name: fixed, tool: iperf3, tenants: 2, server: [a, b], client: [b, a], port: 31000, params: {parallel: [1, 2]}}
  - {name: after, tool: iperf3, server: a, client: b}
)",
                                          "m.yaml", {});
  REQUIRE(loaded.diagnostics.empty());
  auto plan = ernic::make_plan(*loaded.scenario, platform);
  REQUIRE(plan.points.size() == 7);
  CHECK(plan.points[0].ports == std::vector<std::uint16_t>{20000});
  CHECK(plan.points[1].ports == std::vector<std::uint16_t>{20001});
  CHECK(plan.points[2].ports == std::vector<std::uint16_t>{20002, 20003, 20004});
  CHECK(plan.points[3].ports == std::vector<std::uint16_t>{20005, 20006, 20007});
  CHECK(plan.points[3].port == 20005);
  CHECK(plan.points[4].ports == std::vector<std::uint16_t>{31000, 31001});
  CHECK(plan.points[5].ports == std::vector<std::uint16_t>{31002, 31003});
  CHECK(plan.points[6].ports.size() == 1);
  CHECK(plan.points[6].port > 20007);
}
