#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ernic::reports {

// The trend series a history record carries (rocm-ernic's `series` keys, plus TCP from
// `badges.tcp_bw_GBs`, which has no sizes).
enum class Series { kBandwidth, kLatency, kNvmeof, kTcp };
inline constexpr std::array<Series, 4> kAllSeries = {Series::kBandwidth, Series::kLatency,
                                                     Series::kTcp, Series::kNvmeof};

// The badges a record carries, in the order of rocm-ernic's files.
enum class Badge { kRdma, kTcp, kNvmeof };
inline constexpr std::array<Badge, 3> kAllBadges = {Badge::kRdma, Badge::kTcp, Badge::kNvmeof};

inline constexpr const char* kDefaultRunnerClass = "self-hosted";

// What the trend page, badges and comparisons need of one history line, without its points.
// Histories of 100k runs stay small in memory: the full record is read again only for the few
// runs a page details (load_record).
struct RunEntry {
  std::size_t source = 0;  // index into RunIndex::sources
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  int line = 0;
  std::string run_id;
  std::string sha;
  std::string generated;
  std::string node;
  std::string runner = kDefaultRunnerClass;
  bool has_ernicctl = false;
  std::string scenario;  // ernicctl.scenario.name
  std::string status;    // ernicctl.status
  std::string accelerator;
  // Per series: (size in bytes, value), sizes ascending. TCP has one entry with size 0.
  std::array<std::vector<std::pair<std::uint64_t, double>>, 4> series;
  std::array<std::optional<double>, 3> badges;

  const std::vector<std::pair<std::uint64_t, double>>& values(Series s) const {
    return series[static_cast<std::size_t>(s)];
  }
  std::optional<double> badge(Badge b) const { return badges[static_cast<std::size_t>(b)]; }
  // "YYYY-MM-DD" of `generated`, or "" when it has none.
  std::string date() const;
};

struct RunIndex {
  std::vector<std::filesystem::path> sources;
  std::vector<RunEntry> runs;         // oldest first
  std::vector<std::string> warnings;  // "FILE:LINE: ...; skipped", like read_history

  // The runner classes present, sorted by name.
  std::vector<std::string> runner_classes() const;
  // Indices into `runs` of one class, oldest first.
  std::vector<std::size_t> runs_of(const std::string& runner) const;
};

// Streams every history file once. Lines that are not JSON objects become warnings. Runs are
// ordered by `generated` (a line without one keeps its place after the line before it); a
// run_id seen twice is kept once, preferring a record with the `ernicctl` part. Throws
// std::runtime_error naming a file that exists but cannot be read; a missing file is an error
// too (a typo should not render an empty page).
RunIndex index_histories(const std::vector<std::filesystem::path>& histories);

// Reads the full record of one indexed run again. Throws std::runtime_error when the file
// changed underneath so that the line no longer parses.
nlohmann::json load_record(const RunIndex& index, const RunEntry& run);

// Label and key of each series and badge, shared by the page, the badges and the docs.
const char* series_key(Series s);    // "bandwidth", "latency", "nvmeof", "tcp"
const char* badge_key(Badge b);      // "rdma_bw_GBs", "tcp_bw_GBs", "nvmeof_iops_M"

}  // namespace ernic::reports
