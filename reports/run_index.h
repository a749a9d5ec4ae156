#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "history/history_record.h"

namespace ernic::reports {

// Of the ernicctl part, what the index keeps: the page's run list and the comparison's choice of
// baselines read these, and everything else is read again for the few runs shown in detail.
struct RunOutline {
  std::string status;
  std::string scenario_name;
  std::string accelerator;
};

// What the trend page, badges and comparisons need of one history line. Histories of 100k runs
// stay small in memory: an entry is the record's top level and an outline of its ernicctl part
// (a few hundred bytes, where a full ErnicctlPart is over a kilobyte before its points), and the
// full record is read again only for the runs a page details (load_record).
struct RunEntry : RecordHead {
  std::optional<RunOutline> ernicctl;  // present when the line has an ernicctl part
  std::size_t source = 0;              // index into RunIndex::sources
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  int line = 0;

  std::string run_status() const { return ernicctl ? ernicctl->status : ""; }
  std::string scenario_name() const { return ernicctl ? ernicctl->scenario_name : ""; }
  std::string accelerator() const { return ernicctl ? ernicctl->accelerator : ""; }
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
// Files bigger than `bytes_per_thread` are scanned by several threads (up to 4), one line-aligned
// range each; the result is the same as a single scan.
inline constexpr std::uint64_t kIndexBytesPerThread = std::uint64_t{16} << 20;
RunIndex index_histories(const std::vector<std::filesystem::path>& histories,
                         std::uint64_t bytes_per_thread = kIndexBytesPerThread);

// Reads the full record of one indexed run again. Throws std::runtime_error when the file
// changed underneath so that the line no longer parses.
HistoryRecord load_record(const RunIndex& index, const RunEntry& run);

}  // namespace ernic::reports
