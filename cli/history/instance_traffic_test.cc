#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "history/history_record.h"

namespace ernic {
namespace {

TEST_CASE("what each instance moved during a point survives writing and reading", "[history]") {
  PointRecord point;
  point.id = "bw[size=64KiB]";
  point.benchmark = "bw";
  point.tool = "perftest";
  point.status = "passed";
  point.instances["1"] = {.bytes_sent = 0, .bytes_received = 12884901888};
  point.instances["2"] = {.bytes_sent = 12884901888, .bytes_received = 0};
  nlohmann::json json = point;
  CHECK(json["instances"] ==
        nlohmann::json::parse(R"({"1": {"bytes_sent": 0, "bytes_received": 12884901888},
                                                       "2": {"bytes_sent": 12884901888, "bytes_received": 0}})"));
  std::vector<std::string> problems;
  HistoryRecord read = read_history_record({{"ernicctl", {{"points", {json}}}}}, &problems);
  const PointRecord& again = read.points().at(0);
  REQUIRE(again.instances.size() == 2);
  CHECK(again.instances.at("2").bytes_sent == 12884901888);
  CHECK(again.instances.at("1").bytes_received == 12884901888);
  CHECK(nlohmann::json(again).dump() == json.dump());

  // Points on no instance write no key, as records before it had none.
  point.instances.clear();
  CHECK_FALSE(nlohmann::json(point).contains("instances"));

  json["instances"]["2"] = "lots";
  problems.clear();
  read_history_record({{"ernicctl", {{"points", {json}}}}}, &problems);
  bool named = false;
  for (const auto& problem : problems) {
    named = named || problem.find("instances") != std::string::npos;
  }
  CHECK(named);
}

}  // namespace
}  // namespace ernic
