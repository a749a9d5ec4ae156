#include "site.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "history/history_file.h"
#include "synthetic_history.h"
#include "testing/fixtures.h"
#include "testing/xml_check.h"

using namespace ernic::reports;
using ernic::reports::testing::TempDir;

namespace {

const std::filesystem::path kRocmSample =
    std::filesystem::path(ERNIC_SAMPLES_DIR) / "rocm-ernic-history-sample.jsonl";

std::set<std::string> ids_in(const std::string& html) {
  std::set<std::string> ids;
  std::regex id(R"re(\sid="([^"]+)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), id); it != std::sregex_iterator();
       ++it) {
    ids.insert((*it)[1]);
  }
  return ids;
}

void check_page(const std::string& html) {
  INFO("the page is polyglot HTML: it must parse as XML");
  REQUIRE_FALSE(testing::xml_error(html));
  auto svgs = testing::extract_svgs(html);
  REQUIRE_FALSE(svgs.empty());
  for (const auto& svg : svgs) {
    auto error = testing::xml_error(svg);
    INFO(svg.substr(0, 200));
    CHECK_FALSE(error);
  }
  // every in-page link resolves
  auto ids = ids_in(html);
  std::regex href(R"re(href="#([^"]+)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), href); it != std::sregex_iterator();
       ++it) {
    INFO((*it)[1]);
    CHECK(ids.count((*it)[1]) == 1);
  }
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // no network resource
  CHECK(html.find("prefers-color-scheme:dark") != std::string::npos);
}

}  // namespace

TEST_CASE("renders rocm-ernic's history: trend charts per size and the last runs") {
  auto index = index_histories({kRocmSample});
  std::vector<std::string> warnings;
  auto html = render_page(index, {}, warnings);
  check_page(html);
  CHECK(warnings.empty());
  auto svgs = testing::extract_svgs(html);
  // bandwidth and latency at 3 sizes, TCP once: each its own chart, bandwidth never with latency
  CHECK(svgs.size() == 7);
  for (const auto& svg : svgs) {
    bool bandwidth = svg.find("Send bandwidth") != std::string::npos;
    bool latency = svg.find("Send latency") != std::string::npos;
    CHECK((bandwidth != latency || svg.find("TCP bandwidth") != std::string::npos));
  }
  auto bw_1m = std::find_if(svgs.begin(), svgs.end(), [](const auto& svg) {
    return svg.find("id=\"chart-self-hosted-bandwidth-1048576\"") != std::string::npos;
  });
  REQUIRE(bw_1m != svgs.end());
  CHECK(testing::xpath_values(*bw_1m, "//svg:text[@class='newest']") ==
        std::vector<std::string>{"4.72 GB/s"});
  CHECK(testing::xpath_values(*bw_1m, "//svg:circle").size() == 3);
  auto labels = testing::xpath_values(*bw_1m, "//svg:text[@class='tick']");
  CHECK(std::find(labels.begin(), labels.end(), "56b302de") != labels.end());
  CHECK(std::find(labels.begin(), labels.end(), "5e0516af") != labels.end());
  // the last-runs table lists all three rocm-ernic runs, newest first
  auto first = html.find(">34304588755<");
  auto last = html.find(">34077491432<");
  REQUIRE(first != std::string::npos);
  REQUIRE(last != std::string::npos);
  CHECK(first < last);
  CHECK(html.find("A rocm-ernic record") != std::string::npos);
}

TEST_CASE("runner classes never share a chart line") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  SyntheticOptions options;
  options.records = 30;
  options.repetitions = 2;
  write_synthetic_history(file, options);
  auto index = index_histories({file});
  std::vector<std::string> warnings;
  auto html = render_page(index, {}, warnings);
  check_page(html);
  for (const auto& svg : testing::extract_svgs(html)) {
    auto links = testing::xpath_values(svg, "//svg:a/@href");
    REQUIRE_FALSE(links.empty());
    std::set<std::string> classes;
    for (const auto& link : links) {
      auto run_id = link.substr(std::string("#run-").size());
      for (const auto& run : index.runs) {
        if (run.run_id == run_id) {
          classes.insert(run.runner_class());
        }
      }
    }
    CHECK(classes.size() == 1);
    CHECK(links.size() == 15);
  }
}

TEST_CASE("the newest run's reference tables come from its points and link to them") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  nlohmann::json points = nlohmann::json::array();
  points.push_back(testing::make_point("bw[verb=send,size=4096]", "perftest",
                                       {{"verb", "send"}, {"size", "4096"}}, "bw_avg_GBs", "GB/s",
                                       "higher", {0.19, 0.21, 0.20}));
  points.push_back(testing::make_point("bw[verb=read,size=1048576]", "perftest",
                                       {{"verb", "read"}, {"size", "1048576"}}, "bw_avg_GBs",
                                       "GB/s", "higher", {4.83}));
  points.push_back(testing::make_point("lat[verb=write,size=65536]", "perftest",
                                       {{"verb", "write"}, {"size", "65536"}}, "lat_typical_us",
                                       "us", "lower", {330.99, 331.5, 329.0}));
  points.push_back(testing::make_point("bw[verb=write,size=4096]", "perftest",
                                       {{"verb", "write"}, {"size", "4096"}}, "bw_avg_GBs", "GB/s",
                                       "higher", {}, "failed", "Couldn't create CQ"));
  points.push_back(testing::make_point("tcp[protocol=tcp]", "iperf3", {{"protocol", "tcp"}},
                                       "bandwidth_GBs", "GB/s", "higher", {0.34, 0.36}));
  auto record = testing::make_record("5001", "2026-11-30 05:40:00 UTC", "local", points);
  record["badges"]["tcp_bw_GBs"] = 0.35;
  record["ernicctl"]["ab_pairs"] = {{{"name", "read vs send"},
                                     {"a", "bw[verb=send,size=4096]"},
                                     {"b", "bw[verb=read,size=1048576]"},
                                     {"metric", "bw_avg_GBs"}}};
  ernic::append_history_record(file, record);
  auto index = index_histories({file});
  std::vector<std::string> warnings;
  auto html = render_page(index, {}, warnings);
  REQUIRE_FALSE(testing::xml_error(html));
  CHECK(html.find("<a href=\"#run-5001-p0\">0.2</a>") != std::string::npos);   // send 4 KiB median
  CHECK(html.find("<a href=\"#run-5001-p1\">4.83</a>") != std::string::npos);  // read 1 MiB
  CHECK(html.find("<a href=\"#run-5001-p2\">331</a>") != std::string::npos);   // write lat typical
  CHECK(html.find("title=\"Couldn&#39;t create CQ\">failed</a>") != std::string::npos);
  CHECK(html.find("TCP figure (badges.tcp_bw_GBs): <strong>0.35 GB/s</strong>") !=
        std::string::npos);
  // repeatability: send 4 KiB range 0.02 over mean 0.2 = 10 %
  CHECK(html.find("<td>0.02</td><td>0.2</td><td>10 %</td>") != std::string::npos);
  CHECK(html.find("<td class=\"text\">read vs send</td>") != std::string::npos);
  CHECK(html.find("T_init per guest") != std::string::npos);
  CHECK(html.find("<td data-rung=\"1\">0.02</td></tr>") != std::string::npos);
  // provenance in the details: commands, tool versions, accelerator
  CHECK(html.find("<code>perftest --client</code>") != std::string::npos);
  CHECK(html.find("<dt>version of iperf3</dt><dd>3.12</dd>") != std::string::npos);
  CHECK(html.find("<dt>accelerator</dt><dd>kvm</dd>") != std::string::npos);
  CHECK(html.find("id=\"run-5001-p3\"") != std::string::npos);
}

