#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ernic::reports {

struct TrimResult {
  std::size_t kept = 0;
  std::size_t removed = 0;
  std::size_t corrupt_kept = 0;
};

// Keeps the newest `max_runs` records of each runner class (records without `runner` are
// self-hosted), in file order; lines that are not records stay verbatim. Valid lines are kept
// byte for byte too, so rocm-ernic's formatting survives. Atomic, under the history lock.
TrimResult trim_history(const std::filesystem::path& file, std::size_t max_runs);

struct MergeResult {
  std::size_t written = 0;
  std::size_t duplicates = 0;
  std::size_t corrupt_kept = 0;
  std::vector<std::string> warnings;
};

// Merges the inputs into `out` (its own lines first when it exists), ordered by `generated`.
// A run_id seen twice is written once: the first occurrence, unless a later one carries the
// ernicctl part and the first does not. Corrupt lines are kept verbatim. Throws
// std::runtime_error when an input is missing.
MergeResult merge_histories(const std::filesystem::path& out,
                            const std::vector<std::filesystem::path>& inputs);

struct ValidationReport {
  std::size_t records = 0;
  std::vector<std::string> problems;  // "FILE:LINE: what is wrong"
  std::vector<std::string> notes;     // not errors: duplicate run ids
  bool ok() const { return problems.empty(); }
};

// Checks every line: a JSON object with the rocm-ernic keys in their documented types
// (docs/history-format.md) and, when present, a well-formed ernicctl part.
ValidationReport validate_history(const std::filesystem::path& file);

// What is wrong with one record ("" entries never; empty when it is valid).
std::vector<std::string> record_problems(const nlohmann::json& record);

struct SavedRecordAppend {
  // The history already held this very record (an earlier `history append` of it): nothing was
  // appended, so adding a saved record twice is harmless.
  bool already_present = false;
  std::string repair;  // HistoryAppend::repair: a torn tail mended first
};

// Appends a record that a run saved to a file (its record.json, two-space-indented, or the
// record a run could not append) to `history` as one line. Throws std::runtime_error when the
// file is missing, is not JSON, or is not a well-formed record (naming its problems).
SavedRecordAppend append_saved_record(const std::filesystem::path& record_file,
                                      const std::filesystem::path& history);

}  // namespace ernic::reports
