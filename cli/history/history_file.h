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

// What an append did besides adding its line.
struct HistoryAppend {
  // Set when the file ended in a line without its newline (a writer died in the middle of an
  // append) and the append mended it first: what was done, for the user to see.
  std::string repair;
};

// Appends one record as one line. Concurrent appenders and rewriters serialise on an exclusive
// flock(2) of the history file itself (nothing is left beside it); the line goes out whole in
// one write(2) under the lock and is synced. On any failure (a full disk) the file is truncated
// back to its length before the append, so it is never left torn, and std::runtime_error names
// the file. A torn tail left by a crashed writer is repaired first (HistoryAppend::repair).
// Creates the file and its directory when missing.
HistoryAppend append_history_record(const std::filesystem::path& path, const HistoryRecord& record);
// Any JSON object as one line, the same way.
HistoryAppend append_history_record(const std::filesystem::path& path,
                                    const nlohmann::json& record);

// Reads every line; a missing file reads as empty.
HistoryContents read_history(const std::filesystem::path& path);

// Replaces the file's lines with what `edit` returns, under the lock, atomically
// (write_file_durably, common/durable_file.h): a crash leaves either the old or the new file.
void rewrite_history(const std::filesystem::path& path,
                     const std::function<std::vector<std::string>(const HistoryContents&)>& edit);

}  // namespace ernic