TEST_CASE("write_site writes the page and the three badges") {
  TempDir dir;
  auto summary = write_site(index_histories({kRocmSample}), {}, dir / "site");
  CHECK(summary.runs == 3);
  CHECK(summary.charts == 7);
  CHECK(std::filesystem::exists(dir / "site/index.html"));
  CHECK(testing::read_text(dir / "site/badge-rdma.json") ==
        testing::read_text(std::filesystem::path(ERNIC_SAMPLES_DIR) /
                           "rocm-ernic-badge-rdma-sample.json"));
  CHECK(std::filesystem::exists(dir / "site/badge-tcp.json"));
  CHECK(std::filesystem::exists(dir / "site/badge-nvmeof.json"));
  CHECK(std::filesystem::exists(dir / "site/badge-s3.json"));
}

TEST_CASE("the report groups figures by rung and never tables two rungs together", "[rung]") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  ernic::append_history_record(file, testing::make_ladder_record("5101"));
  auto index = index_histories({file});
  std::vector<std::string> warnings;
  auto html = render_page(index, {}, warnings);
  REQUIRE_FALSE(testing::xml_error(html));
  // a heading per rung present, in ladder order
  CHECK(testing::xpath_values(html, "//h4[@class='rung']") ==
        std::vector<std::string>{"Rung 1: init", "Rung 2: runtime-start", "Rung 3: execution",
                                 "Rung 4: sustained", "Rung 5: multi-tenant",
                                 "A/B pairs across rungs"});
  // every table says its rung, and every figure (cell or row) in it is of that rung
  auto tables = testing::xpath_values(html, "//table/@data-rung");
  CHECK(tables.size() == testing::xpath_values(html, "//table").size());
  for (const char* rung : {"1", "2", "3", "4", "5"}) {
    INFO("rung " << rung);
    std::string in_table = fmt::format("//table[@data-rung='{}']", rung);
    CHECK_FALSE(testing::xpath_values(html, in_table + "//td[@data-rung]").empty());
    CHECK(testing::xpath_values(html, in_table + "//*[@data-rung!='" + rung + "']/@data-rung")
              .empty());
  }
  // which figure went where: the runtime-start time and T_init apart from the bandwidth of the
  // same point, the sustained and multi-tenant points out of the execution tables
  auto cells_of = [&](const std::string& rung) {
    return testing::xpath_values(
        html, "//section//table[@data-rung='" + rung + "'][not(caption)]//td[@data-rung]/a");
  };
  CHECK(cells_of("1").empty());  // T_init cells are plain figures
  CHECK(testing::xpath_values(html, "//table[@data-rung='1']//td[@data-rung='1']") ==
        std::vector<std::string>{"0.02"});
  CHECK(cells_of("2") == std::vector<std::string>{"13"});
  CHECK(cells_of("4") == std::vector<std::string>{"2.6"});
  auto execution = cells_of("3");
  CHECK(std::find(execution.begin(), execution.end(), "3.1") != execution.end());
  CHECK(std::find(execution.begin(), execution.end(), "5") != execution.end());
  CHECK(std::find(execution.begin(), execution.end(), "2.6") == execution.end());
  CHECK(std::find(execution.begin(), execution.end(), "1.45") == execution.end());
  CHECK(std::find(execution.begin(), execution.end(), "13") == execution.end());
  auto tenants = cells_of("5");
  CHECK(std::find(tenants.begin(), tenants.end(), "0.998") != tenants.end());  // Jain's index
  CHECK(std::find(tenants.begin(), tenants.end(), "1.45") != tenants.end());
  CHECK(std::find(tenants.begin(), tenants.end(), "9.2") != tenants.end());
  // the A/B pair across rungs is a list item naming both rungs, in no table
  auto across = testing::xpath_values(html, "//h4[.='A/B pairs across rungs']/following::ul[1]/li");
  REQUIRE(across.size() == 1);
  CHECK(across[0].find("(Rung 3: execution) 5") != std::string::npos);
  CHECK(across[0].find("(Rung 5: multi-tenant) 9.2") != std::string::npos);
  // the run details: one table per rung, each point's anchor once
  CHECK(testing::xpath_values(html, "//details//table/caption") ==
        std::vector<std::string>{"Rung 2: runtime-start", "Rung 3: execution", "Rung 4: sustained",
                                 "Rung 5: multi-tenant"});
  CHECK(testing::xpath_values(html, "//details//table[@data-rung='2']//tr/@id").empty());
  CHECK(testing::xpath_values(html, "//details//table[@data-rung='3']//tr/@id") ==
        std::vector<std::string>{"run-5101-p0", "run-5101-p3"});
}

