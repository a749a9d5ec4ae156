#include "run_summary.h"

#include <catch2/catch.hpp>
#include <map>

#include "testing/fixtures.h"
#include "testing/xml_check.h"

using namespace ernic::reports;

namespace {

nlohmann::json failed_run() {
  nlohmann::json points = nlohmann::json::array();
  points.push_back(testing::make_point("tcp[protocol=tcp,reverse=false]", "iperf3",
                                       {{"protocol", "tcp"}}, "bandwidth_GBs", "GB/s", "higher",
                                       {2.27}));
  points.push_back(testing::make_point(
      "bw[verb=send,size=4096]", "perftest", {{"verb", "send"}, {"size", "4096"}}, "bw_avg_GBs",
      "GB/s", "higher", {}, "failed",
      "ib_send_bw exited 1: Couldn't create CQ <memlock> & more | pipe"));
  points.push_back(testing::make_point("bw[verb=read,size=4096]", "perftest",
                                       {{"verb", "read"}, {"size", "4096"}}, "bw_avg_GBs", "GB/s",
                                       "higher", {}, "skipped", "an earlier point failed"));
  return testing::make_record("77", "2026-11-30 05:41:00 UTC", "local", points, "failed");
}

}  // namespace

TEST_CASE("markdown summary: status, per point medians, failures with reasons") {
  auto markdown = render_markdown_summary(failed_run());
  CHECK_THAT(markdown, Catch::Matchers::StartsWith("## ernicctl run `quickstart`: \u274c failed"));
  CHECK(markdown.find("3 points: 1 passed, 1 failed, 1 skipped.") != std::string::npos);
  CHECK(markdown.find(
            "| `tcp[protocol=tcp,reverse=false]` | \u2705 passed | bandwidth_GBs 2.27 GB/s |") !=
        std::string::npos);
  CHECK(markdown.find("### Failures") != std::string::npos);
  // a '|' inside a reason must not split the table cell or list item
  CHECK(markdown.find("- `bw[verb=send,size=4096]`: ib_send_bw exited 1: Couldn't create CQ "
                      "<memlock> & more \\| pipe") != std::string::npos);
  CHECK(markdown.find("`bw[verb=read,size=4096]`: ") ==
        std::string::npos);  // skipped is no failure
}

TEST_CASE("markdown summary of a passed run has no failures section") {
  auto record = testing::make_record(
      "78", "2026-11-30 05:41:00 UTC", "local",
      nlohmann::json::array(
          {testing::make_point("p", "iperf3", {}, "bandwidth_GBs", "GB/s", "higher", {1, 2, 3})}));
  auto markdown = render_markdown_summary(record);
  CHECK(markdown.find("\u2705 passed") != std::string::npos);
  CHECK(markdown.find("(n=3)") != std::string::npos);
  CHECK(markdown.find("Failures") == std::string::npos);
}

TEST_CASE("JUnit: one test case per point, failure with its reason, skipped") {
  auto xml = render_junit(failed_run());
  REQUIRE_FALSE(testing::xml_error(xml));
  CHECK(testing::xpath_values(xml, "/testsuites/@tests") == std::vector<std::string>{"3"});
  CHECK(testing::xpath_values(xml, "/testsuites/testsuite/@failures") ==
        std::vector<std::string>{"1"});
  CHECK(testing::xpath_values(xml, "/testsuites/testsuite/@skipped") ==
        std::vector<std::string>{"1"});
  CHECK(testing::xpath_values(xml, "//testcase/@name") ==
        std::vector<std::string>{"tcp[protocol=tcp,reverse=false]", "bw[verb=send,size=4096]",
                                 "bw[verb=read,size=4096]"});
  CHECK(
      testing::xpath_values(xml, "//testcase[@name='bw[verb=send,size=4096]']/failure/@message") ==
      std::vector<std::string>{"ib_send_bw exited 1: Couldn't create CQ <memlock> & more | pipe"});
  CHECK(
      testing::xpath_values(xml, "//testcase[@name='bw[verb=read,size=4096]']/skipped/@message") ==
      std::vector<std::string>{"an earlier point failed"});
  CHECK(testing::xpath_values(xml, "//property[@name='run_id']/@value") ==
        std::vector<std::string>{"77"});
}

