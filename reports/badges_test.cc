#include "badges.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "testing/fixtures.h"

using namespace ernic::reports;
using ernic::reports::testing::TempDir;

namespace {

const std::filesystem::path kSamples(ERNIC_SAMPLES_DIR);

std::string badge_named(const std::vector<BadgeFile>& badges, const std::string& name) {
  for (const auto& badge : badges) {
    if (badge.file_name == name) {
      return badge.content;
    }
  }
  return "";
}

}  // namespace

TEST_CASE("badge files match rocm-ernic's byte for byte") {
  auto sample = testing::read_text(kSamples / "rocm-ernic-badge-rdma-sample.json");
  CHECK(badge_json("RDMA bandwidth", "4.72 GB/s", "blue") == sample);
  auto badges =
      render_badges(index_histories({kSamples / "rocm-ernic-history-sample.jsonl"}), "self-hosted");
  REQUIRE(badges.size() == 4);
  CHECK(badge_named(badges, "badge-rdma.json") == sample);
  // rocm-ernic's TCP figure of 0.001 GB/s reads in MB/s, as their publisher prints it
  CHECK(badge_named(badges, "badge-tcp.json") ==
        "{\"color\": \"blue\", \"label\": \"TCP/IP bandwidth\", \"message\": \"1.0 MB/s\", "
        "\"schemaVersion\": 1}\n");
  CHECK(badge_named(badges, "badge-s3.json") ==
        "{\"color\": \"lightgrey\", \"label\": \"S3 1M GET\", \"message\": \"no data\", "
        "\"schemaVersion\": 1}\n");
  CHECK(badge_named(badges, "badge-nvmeof.json") ==
        "{\"color\": \"lightgrey\", \"label\": \"NVMe-oF 4K read\", \"message\": \"no data\", "
        "\"schemaVersion\": 1}\n");
}

TEST_CASE("badges carry exactly the shields.io endpoint keys") {
  auto example =
      nlohmann::json::parse(testing::read_text(kSamples / "shields-endpoint-example.json"));
  auto ours = nlohmann::json::parse(badge_json("RDMA bandwidth", "1 GB/s", "blue"));
  std::vector<std::string> example_keys, our_keys;
  for (const auto& [key, value] : example.items()) {
    example_keys.push_back(key);
    CHECK(ours[key].type() == value.type());
  }
  for (const auto& [key, value] : ours.items()) {
    our_keys.push_back(key);
  }
  CHECK(our_keys == example_keys);
  // Python's json.dumps escapes non-ASCII the same way
  CHECK(badge_json("lat", "5 \u00b5s", "blue") ==
        "{\"color\": \"blue\", \"label\": \"lat\", \"message\": \"5 \\u00b5s\", \"schemaVersion\": "
        "1}\n");
}

TEST_CASE("a run without a value falls back to the newest value of the same runner class") {
  TempDir dir;
  auto file = dir / "h.jsonl";
  testing::write_text(
      file,
      R"({"badges": {"rdma_bw_GBs": 4.0}, "generated": "2026-09-01 03:00:00 UTC", "run_id": "1", "sha": "a", "runner": "github-hosted"})"
      "\n"
      R"({"badges": {"rdma_bw_GBs": 9.99, "tcp_bw_GBs": 0.5}, "generated": "2026-09-02 03:00:00 UTC", "run_id": "2", "sha": "b", "runner": "self-hosted"})"
      "\n"
      R"({"badges": {"rdma_bw_GBs": null}, "generated": "2026-09-03 03:00:00 UTC", "run_id": "3", "sha": "c", "runner": "github-hosted"})"
      "\n");
  auto index = index_histories({file});
  auto hosted = render_badges(index, "github-hosted");
  CHECK(badge_named(hosted, "badge-rdma.json") ==
        "{\"color\": \"blue\", \"label\": \"RDMA bandwidth\", \"message\": \"4.00 GB/s (as of "
        "2026-09-01)\", \"schemaVersion\": 1}\n");
  // the self-hosted TCP value never leaks into the github-hosted badge
  CHECK(badge_named(hosted, "badge-tcp.json").find("no data") != std::string::npos);
  CHECK(badge_named(hosted, "badge-tcp.json").find("lightgrey") != std::string::npos);
  auto lab = render_badges(index, "self-hosted");
  CHECK(badge_named(lab, "badge-rdma.json").find("\"9.99 GB/s\"") != std::string::npos);
  CHECK(newest_runner_class(index) == "github-hosted");
  write_badges(dir / "out", hosted);
  CHECK(testing::read_text(dir / "out/badge-rdma.json") == badge_named(hosted, "badge-rdma.json"));
}

