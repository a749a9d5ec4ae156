#include "run_index.h"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "history/history_file.h"
#include "testing/fixtures.h"

using namespace ernic::reports;
using ernic::Badge;
using ernic::Series;
using ernic::reports::testing::TempDir;

namespace {
const std::filesystem::path kRocmSample =
    std::filesystem::path(ERNIC_SAMPLES_DIR) / "rocm-ernic-history-sample.jsonl";
}

TEST_CASE("indexes rocm-ernic's history: no runner means self-hosted") {
  auto index = index_histories({kRocmSample});
  REQUIRE(index.runs.size() == 3);
  CHECK(index.warnings.empty());
  const auto& newest = index.runs.back();
  CHECK(newest.run_id == "34304588755");
  CHECK(newest.sha == "5e0516af");
  CHECK(newest.runner_class() == "self-hosted");
  CHECK_FALSE(newest.runner);
  CHECK_FALSE(newest.ernicctl);
  CHECK(newest.date() == "2026-09-09");
  REQUIRE(newest.values(Series::kBandwidth).size() == 3);
  CHECK(newest.values(Series::kBandwidth)[0] == std::make_pair<std::uint64_t, double>(4096, 0.39));
  CHECK(newest.values(Series::kBandwidth)[2].second == 4.72);
  CHECK(newest.values(Series::kLatency)[2].second == 393.74);
  CHECK(newest.badge(Badge::kRdma) == 4.72);
  REQUIRE(newest.values(Series::kTcp).size() == 1);
  CHECK(newest.values(Series::kTcp)[0].second == 0.001);
  CHECK_FALSE(index.runs.front().badge(Badge::kRdma));
  CHECK(index.runner_classes() == std::vector<std::string>{"self-hosted"});
}

TEST_CASE("corrupt lines become warnings with file and line; the rest is indexed") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  auto good = ernic::serialize_history_record(
      testing::make_record("1001", "2026-11-01 00:00:00 UTC", "local", nlohmann::json::array()));
  testing::write_text(
      file, good + "\n" + good.substr(0, good.size() / 2) + "\n[1,2]\n\n" +
                "{\"run_id\": \"1002\", \"sha\": \"x\"} trailing\n" +
                R"({"generated": "2026-11-02 00:00:00 UTC", "run_id": "1003", "sha": "abc"})" +
                "\n");
  auto index = index_histories({file});
  REQUIRE(index.runs.size() == 2);
  CHECK(index.runs[0].run_id == "1001");
  CHECK(index.runs[0].ernicctl);
  CHECK(index.runs[0].scenario_name() == "quickstart");
  CHECK(index.runs[0].run_status() == "passed");
  CHECK(index.runs[0].accelerator() == "kvm");
  CHECK(index.runs[0].runner_class() == "local");
  CHECK(index.runs[1].run_id == "1003");
  REQUIRE(index.warnings.size() == 3);
  CHECK_THAT(index.warnings[0], Catch::Matchers::StartsWith(file.string() + ":2: not valid JSON"));
  CHECK_THAT(index.warnings[1],
             Catch::Matchers::StartsWith(file.string() + ":3: not a JSON object"));
  CHECK_THAT(index.warnings[2], Catch::Matchers::StartsWith(file.string() + ":5: "));
  auto record = load_record(index, index.runs[0]);
  CHECK(record.scenario_name() == "quickstart");
}

TEST_CASE("runs are ordered by time across files and a run id is kept once, richest first") {
  TempDir dir;
  auto a = dir / "a.jsonl";
  auto b = dir / "b.jsonl";
  testing::write_text(a, R"({"generated": "2026-09-02 00:00:00 UTC", "run_id": "7", "sha": "aaaa"})"
                         "\n"
                         R"({"generated": "2026-09-04 00:00:00 UTC", "run_id": "9", "sha": "cccc"})"
                         "\n");
  testing::write_text(
      b, ernic::serialize_history_record(testing::make_record(
             "7", "2026-09-02 00:00:00 UTC", "self-hosted", nlohmann::json::array())) +
             "\n"
             R"({"generated": "2026-09-03 00:00:00 UTC", "run_id": "8", "sha": "bbbb"})"
             "\n");
  auto index = index_histories({a, b});
  REQUIRE(index.runs.size() == 3);
  CHECK(index.runs[0].run_id == "7");
  CHECK(index.runs[0].ernicctl);  // the ernicctl record replaced rocm-ernic's line
  CHECK(index.runs[1].run_id == "8");
  CHECK(index.runs[2].run_id == "9");
}

