#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "history/history_record.h"

namespace ernic {

// One line of a history file as stored. `record` is empty when the line is not a JSON object
// (read_history_record gives its typed form);
// such lines are reported, and kept verbatim whenever the file is rewritten.
struct HistoryLine {
  int number = 0;  // 1-based
  std::string text;
  std::optional<nlohmann::json> record;
};

struct HistoryContents {
  std::vector<HistoryLine> lines;
  std::vector<std::string> warnings;  // "perf/history.jsonl:17: not a JSON object (...); skipped"

  // The valid records, in file order.
  std::vector<nlohmann::json> records() const;
};

// The JSON text of a record as stored: one line, keys sorted.
std::string serialize_history_record(const nlohmann::json& record);

// Appends one record as one line. Concurrent appenders and rewriters serialise on an exclusive
// flock(2) of the history file itself (nothing is left beside it); the line goes out in a single
// write(2), so readers never see half a record. Creates the file and its directory when missing.
// Throws std::runtime_error naming the file on failure.
void append_history_record(const std::filesystem::path& path, const HistoryRecord& record);
// Any JSON object as one line, the same way.
void append_history_record(const std::filesystem::path& path, const nlohmann::json& record);

// Reads every line; a missing file reads as empty.
HistoryContents read_history(const std::filesystem::path& path);

// Replaces the file's lines with what `edit` returns, under the lock, atomically (temporary
// file beside it, fsync, rename): a crash leaves either the old or the new file.
void rewrite_history(const std::filesystem::path& path,
                     const std::function<std::vector<std::string>(const HistoryContents&)>& edit);

}  // namespace ernic
