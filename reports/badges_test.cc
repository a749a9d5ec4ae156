#include "badges.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_support/fixtures.h"

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
  auto badges = render_badges(index_histories({kSamples / "rocm-ernic-history-sample.jsonl"}), "self-hosted");
  REQUIRE(badges.size() == 3);
  CHECK(badge_named(badges, "badge-rdma.json") == sample);
  CHECK(badge_named(badges, "badge-tcp.json") ==
        "{\"color\": \"blue\", \"label\": \"TCP/IP bandwidth\", \"message\": \"0.00 GB/s\", \"schemaVersion\": 1}\n");
  CHECK(badge_named(badges, "badge-nvmeof.json") ==
        "{\"color\": \"lightgrey\", \"label\": \"NVMe-oF 4K read\", \"message\": \"no data\", \"schemaVersion\": 1}\n");
}

TEST_CASE("badges carry exactly the shields.io endpoint keys") {
  auto example = nlohmann::json::parse(testing::read_text(kSamples / "shields-endpoint-example.json"));
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
        "{\"color\": \"blue\", \"label\": \"lat\", \"message\": \"5 \\u00b5s\", \"schemaVersion\": 1}\n");
}

TEST_CASE("a run without a value falls back to the newest value of the same runner class") {
  TempDir dir;
  auto file = dir / "h.jsonl";
  testing::write_text(file,
                      R"({"badges": {"rdma_bw_GBs": 4.0}, "generated": "2026-09-01 03:00:00 UTC", "run_id": "1", "sha": "a", "runner": "github-hosted"})" "\n"
                      R"({"badges": {"rdma_bw_GBs": 9.99, "tcp_bw_GBs": 0.5}, "generated": "2026-09-02 03:00:00 UTC", "run_id": "2", "sha": "b", "runner": "self-hosted"})" "\n"
                      R"({"badges": {"rdma_bw_GBs": null}, "generated": "2026-09-03 03:00:00 UTC", "run_id": "3", "sha": "c", "runner": "github-hosted"})" "\n");
  auto index = index_histories({file});
  auto hosted = render_badges(index, "github-hosted");
  CHECK(badge_named(hosted, "badge-rdma.json") ==
        "{\"color\": \"blue\", \"label\": \"RDMA bandwidth\", \"message\": \"4.00 GB/s (as of 2026-09-01)\", \"schemaVersion\": 1}\n");
  // the self-hosted TCP value never leaks into the github-hosted badge
  CHECK(badge_named(hosted, "badge-tcp.json").find("no data") != std::string::npos);
  CHECK(badge_named(hosted, "badge-tcp.json").find("lightgrey") != std::string::npos);
  auto lab = render_badges(index, "self-hosted");
  CHECK(badge_named(lab, "badge-rdma.json").find("\"9.99 GB/s\"") != std::string::npos);
  CHECK(newest_runner_class(index) == "github-hosted");
  write_badges(dir / "out", hosted);
  CHECK(testing::read_text(dir / "out/badge-rdma.json") == badge_named(hosted, "badge-rdma.json"));
}
