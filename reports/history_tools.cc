#include "history_tools.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include "history/history_file.h"
#include "run_index.h"

namespace ernic::reports {
namespace {

std::string runner_of(const nlohmann::json& record) {
  auto it = record.find("runner");
  if (it != record.end() && it->is_string() && !it->get<std::string>().empty()) {
    return it->get<std::string>();
  }
  return kDefaultRunnerClass;
}

std::string text_of(const nlohmann::json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end()) {
    return "";
  }
  return it->is_string() ? it->get<std::string>() : it->dump();
}

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
    const auto& record = *line.record;
    std::string generated = text_of(record, "generated");
    if (!generated.empty()) {
      previous_key = generated;
    }
    bool has_ernicctl = record.contains("ernicctl");
    std::string run_id = text_of(record, "run_id");
    if (!run_id.empty()) {
      auto [it, inserted] = by_run_id.emplace(run_id, items.size());
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

bool is_number_key(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
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
      keep[i] = ++seen[runner_of(*line.record)] <= max_runs;
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
    result.warnings.insert(result.warnings.end(), existing.warnings.begin(), existing.warnings.end());
    std::vector<MergeItem> items;
    std::unordered_map<std::string, std::size_t> by_run_id;
    add_lines(existing, items, by_run_id, result);
    for (const auto& contents : read) {
      add_lines(contents, items, by_run_id, result);
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const MergeItem& a, const MergeItem& b) { return a.sort_key < b.sort_key; });
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
  if (!record.is_object()) {
    return {"not a JSON object"};
  }
  static const std::regex kGenerated(R"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC)");
  auto require_string = [&](const char* key) {
    auto it = record.find(key);
    if (it == record.end()) {
      problems.push_back(fmt::format("missing \"{}\"", key));
    } else if (!it->is_string() || it->get<std::string>().empty()) {
      problems.push_back(fmt::format("\"{}\" must be a non-empty string", key));
    }
  };
  require_string("generated");
  require_string("sha");
  require_string("run_id");
  if (record.contains("generated") && record["generated"].is_string() &&
      !std::regex_match(record["generated"].get<std::string>(), kGenerated)) {
    problems.push_back("\"generated\" must read \"YYYY-MM-DD HH:MM:SS UTC\"");
  }
  for (const char* key : {"node", "runner"}) {
    if (record.contains(key) && !record[key].is_string()) {
      problems.push_back(fmt::format("\"{}\" must be a string", key));
    }
  }
  if (record.contains("series")) {
    const auto& series = record["series"];
    if (!series.is_object()) {
      problems.push_back("\"series\" must be an object");
    } else {
      for (const auto& [name, sizes] : series.items()) {
        if (!sizes.is_object()) {
          problems.push_back(fmt::format("series.{} must be an object of size: value", name));
          continue;
        }
        for (const auto& [size, value] : sizes.items()) {
          if (!is_number_key(size)) {
            problems.push_back(fmt::format("series.{}: size \"{}\" is not a number of bytes", name, size));
          }
          if (!value.is_number()) {
            problems.push_back(fmt::format("series.{}.{} must be a number", name, size));
          }
        }
      }
    }
  }
  if (record.contains("badges")) {
    const auto& badges = record["badges"];
    if (!badges.is_object()) {
      problems.push_back("\"badges\" must be an object");
    } else {
      for (const auto& [name, value] : badges.items()) {
        if (!value.is_number() && !value.is_null()) {
          problems.push_back(fmt::format("badges.{} must be a number or null", name));
        }
      }
    }
  }
  if (record.contains("ernicctl")) {
    const auto& part = record["ernicctl"];
    if (!part.is_object()) {
      problems.push_back("\"ernicctl\" must be an object");
      return problems;
    }
    if (!part.contains("schema") || !part["schema"].is_number_integer()) {
      problems.push_back("ernicctl.schema must be an integer");
    }
    std::string status = part.contains("status") && part["status"].is_string()
                             ? part["status"].get<std::string>()
                             : "";
    if (status != "passed" && status != "failed" && status != "incomplete") {
      problems.push_back("ernicctl.status must be passed, failed or incomplete");
    }
    if (part.contains("points")) {
      const auto& points = part["points"];
      if (!points.is_array()) {
        problems.push_back("ernicctl.points must be an array");
      } else {
        for (std::size_t i = 0; i < points.size(); ++i) {
          const auto& point = points[i];
          if (!point.is_object()) {
            problems.push_back(fmt::format("ernicctl.points[{}] must be an object", i));
            continue;
          }
          if (!point.contains("id") || !point["id"].is_string()) {
            problems.push_back(fmt::format("ernicctl.points[{}].id must be a string", i));
          }
          std::string point_status =
              point.contains("status") && point["status"].is_string() ? point["status"].get<std::string>() : "";
          if (point_status != "passed" && point_status != "failed" && point_status != "skipped") {
            problems.push_back(fmt::format("ernicctl.points[{}].status must be passed, failed or skipped", i));
          }
          if (point_status == "failed" && (!point.contains("reason") || !point["reason"].is_string())) {
            problems.push_back(fmt::format("ernicctl.points[{}] failed without a reason", i));
          }
          if (point.contains("metrics") && point["metrics"].is_object()) {
            for (const auto& [name, info] : point["metrics"].items()) {
              std::string better = info.is_object() && info.contains("better") && info["better"].is_string()
                                       ? info["better"].get<std::string>()
                                       : "";
              if (better != "higher" && better != "lower") {
                problems.push_back(fmt::format("ernicctl.points[{}].metrics.{}.better must be higher or lower", i, name));
              }
            }
          }
        }
      }
    }
  }
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
    for (const auto& problem : record_problems(*line.record)) {
      report.problems.push_back(fmt::format("{}:{}: {}", file.string(), line.number, problem));
    }
    std::string run_id = text_of(*line.record, "run_id");
    if (!run_id.empty()) {
      auto [it, inserted] = first_line.emplace(run_id, line.number);
      if (!inserted) {
        report.notes.push_back(fmt::format("{}:{}: run_id {} also on line {} (history merge keeps one)",
                                           file.string(), line.number, run_id, it->second));
      }
    }
  }
  return report;
}

}  // namespace ernic::reports