TEST_CASE("run details draw each tenant's progress over time, one chart per series", "[rung]") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  auto record = testing::make_ladder_record("5102");
  auto& samples = record["ernicctl"]["points"][2]["samples"];  // two tenants
  samples[0]["distributions"]["bw_GBs"] = {
      {"n", 3}, {"min", 1.0}, {"max", 1.6}, {"values", {1.0, 1.6, 1.3}}, {"interval_s", 1.0}};
  samples[1]["distributions"]["bw_GBs"] = {
      {"n", 2}, {"min", 0.7}, {"max", 0.9}, {"values", {0.9, 0.7}}, {"interval_s", 1.0}};
  // per-iteration latencies are not a series over time
  record["ernicctl"]["points"][3]["samples"][0]["distributions"]["lat_us"] = {
      {"n", 3}, {"min", 4.0}, {"max", 6.0}, {"values", {4.0, 5.0, 6.0}}};
  ernic::append_history_record(file, record);
  auto index = index_histories({file});
  std::vector<std::string> warnings;
  auto html = render_page(index, {}, warnings);
  REQUIRE_FALSE(testing::xml_error(html));
  // SVG elements are in the SVG namespace
  const std::string svg = "//details//*[local-name()='svg']";
  auto titles = testing::xpath_values(html, svg + "/*[local-name()='title']");
  REQUIRE(titles.size() == 2);
  CHECK_THAT(titles[0], Catch::Contains("tenants[verb=send,size=4096], tenant 1, repetition 1"));
  CHECK_THAT(titles[1], Catch::Contains("tenant 2"));
  // one dot a second, the rates as tooltips, no links, and the multi-tenant rung
  CHECK(testing::xpath_values(html, "(" + svg + ")[1]//*[local-name()='circle']") ==
        std::vector<std::string>{"1 s: 1 GB/s", "2 s: 1.6 GB/s", "3 s: 1.3 GB/s"});
  CHECK(testing::xpath_values(html, svg + "//*[local-name()='a']").empty());
  CHECK(testing::xpath_values(html, svg + "/@data-rung") == std::vector<std::string>{"5", "5"});
}