TEST_CASE("badge text follows rocm-ernic's publisher around every boundary") {
  struct Case {
    double value;
    const char* text;
  };
  for (const auto& [value, text] : std::initializer_list<Case>{{0.0123, "12.3 MB/s"},
                                                               {0.001, "1.0 MB/s"},
                                                               {0.999, "999.0 MB/s"},
                                                               {0.9994, "999.4 MB/s"},
                                                               {1.0, "1.00 GB/s"},
                                                               {4.72, "4.72 GB/s"},
                                                               {0.0, "0.0 MB/s"}}) {
    INFO(value);
    CHECK(format_rate_GBs(value) == text);
  }
  // IOPS are stored in millions
  for (const auto& [value, text] : std::initializer_list<Case>{{0.000999, "999 IOPS"},
                                                               {0.001, "1k IOPS"},
                                                               {0.152, "152k IOPS"},
                                                               {0.999999, "1000k IOPS"},
                                                               {1.0, "1.00M IOPS"},
                                                               {1.234, "1.23M IOPS"},
                                                               {0.000012, "12 IOPS"}}) {
    INFO(value);
    CHECK(format_iops_millions(value) == text);
  }
}

TEST_CASE("badges: IOPS and s3 values, stale fallback within the runner class only") {
  TempDir dir;
  auto file = dir / "h.jsonl";
  testing::write_text(
      file,
      R"({"badges": {"nvmeof_iops_M": 0.152, "s3_bw_GBs": 0.5}, "generated": "2026-09-01 03:00:00 UTC", "run_id": "1", "sha": "a", "runner": "self-hosted"})"
      "\n"
      R"({"badges": {"nvmeof_iops_M": 1.5, "s3_bw_GBs": 2.25}, "generated": "2026-09-02 03:00:00 UTC", "run_id": "2", "sha": "b", "runner": "github-hosted"})"
      "\n"
      R"({"badges": {"nvmeof_iops_M": null}, "generated": "2026-09-03 03:00:00 UTC", "run_id": "3", "sha": "c", "runner": "self-hosted"})"
      "\n");
  auto index = index_histories({file});
  auto lab = render_badges(index, "self-hosted");
  // the newer github-hosted values never stand in for the self-hosted class
  CHECK(badge_named(lab, "badge-nvmeof.json") ==
        "{\"color\": \"blue\", \"label\": \"NVMe-oF 4K read\", \"message\": \"152k IOPS (as "
        "of 2026-09-01)\", \"schemaVersion\": 1}\n");
  CHECK(badge_named(lab, "badge-s3.json") ==
        "{\"color\": \"blue\", \"label\": \"S3 1M GET\", \"message\": \"500.0 MB/s (as of "
        "2026-09-01)\", \"schemaVersion\": 1}\n");
  auto hosted = render_badges(index, "github-hosted");
  CHECK(badge_named(hosted, "badge-nvmeof.json").find("\"1.50M IOPS\"") != std::string::npos);
  CHECK(badge_named(hosted, "badge-s3.json").find("\"2.25 GB/s\"") != std::string::npos);
  CHECK(badge_named(hosted, "badge-rdma.json").find("no data") != std::string::npos);
}
