#include "history_tools.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "history/history_file.h"
#include "history/history_record.h"

namespace ernic::reports {
namespace {

struct MergeItem {
  std::string text;
  std::string sort_key;
  bool has_ernicctl = false;
};

void add_lines(const HistoryContents& contents, std::vector<MergeItem>& items,
               std::unordered_map<std::string, std::size_t>& by_run_id, MergeResult& result) {
  std::string previous_key;
  for (const auto& line : contents.lines) {
    if (!line.record) {
      items.push_back({line.text, previous_key, false});
      ++result.corrupt_kept;
      continue;
    }
    HistoryRecord record = read_history_record(*line.record);
    if (!record.generated.empty()) {
      previous_key = record.generated;
    }
    bool has_ernicctl = record.ernicctl.has_value();
    if (!record.run_id.empty()) {
      auto [it, inserted] = by_run_id.emplace(record.run_id, items.size());
      if (!inserted) {
        ++result.duplicates;
        auto& kept = items[it->second];
        if (has_ernicctl && !kept.has_ernicctl) {
          kept.text = line.text;
          kept.has_ernicctl = true;
        }
        continue;
      }
    }
    items.push_back({line.text, previous_key, has_ernicctl});
  }
}

}  // namespace

TrimResult trim_history(const std::filesystem::path& file, std::size_t max_runs) {
  if (!std::filesystem::exists(file)) {
    throw std::runtime_error(fmt::format("history {} does not exist", file.string()));
  }
  TrimResult result;
  rewrite_history(file, [&](const HistoryContents& contents) {
    std::map<std::string, std::size_t> seen;  // per class, counted from the newest
    std::vector<bool> keep(contents.lines.size(), true);
    for (std::size_t i = contents.lines.size(); i-- > 0;) {
      const auto& line = contents.lines[i];
      if (!line.record) {
        ++result.corrupt_kept;
        continue;
      }
      keep[i] = ++seen[read_history_record(*line.record).runner_class()] <= max_runs;
    }
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < contents.lines.size(); ++i) {
      if (keep[i]) {
        lines.push_back(contents.lines[i].text);
        result.kept += contents.lines[i].record ? 1 : 0;
      } else {
        ++result.removed;
      }
    }
    return lines;
  });
  return result;
}

MergeResult merge_histories(const std::filesystem::path& out,
                            const std::vector<std::filesystem::path>& inputs) {
  MergeResult result;
  std::vector<HistoryContents> read;
  for (const auto& input : inputs) {
    if (!std::filesystem::exists(input)) {
      throw std::runtime_error(fmt::format("history {} does not exist", input.string()));
    }
    read.push_back(read_history(input));
    result.warnings.insert(result.warnings.end(), read.back().warnings.begin(),
                           read.back().warnings.end());
  }
  rewrite_history(out, [&](const HistoryContents& existing) {
    result.warnings.insert(result.warnings.end(), existing.warnings.begin(),
                           existing.warnings.end());
    std::vector<MergeItem> items;
    std::unordered_map<std::string, std::size_t> by_run_id;
    add_lines(existing, items, by_run_id, result);
    for (const auto& contents : read) {
      add_lines(contents, items, by_run_id, result);
    }
    std::stable_sort(items.begin(), items.end(), [](const MergeItem& a, const MergeItem& b) {
      return a.sort_key < b.sort_key;
    });
    std::vector<std::string> lines;
    for (auto& item : items) {
      lines.push_back(std::move(item.text));
    }
    result.written = lines.size();
    return lines;
  });
  return result;
}

std::vector<std::string> record_problems(const nlohmann::json& record) {
  std::vector<std::string> problems;
  read_history_record(record, &problems);
  return problems;
}

ValidationReport validate_history(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) {
    throw std::runtime_error(fmt::format("history {} does not exist", file.string()));
  }
  ValidationReport report;
  auto contents = read_history(file);
  report.problems = contents.warnings;
  std::unordered_map<std::string, int> first_line;
  for (const auto& line : contents.lines) {
    if (!line.record) {
      continue;
    }
    ++report.records;
    std::vector<std::string> problems;
    std::string run_id = read_history_record(*line.record, &problems).run_id;
    for (const auto& problem : problems) {
      report.problems.push_back(fmt::format("{}:{}: {}", file.string(), line.number, problem));
    }
    if (!run_id.empty()) {
      auto [it, inserted] = first_line.emplace(run_id, line.number);
      if (!inserted) {
        report.notes.push_back(
            fmt::format("{}:{}: run_id {} also on line {} (history merge keeps one)", file.string(),
                        line.number, run_id, it->second));
      }
    }
  }
  return report;
}

SavedRecordAppend append_saved_record(const std::filesystem::path& record_file,
                                      const std::filesystem::path& history) {
  std::ifstream in(record_file, std::ios::binary);
  if (!in) {
    throw std::runtime_error(fmt::format("cannot read {}", record_file.string()));
  }
  nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
  if (!record.is_object()) {
    throw std::runtime_error(fmt::format("{} is not a JSON object", record_file.string()));
  }
  if (auto problems = record_problems(record); !problems.empty()) {
    throw std::runtime_error(fmt::format("{} is not a history record: {}", record_file.string(),
                                         fmt::join(problems, "; ")));
  }
  for (const auto& line : read_history(history).lines) {
    if (line.record && *line.record == record) {
      return {.already_present = true};
    }
  }
  return {.repair = append_history_record(history, record).repair};
}

}  // namespace ernic::reports
