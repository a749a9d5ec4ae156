#include "record_points.h"

#include <catch2/catch.hpp>

using namespace ernic::reports;

namespace {

// A perftest point as `ernicctl run` records it: the `metrics` map declares every metric the
// tool can report, bandwidth and latency alike; only the measured ones have samples.
nlohmann::json perftest_point(const std::string& mode, const nlohmann::json& measured) {
  nlohmann::json declared = nlohmann::json::object();
  for (const char* name : {"bw_peak_GBs", "bw_avg_GBs", "msg_rate_mpps"}) {
    declared[name] = {{"unit", name[0] == 'm' ? "Mpps" : "GB/s"}, {"better", "higher"}};
  }
  for (const char* name : {"lat_min_us", "lat_max_us", "lat_typical_us", "lat_avg_us",
                           "lat_stdev_us", "lat_p99_us", "lat_p999_us"}) {
    declared[name] = {{"unit", "us"}, {"better", "lower"}};
  }
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [name, value] : measured.items()) {
    summary[name] = {{"n", 1}, {"median", value}};
  }
  return {
      {"id", "sweep[verb=write,mode=" + mode + ",size=65536]"},
      {"benchmark", "sweep"},
      {"tool", "perftest"},
      {"params", {{"verb", "write"}, {"mode", mode}, {"size", "65536"}, {"iterations", "1000"}}},
      {"status", "passed"},
      {"logs", {"steps/003-a.log", "steps/003-b.log"}},
      {"metrics", declared},
      {"samples", {{{"rep", 1}, {"metrics", measured}}}},
      {"summary", summary}};
}

}  // namespace

TEST_CASE("a perftest point's kind comes from its mode, not the declared metrics") {
  nlohmann::json record = {
      {"ernicctl",
       {{"points",
         {perftest_point("bw",
                         {{"bw_peak_GBs", 2.6}, {"bw_avg_GBs", 2.5}, {"msg_rate_mpps", 0.04}}),
          perftest_point("lat", {{"lat_typical_us", 330.99}, {"lat_p99_us", 400.5}})}}}}};
  auto typed = ernic::read_history_record(record);
  auto points = points_of(typed);
  REQUIRE(points.size() == 2);
  CHECK(points[0].kind == PointKind::kBandwidth);
  CHECK(points[0].verb == "write");
  CHECK(points[0].size == 65536u);
  CHECK(primary_metric(*points[0].record) == "bw_avg_GBs");
  CHECK(points[1].kind == PointKind::kLatency);
  CHECK(primary_metric(*points[1].record) == "lat_typical_us");
  CHECK(points[1].record->measured_metrics() ==
        std::vector<std::string>{"lat_p99_us", "lat_typical_us"});
  CHECK(points[1].record->median("lat_p99_us") == 400.5);
  CHECK_FALSE(points[1].record->median("bw_avg_GBs"));
  CHECK(points[0].record->log_paths() == "steps/003-a.log, steps/003-b.log");
}

TEST_CASE("without a mode the measured metric names decide; directions and units") {
  nlohmann::json json = {{"tool", "perftest"},
                         {"samples", {{{"metrics", {{"lat_typical_us", 250.0}}}}}}};
  nlohmann::json record = {{"ernicctl", {{"points", nlohmann::json::array({json})}}}};
  auto typed = ernic::read_history_record(record);
  CHECK(points_of(typed)[0].kind == PointKind::kLatency);
  const ernic::PointRecord& point = typed.points()[0];
  CHECK(metric_direction(point, "lat_typical_us") == -1);
  CHECK(metric_direction(point, "bw_avg_GBs") == 1);
  CHECK(metric_direction(point, "bandwidth_GBs") == 1);
  CHECK(metric_direction(point, "cpu_utilization") == 0);
  ernic::PointRecord declared;
  declared.metrics["weird"] = {"things", "lower"};
  CHECK(metric_direction(declared, "weird") == -1);
  CHECK(metric_unit(declared, "weird") == "things");
  CHECK(metric_unit(point, "bw_avg_GBs") == "GB/s");
}

TEST_CASE("the tool comes from the record, never from a command line") {
  // a perftest point whose command mentions iperf3 and fio is still perftest bandwidth
  nlohmann::json json = {{"tool", "perftest"},
                         {"params", {{"verb", "send"}, {"mode", "bw"}, {"size", "4096"}}},
                         {"commands", {{"client", "ib_send_bw --iperf3-like-name fio "}}},
                         {"samples", {{{"metrics", {{"bw_avg_GBs", 1.0}}}}}}};
  nlohmann::json record = {{"ernicctl", {{"points", nlohmann::json::array({json})}}}};
  auto typed = ernic::read_history_record(record);
  CHECK(points_of(typed)[0].kind == PointKind::kBandwidth);
  // an iperf3 point is TCP because its record says iperf3, whatever the command
  json["tool"] = "iperf3";
  json["params"] = {{"protocol", "tcp"}};
  json["commands"] = {{"client", "/opt/bin/some-wrapper -c 10.0.0.1"}};
  record = {{"ernicctl", {{"points", nlohmann::json::array({json})}}}};
  typed = ernic::read_history_record(record);
  CHECK(points_of(typed)[0].kind == PointKind::kTcp);
}