TEST_CASE("JUnit: a run that did not pass without a failed point still fails") {
  auto record = testing::make_record("79", "2026-11-30 05:41:00 UTC", "local",
                                     nlohmann::json::array(), "incomplete");
  record["ernicctl"]["error"] = "interrupted (SIGINT)\x01";
  auto xml = render_junit(record);
  REQUIRE_FALSE(testing::xml_error(xml));
  CHECK(testing::xpath_values(xml, "//testcase[@name='run']/failure/@message") ==
        std::vector<std::string>{"interrupted (SIGINT) "});
}

TEST_CASE("markdown summary: one table per rung, each with that rung's figures only", "[rung]") {
  auto markdown = render_markdown_summary(testing::make_ladder_record("80"));
  // the text of each "### Rung ..." section
  std::map<std::string, std::string> sections;
  for (std::size_t at = markdown.find("### "); at != std::string::npos;) {
    std::size_t next = markdown.find("### ", at + 4);
    std::string section = markdown.substr(at + 4, next - at - 4);
    sections[section.substr(0, section.find('\n'))] = section;
    at = next;
  }
  REQUIRE(sections.size() == 5);
  CHECK(sections["Rung 1: init"].find("| `server` | netns | 0.02 |") != std::string::npos);
  const std::string& runtime = sections["Rung 2: runtime-start"];
  CHECK(runtime.find("| `bw[verb=send,size=4096]` | \u2705 passed | time_to_first_rts_ms 13 ms "
                     "(n=2) |") != std::string::npos);
  CHECK(runtime.find("bw_avg_GBs") == std::string::npos);
  const std::string& execution = sections["Rung 3: execution"];
  CHECK(
      execution.find("| `bw[verb=send,size=4096]` | \u2705 passed | bw_avg_GBs 3.1 GB/s (n=2) |") !=
      std::string::npos);
  CHECK(execution.find("lat_typical_us 5 us") != std::string::npos);
  for (const char* elsewhere : {"time_to_first_rts_ms", "soak[", "tenants[", "lat-loaded["}) {
    CHECK(execution.find(elsewhere) == std::string::npos);
  }
  CHECK(sections["Rung 4: sustained"].find("`soak[verb=send,size=4096]`") != std::string::npos);
  const std::string& tenants = sections["Rung 5: multi-tenant"];
  CHECK(tenants.find("bw_avg_GBs 1.45 GB/s, jain_index 0.998 (n=2)") != std::string::npos);
  CHECK(tenants.find("lat-loaded[") != std::string::npos);
  CHECK(tenants.find("soak[") == std::string::npos);
}

TEST_CASE("markdown summary: a concurrent group's index and the first-row upper bound, by rung",
          "[rung]") {
  nlohmann::json record = testing::make_ladder_record("81");
  nlohmann::json& points = record["ernicctl"]["points"];
  points[0]["samples"][0]["metrics"]["time_to_first_row_ms"] = 41.5;
  points[0]["metrics"]["time_to_first_row_ms"] = {{"unit", "ms"}, {"better", "lower"}};
  record["ernicctl"]["groups"] = nlohmann::json::array(
      {testing::make_group("beside", {"tenants[x]", "lat-loaded[y]"},
                           {"tenants[x] t1", "tenants[x] t2"}, {0.95, 0.97, 0.99})});
  std::string markdown = render_markdown_summary(record);
  std::size_t rung5 = markdown.find("### Rung 5: multi-tenant");
  REQUIRE(rung5 != std::string::npos);
  CHECK(markdown.find("| beside | `tenants[x] t1`, `tenants[x] t2` | bw_avg_GBs GB/s | 0.97 (n=3), "
                      "shares 0.4\u20130.6 |",
                      rung5) != std::string::npos);
  // Figures of rung 5 only: the group table is not under another rung's heading.
  CHECK(markdown.find("| beside |") > rung5);
  std::size_t rung2 = markdown.find("### Rung 2: runtime-start");
  REQUIRE(rung2 != std::string::npos);
  CHECK(markdown.find("time_to_first_row_ms (upper bound) 41.5 ms", rung2) <
        markdown.find("### Rung 3"));
}
