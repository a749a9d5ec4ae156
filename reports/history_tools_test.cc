#include "history_tools.h"

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <sstream>

#include "history/history_file.h"
#include "testing/fixtures.h"

using namespace ernic::reports;
using ernic::reports::testing::TempDir;

namespace {

const std::filesystem::path kRocmSample =
    std::filesystem::path(ERNIC_SAMPLES_DIR) / "rocm-ernic-history-sample.jsonl";

std::string line(const std::string& run_id, int day, const std::string& runner) {
  std::string text =
      fmt::format(R"({{"generated": "2026-09-{:02} 03:00:00 UTC", "run_id": "{}", "sha": "s{}")",
                  day, run_id, run_id);
  if (!runner.empty()) {
    text += fmt::format(R"(, "runner": "{}")", runner);
  }
  return text + "}";
}

std::vector<std::string> lines_of(const std::filesystem::path& file) {
  std::vector<std::string> out;
  std::istringstream in(testing::read_text(file));
  for (std::string text; std::getline(in, text);) {
    out.push_back(text);
  }
  return out;
}

}  // namespace

TEST_CASE("trim keeps the newest runs per runner class and corrupt lines verbatim") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  std::string text;
  for (int day = 1; day <= 5; ++day) {
    text += line("h" + std::to_string(day), day, "github-hosted") + "\n";
    text += line("s" + std::to_string(day), day, day % 2 ? "" : "self-hosted") + "\n";
    if (day == 1) {
      text += "{\"broken\": \n";
      text += "{\"run_id\": \"x\", \"badges\": {\"rdma_bw_GBs\": 1e999}}\n";
    }
  }
  testing::write_text(file, text);
  auto result = trim_history(file, 2);
  CHECK(result.kept == 4);
  CHECK(result.removed == 6);
  CHECK(result.corrupt_kept == 2);  // the out-of-range number is an unreadable line, kept
  auto lines = lines_of(file);
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "{\"broken\": ");
  CHECK(lines[1] == "{\"run_id\": \"x\", \"badges\": {\"rdma_bw_GBs\": 1e999}}");
  CHECK(lines[2] == line("h4", 4, "github-hosted"));
  CHECK(lines[3] == line("s4", 4, "self-hosted"));  // records without runner count as self-hosted
  CHECK(lines[4] == line("h5", 5, "github-hosted"));
  CHECK(lines[5] == line("s5", 5, ""));
}

TEST_CASE("trim leaves rocm-ernic's lines byte for byte") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  std::filesystem::copy_file(kRocmSample, file);
  auto result = trim_history(file, 60);
  CHECK(result.kept == 3);
  CHECK(testing::read_text(file) == testing::read_text(kRocmSample));
  trim_history(file, 1);
  CHECK(lines_of(file) == std::vector<std::string>{lines_of(kRocmSample).back()});
}

TEST_CASE("merge orders by time, drops duplicate run ids, keeps corrupt lines") {
  TempDir dir;
  auto out = dir / "merged.jsonl";
  auto a = dir / "a.jsonl";
  auto b = dir / "b.jsonl";
  testing::write_text(out, line("1", 1, "") + "\n" + line("3", 3, "") + "\n");
  testing::write_text(a, line("2", 2, "github-hosted") + "\nnot json\n" + line("3", 3, "") + "\n");
  auto rich = ernic::serialize_history_record(testing::make_record(
      "2", "2026-09-02 03:00:00 UTC", "github-hosted", nlohmann::json::array()));
  testing::write_text(b, rich + "\n" + line("4", 4, "") + "\n");
  auto result = merge_histories(out, {a, b});
  CHECK(result.duplicates == 2);
  CHECK(result.corrupt_kept == 1);
  REQUIRE(result.warnings.size() == 1);
  CHECK_THAT(result.warnings[0], Catch::Matchers::StartsWith(a.string() + ":2:"));
  auto lines = lines_of(out);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == line("1", 1, ""));
  CHECK(lines[1] == rich);  // the record with the ernicctl part wins over rocm-ernic's
  CHECK(lines[2] == "not json");
  CHECK(lines[3] == line("3", 3, ""));
  CHECK(lines[4] == line("4", 4, ""));
  CHECK_THROWS_WITH(merge_histories(out, {dir / "missing.jsonl"}),
                    Catch::Matchers::Contains("missing.jsonl"));
}

TEST_CASE("validate accepts rocm-ernic's history and ernicctl records") {
  auto report = validate_history(kRocmSample);
  CHECK(report.ok());
  CHECK(report.records == 3);
  auto points = nlohmann::json::array(
      {testing::make_point("p", "iperf3", {}, "bandwidth_GBs", "GB/s", "higher", {1.0})});
  CHECK(record_problems(testing::make_record("1", "2026-11-30 05:40:00 UTC", "local", points))
            .empty());
}

TEST_CASE("validate names every bad line") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  auto bad_point = testing::make_record(
      "9", "2026-11-30 05:40:00 UTC", "local",
      nlohmann::json::array(
          {testing::make_point("p", "iperf3", {}, "bw", "GB/s", "sideways", {1.0}, "failed")}));
  testing::write_text(
      file,
      line("1", 1, "") + "\n" + "{\"run_id\": 5}\n" + "[truncated\n" +
          R"({"generated": "yesterday", "run_id": "2", "sha": "x", "series": {"bandwidth": {"4k": "fast"}}, "badges": {"rdma_bw_GBs": "n/a"}})" +
          "\n" + ernic::serialize_history_record(bad_point) + "\n" + line("1", 1, "") + "\n" +
          R"({"generated": "2026-09-01 03:00:00 UTC", "run_id": "7", "sha": "x", "badges": {"rdma_bw_GBs": 1e999}})" +
          "\n");
  auto report = validate_history(file);
  CHECK_FALSE(report.ok());
  CHECK(report.records == 5);
  // a number beyond double's range is an unreadable line like any other, not an abort
  CHECK(std::any_of(report.problems.begin(), report.problems.end(), [&](const auto& problem) {
    return problem.rfind(file.string() + ":7: not valid JSON", 0) == 0;
  }));
  auto has = [&](const std::string& text) {
    return std::any_of(report.problems.begin(), report.problems.end(), [&](const auto& problem) {
      return problem.find(text) != std::string::npos;
    });
  };
  CHECK(has(file.string() + ":2: missing \"generated\""));
  CHECK(has(file.string() + ":2: \"run_id\" must be a non-empty string"));
  CHECK(has(file.string() + ":3: not valid JSON"));
  CHECK(has(file.string() + ":4: \"generated\" must read"));
  CHECK(has(file.string() + ":4: series.bandwidth: size \"4k\" is not a number of bytes"));
  CHECK(has(file.string() + ":4: badges.rdma_bw_GBs must be a number or null"));
  CHECK(has(file.string() + ":5: ernicctl.points[0] failed without a reason"));
  CHECK(has(file.string() + ":5: ernicctl.points[0].metrics.bw.better must be higher or lower"));
  CHECK_FALSE(has(":1:"));
  REQUIRE(report.notes.size() == 1);
  CHECK(report.notes[0].find(":6: run_id 1 also on line 1") != std::string::npos);
}
