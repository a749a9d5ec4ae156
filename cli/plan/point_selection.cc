#include "plan/point_selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "base/edit_distance.h"
#include "history/history_record.h"
#include "hosts/host.h"

namespace ernic {
namespace {

// The ids of the points that did not pass in the run kept in `run_dir`.
std::set<std::string> failed_in(const std::filesystem::path& run_dir) {
  std::ifstream in(run_dir / "record.json");
  if (!in) {
    throw SelectionError(
        fmt::format("--rerun-failed: {} holds no record.json (is it a run "
                    "directory?)",
                    run_dir.string()));
  }
  nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    throw SelectionError(
        fmt::format("--rerun-failed: {} is not a record", (run_dir / "record.json").string()));
  }
  std::set<std::string> failed;
  const HistoryRecord record = read_history_record(json);
  for (const auto& point : record.points()) {
    if (!point.passed()) {
      failed.insert(point.id);
    }
  }
  return failed;
}

// The ids closest to `pattern` (wildcards read as the text they stand for), best first.
std::vector<std::string> closest_ids(const std::string& pattern, const Plan& plan) {
  std::string literal;
  std::copy_if(pattern.begin(), pattern.end(), std::back_inserter(literal),
               [](char c) { return c != '*' && c != '?'; });
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& point : plan.points) {
    ranked.emplace_back(edit_distance(literal, point.id.substr(0, literal.size() + 8)), point.id);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < ranked.size() && i < 5; ++i) {
    ids.push_back(ranked[i].second);
  }
  return ids;
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& id) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& pattern) { return matches_pattern(pattern, id); });
}

}  // namespace

bool matches_pattern(std::string_view pattern, std::string_view id) {
  // Iterative glob matching with backtracking to the last `*`.
  std::size_t p = 0, i = 0, star = std::string_view::npos, resume = 0;
  while (i < id.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == id[i])) {
      ++p;
      ++i;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

std::string PointSelection::describe() const {
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : " ") + part; };
  for (const auto& pattern : only) {
    add("--only " + shell_quote(pattern));
  }
  for (const auto& pattern : skip) {
    add("--skip " + shell_quote(pattern));
  }
  if (repeat > 0) {
    add(fmt::format("--repeat {}", repeat));
  }
  if (!rerun_failed.empty()) {
    add("--rerun-failed " + shell_quote(rerun_failed.string()));
  }
  return text;
}

void select_points(Plan& plan, const PointSelection& selection) {
  for (const auto* patterns : {&selection.only, &selection.skip}) {
    for (const auto& pattern : *patterns) {
      bool matched = std::any_of(plan.points.begin(), plan.points.end(), [&](const auto& point) {
        return matches_pattern(pattern, point.id);
      });
      if (!matched) {
        std::string close;
        for (const auto& id : closest_ids(pattern, plan)) {
          close += "\n  " + id;
        }
        throw SelectionError(
            fmt::format("no point matches '{}' (`*` and `?` are the wildcards, "
                        "brackets match themselves); closest point ids:{}",
                        pattern, close));
      }
    }
  }
  std::set<std::string> failed;
  if (!selection.rerun_failed.empty()) {
    failed = failed_in(selection.rerun_failed);
  }
  std::vector<PlannedPoint> kept;
  std::map<int, int> new_index;
  for (auto& point : plan.points) {
    bool wanted = (selection.only.empty() || matches_any(selection.only, point.id)) &&
                  !matches_any(selection.skip, point.id) &&
                  (selection.rerun_failed.empty() || failed.contains(point.id));
    if (wanted) {
      new_index[point.index] = static_cast<int>(kept.size());
      point.index = static_cast<int>(kept.size());
      if (selection.repeat > 0) {
        point.repetitions = selection.repeat;
      }
      kept.push_back(std::move(point));
    }
  }
  plan.points = std::move(kept);
  // Concurrent starts keep the selected points that still have company.
  std::vector<PlannedStart> together;
  for (auto& start : plan.together) {
    std::vector<int> points;
    for (int old : start.points) {
      if (auto it = new_index.find(old); it != new_index.end()) {
        points.push_back(it->second);
      }
    }
    for (int index : points) {
      plan.points[static_cast<std::size_t>(index)].together =
          points.size() > 1 ? static_cast<int>(together.size()) : -1;
    }
    if (points.size() > 1) {
      start.points = std::move(points);
      together.push_back(std::move(start));
    }
  }
  plan.together = std::move(together);
  plan.selection = selection.everything() ? "" : selection.describe();
}

}  // namespace ernic