TEST_CASE("trend charts are of the execution rung", "[rung]") {
  auto index = index_histories({kRocmSample});
  std::vector<std::string> warnings;
  auto html = render_page(index, {}, warnings);
  for (const auto& svg : testing::extract_svgs(html)) {
    CHECK(testing::xpath_values(svg, "/svg:svg/@data-rung") == std::vector<std::string>{"3"});
  }
  CHECK(html.find("Trend charts: Rung 3: execution figures.") != std::string::npos);
}

TEST_CASE("the report shows a concurrent group's Jain's index under rung 5, with its members",
          "[rung]") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  auto record = testing::make_ladder_record("5103");
  record["ernicctl"]["points"][2]["tenants"] = {
      {"t2",
       {{"hosts", {{"server", "s2"}, {"client", "c2"}}},
        {"commands", {{"client", "ib_send_bw -p 18602 s2"}}}}}};
  record["ernicctl"]["groups"] = nlohmann::json::array({testing::make_group(
      "beside", {"tenants[verb=send,size=4096]", "lat-loaded[verb=send,size=4096]"},
      {"tenants[verb=send,size=4096] t1", "tenants[verb=send,size=4096] t2"}, {0.9, 0.96})});
  ernic::append_history_record(file, record);
  auto index = index_histories({file});
  std::vector<std::string> warnings;
  auto html = render_page(index, {}, warnings);
  REQUIRE_FALSE(testing::xml_error(html));
  auto rows = testing::xpath_values(
      html, "//h5[starts-with(., 'Concurrent groups')]/following::table[1][@data-rung='5']//td");
  REQUIRE(rows.size() == 7);
  CHECK(rows[0] == "beside");
  CHECK(rows[1] == "tenants[verb=send,size=4096] t1, tenants[verb=send,size=4096] t2");
  CHECK(rows[2] == "bw_avg_GBs (GB/s)");
  CHECK(rows[3] == "0.93");
  CHECK(rows[5] == "0.6");
  // The run details list every tenant's command lines.
  CHECK(html.find("t2 client: <code>ib_send_bw -p 18602 s2</code>") != std::string::npos);
  // The group table sits under the multi-tenant heading.
  CHECK(testing::xpath_values(html, "//h5[starts-with(., 'Concurrent groups')]/preceding::h4[1]") ==
        std::vector<std::string>{"Rung 5: multi-tenant"});
}

