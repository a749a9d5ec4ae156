// The commands as users run them: the real ernicctl binary, its output and exit status.
#include <catch2/catch.hpp>

#include "history/history_file.h"
#include "synthetic_history.h"
#include "testing/fixtures.h"

using namespace ernic::reports;
using ernic::reports::testing::run_ernicctl;
using ernic::reports::testing::TempDir;

namespace {
const std::string kRocmSample = std::string(ERNIC_SAMPLES_DIR) + "/rocm-ernic-history-sample.jsonl";
}

TEST_CASE("ernicctl report writes the site and badges") {
  TempDir dir;
  auto outcome = run_ernicctl("report " + kRocmSample + " --out " + (dir / "site").string());
  CHECK(outcome.exit_code == 0);
  CHECK(outcome.out.find("3 runs, 1 runner classes, 7 charts") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "site/index.html"));
  CHECK(std::filesystem::exists(dir / "site/badge-rdma.json"));
  auto missing = run_ernicctl("report /nonexistent.jsonl --out " + (dir / "x").string());
  CHECK(missing.exit_code != 0);
  CHECK(missing.err.find("/nonexistent.jsonl") != std::string::npos);
}

TEST_CASE("ernicctl compare --gate exits 1 on a regression, 0 without, 2 on bad input") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  auto record = [&](int run, double scale) {
    std::vector<double> values;
    for (int i = 0; i < 6; ++i) {
      values.push_back((2.0 + 0.01 * i) * scale);
    }
    auto point = testing::make_point("bw[verb=send,size=65536]", "perftest",
                                     {{"verb", "send"}, {"size", "65536"}}, "bw_avg_GBs", "GB/s",
                                     "higher", values);
    return testing::make_record(std::to_string(run),
                                "2026-11-0" + std::to_string(run) + " 00:00:00 UTC", "local",
                                nlohmann::json::array({point}));
  };
  for (int run = 1; run <= 3; ++run) {
    ernic::append_history_record(file, record(run, 1.0));
  }
  auto steady = run_ernicctl("compare " + file.string() + " --gate");
  CHECK(steady.exit_code == 0);
  CHECK(steady.out.find("0 regression(s)") != std::string::npos);
  ernic::append_history_record(file, record(4, 0.7));
  auto regressed = run_ernicctl("compare " + file.string() + " --gate");
  CHECK(regressed.exit_code == 1);
  CHECK(regressed.out.find("REGRESSION") != std::string::npos);
  CHECK(run_ernicctl("compare " + file.string()).exit_code == 0);  // no gate: report only
  auto named = run_ernicctl("compare " + file.string() + " --gate --run 3 --window 2");
  CHECK(named.exit_code == 0);
  auto bad = run_ernicctl("compare " + file.string() + " --run nope");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("run nope is not in the history") != std::string::npos);
  CHECK(run_ernicctl("compare " + (dir / "missing.jsonl").string()).exit_code == 2);
}

TEST_CASE("ernicctl history validate, trim, merge and synthesize") {
  TempDir dir;
  auto ok = run_ernicctl("history validate " + kRocmSample);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("3 records, valid") != std::string::npos);
  auto broken = dir / "broken.jsonl";
  testing::write_text(broken, testing::read_text(kRocmSample) + "{\"generated\": \n");
  auto bad = run_ernicctl("history validate " + broken.string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find(broken.string() + ":4: not valid JSON") != std::string::npos);

  auto copy = dir / "copy.jsonl";
  std::filesystem::copy_file(kRocmSample, copy);
  auto trimmed = run_ernicctl("history trim --max-runs 2 " + copy.string());
  CHECK(trimmed.exit_code == 0);
  CHECK(trimmed.out.find("kept 2 runs, removed 1") != std::string::npos);

  auto merged = dir / "merged.jsonl";
  auto merge =
      run_ernicctl("history merge " + merged.string() + " " + copy.string() + " " + kRocmSample);
  CHECK(merge.exit_code == 0);
  CHECK(testing::read_text(merged) == testing::read_text(kRocmSample));

  auto synthetic = dir / "synthetic.jsonl";
  CHECK(run_ernicctl("history synthesize " + synthetic.string() + " --records 25").exit_code == 0);
  CHECK(run_ernicctl("history validate " + synthetic.string()).exit_code == 0);
}