TEST_CASE("runs out of time order are sorted whole, equal times keeping the file's order") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  // 60 lines whose times visit 30 seconds out of order, each second twice: the reordering has
  // long cycles, and every entry must arrive with its own line, offset and values.
  constexpr int kLines = 60;
  auto second_of = [](int i) { return (i * 23) % 30; };
  std::string text;
  for (int i = 0; i < kLines; ++i) {
    text += fmt::format(R"({{"generated": "2026-10-01 00:00:{:02} UTC", "run_id": "r{}", )"
                        R"("series": {{"bandwidth": {{"4096": {}}}}}}})"
                        "\n",
                        second_of(i), i, i);
  }
  testing::write_text(file, text);
  std::vector<int> expected;
  for (int second = 0; second < 30; ++second) {
    for (int i = 0; i < kLines; ++i) {
      if (second_of(i) == second) {
        expected.push_back(i);
      }
    }
  }
  for (std::uint64_t bytes_per_thread : {std::uint64_t{1} << 30, std::uint64_t{900}}) {
    auto index = index_histories({file}, bytes_per_thread);
    REQUIRE(index.runs.size() == expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) {
      int i = expected[k];
      const auto& run = index.runs[k];
      CHECK(run.run_id == fmt::format("r{}", i));
      CHECK(run.line == i + 1);
      CHECK(run.values(Series::kBandwidth) ==
            std::vector<std::pair<std::uint64_t, double>>{{4096, double(i)}});
      CHECK(load_record(index, run).run_id == run.run_id);
    }
  }
}

TEST_CASE("a missing history is an error naming it") {
  CHECK_THROWS_WITH(index_histories({"/nonexistent/history.jsonl"}),
                    Catch::Matchers::Contains("/nonexistent/history.jsonl"));
}

TEST_CASE("scanning in parallel ranges gives the same runs and line numbers as one scan") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  std::string text;
  for (int i = 0; i < 200; ++i) {
    if (i % 37 == 5) {
      text += "{\"truncated\": [1, 2\n";
    } else if (i % 41 == 7) {
      text += "\n";
    } else {
      text +=
          fmt::format(
              R"({{"generated": "2026-10-{:02} 00:00:{:02} UTC", "run_id": "r{}", "sha": "s{}", )"
              R"("series": {{"bandwidth": {{"4096": {}}}}}}})",
              1 + i / 60, i % 60, i, i, i * 0.5) +
          "\n";
    }
  }
  text += R"({"generated": "2026-10-09 00:00:00 UTC", "run_id": "last", "sha": "no-newline"})";
  testing::write_text(file, text);
  auto single = index_histories({file});
  auto parallel = index_histories({file}, 700);
  REQUIRE(single.runs.size() == parallel.runs.size());
  CHECK(single.warnings == parallel.warnings);
  CHECK(single.warnings.size() == 6);
  CHECK_THAT(single.warnings[0], Catch::Matchers::StartsWith(file.string() + ":6: "));
  for (std::size_t i = 0; i < single.runs.size(); ++i) {
    CHECK(single.runs[i].run_id == parallel.runs[i].run_id);
    CHECK(single.runs[i].line == parallel.runs[i].line);
    CHECK(single.runs[i].offset == parallel.runs[i].offset);
    CHECK(single.runs[i].values(Series::kBandwidth) == parallel.runs[i].values(Series::kBandwidth));
  }
  CHECK(single.runs.back().run_id == "last");
  CHECK(load_record(parallel, parallel.runs[100]).run_id == parallel.runs[100].run_id);
}

TEST_CASE("a line longer than the read buffer is still one record") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  nlohmann::json big = {{"generated", "2026-10-01 00:00:00 UTC"},
                        {"run_id", "big"},
                        {"sha", "b"},
                        {"ernicctl", {{"status", "passed"}, {"log", std::string(9u << 20, 'x')}}}};
  testing::write_text(file, big.dump() + "\n" + R"({"run_id": "after", "sha": "a"})" + "\n");
  auto index = index_histories({file});
  REQUIRE(index.runs.size() == 2);
  CHECK(index.warnings.empty());
  CHECK(index.runs[0].run_id == "big");
  CHECK(index.runs[0].run_status() == "passed");
  CHECK(index.runs[1].line == 2);
}