TEST_CASE("two scenarios in one history are drawn apart: one trend line per scenario") {
  // The default perf/history.jsonl, written by the quickstart (send_lat 4 KiB near 35 us) and by
  // multi-tenant.yaml (its solo latency point near 23 us), alternating runs.
  TempDir dir;
  auto file = dir / "history.jsonl";
  std::string lines;
  for (int i = 0; i < 6; ++i) {
    bool quickstart = i % 2 == 0;
    auto record = testing::make_record(fmt::format("run{:02}aaaa", i),
                                       fmt::format("2026-11-30 05:{:02}:00 UTC", 10 + i),
                                       "self-hosted", nlohmann::json::array(), "passed",
                                       quickstart ? "quickstart" : "multi-tenant");
    record["series"]["latency"]["4096"] = quickstart ? 35.0 + i : 23.0 + i;
    lines += record.dump() + "\n";
  }
  testing::write_text(file, lines);
  auto index = index_histories({file});
  std::vector<std::string> warnings;
  auto html = render_page(index, {}, warnings);
  check_page(html);

  auto svgs = testing::extract_svgs(html);
  REQUIRE(svgs.size() == 2);  // latency at 4 KiB, once per scenario
  std::map<std::string, std::string> by_scenario;
  for (const auto& svg : svgs) {
    bool quickstart =
        svg.find("id=\"chart-self-hosted-scenario-quickstart-latency-4096\"") != std::string::npos;
    bool tenants = svg.find("id=\"chart-self-hosted-scenario-multi-tenant-latency-4096\"") !=
                   std::string::npos;
    REQUIRE(quickstart != tenants);
    by_scenario[quickstart ? "quickstart" : "multi-tenant"] = svg;
  }
  REQUIRE(by_scenario.size() == 2);
  // Each line holds only its scenario's runs: three points each, linked to those runs.
  std::map<std::string, std::string> scenario_of_anchor;
  for (const auto& run : index.runs) {
    scenario_of_anchor["#run-" + run.run_id] = run.scenario_name();
  }
  for (const auto& [scenario, svg] : by_scenario) {
    INFO(scenario);
    auto links = testing::xpath_values(svg, "//svg:a/@href");
    CHECK(links.size() == 3);
    for (const auto& link : links) {
      CHECK(scenario_of_anchor[link] == scenario);
    }
  }
  // The newest figure of each line is its own scenario's newest run, not the other's.
  CHECK(testing::xpath_values(by_scenario["quickstart"], "//svg:text[@class='newest']") ==
        std::vector<std::string>{"39 \u00b5s"});
  CHECK(testing::xpath_values(by_scenario["multi-tenant"], "//svg:text[@class='newest']") ==
        std::vector<std::string>{"28 \u00b5s"});
  // The page says which scenario each group of charts is, and links to both.
  CHECK(html.find("Trends of scenario <code>quickstart</code>") != std::string::npos);
  CHECK(html.find("href=\"#class-self-hosted-trends-scenario-multi-tenant\"") != std::string::npos);
}
