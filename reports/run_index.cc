#include "run_index.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <utility>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace ernic::reports {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// A string field, or the token of a number (run ids have been written both ways).
error_code read_text(od::value value, std::string& out) {
  od::json_type type;
  if (auto error = value.type().get(type)) {
    return error;
  }
  if (type == od::json_type::string) {
    std::string_view text;
    if (auto error = value.get_string().get(text)) {
      return error;
    }
    out.assign(text);
  } else if (type == od::json_type::number) {
    std::string_view token = value.raw_json_token();
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) {
      token.remove_suffix(1);
    }
    out.assign(token);
  }
  return simdjson::SUCCESS;  // other types: left empty, the validator reports them
}

std::optional<double> read_number(od::value value, error_code& error) {
  od::json_type type;
  if ((error = value.type().get(type))) {
    return std::nullopt;
  }
  if (type != od::json_type::number) {
    return std::nullopt;
  }
  double number = 0;
  if ((error = value.get_double().get(number))) {
    return std::nullopt;
  }
  return number;
}

error_code read_sized_values(od::value value, std::vector<std::pair<std::uint64_t, double>>& out) {
  od::object sizes;
  if (value.get_object().get(sizes)) {
    return simdjson::SUCCESS;  // not an object: nothing to chart
  }
  for (auto field_result : sizes) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) {
      return error;
    }
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) {
      return error;
    }
    std::uint64_t size = 0;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), size);
    error_code error = simdjson::SUCCESS;
    auto number = read_number(field.value(), error);
    if (error) {
      return error;
    }
    if (ec == std::errc() && end == key.data() + key.size() && number) {
      out.emplace_back(size, *number);
    }
  }
  std::sort(out.begin(), out.end());
  return simdjson::SUCCESS;
}

error_code read_series(od::value value, RunEntry& run) {
  od::object series;
  if (value.get_object().get(series)) {
    return simdjson::SUCCESS;
  }
  for (auto field_result : series) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) {
      return error;
    }
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) {
      return error;
    }
    for (Series s : {Series::kBandwidth, Series::kLatency, Series::kNvmeof}) {
      if (key == series_key(s)) {
        if (auto error = read_sized_values(field.value(), run.series[static_cast<int>(s)])) {
          return error;
        }
      }
    }
  }
  return simdjson::SUCCESS;
}

error_code read_badges(od::value value, RunEntry& run) {
  od::object badges;
  if (value.get_object().get(badges)) {
    return simdjson::SUCCESS;
  }
  for (auto field_result : badges) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) {
      return error;
    }
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) {
      return error;
    }
    for (Badge b : kAllBadges) {
      if (key == badge_key(b)) {
        error_code error = simdjson::SUCCESS;
        run.badges[static_cast<int>(b)] = read_number(field.value(), error);
        if (error) {
          return error;
        }
      }
    }
  }
  if (auto tcp = run.badge(Badge::kTcp)) {
    run.series[static_cast<int>(Series::kTcp)].emplace_back(0, *tcp);
  }
  return simdjson::SUCCESS;
}

error_code read_ernicctl(od::value value, RunEntry& run) {
  od::object part;
  if (value.get_object().get(part)) {
    return simdjson::SUCCESS;
  }
  run.has_ernicctl = true;
  for (auto field_result : part) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) {
      return error;
    }
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) {
      return error;
    }
    if (key == "status") {
      if (auto error = read_text(field.value(), run.status)) {
        return error;
      }
    } else if (key == "accelerator") {
      if (auto error = read_text(field.value(), run.accelerator)) {
        return error;
      }
    } else if (key == "scenario") {
      od::object scenario;
      if (field.value().get_object().get(scenario) == simdjson::SUCCESS) {
        for (auto inner_result : scenario) {
          od::field inner;
          if (auto error = std::move(inner_result).get(inner)) {
            return error;
          }
          std::string_view inner_key;
          if (auto error = inner.unescaped_key().get(inner_key)) {
            return error;
          }
          if (inner_key == "name") {
            if (auto error = read_text(inner.value(), run.scenario)) {
              return error;
            }
          }
        }
      }
    }
    // Everything else (the points above all) is skipped at the speed of the structural index.
  }
  return simdjson::SUCCESS;
}

// Fills `run` from one line; returns a reason when the line is not a JSON object.
std::optional<std::string> scan_line(od::parser& parser, std::string& line, RunEntry& run) {
  line.reserve(line.size() + simdjson::SIMDJSON_PADDING);
  od::document doc;
  if (auto error = parser.iterate(line.data(), line.size(), line.capacity()).get(doc)) {
    return fmt::format("not valid JSON ({})", simdjson::error_message(error));
  }
  od::object object;
  if (auto error = doc.get_object().get(object)) {
    if (error == simdjson::INCORRECT_TYPE) {
      return std::string("not a JSON object");
    }
    return fmt::format("not valid JSON ({})", simdjson::error_message(error));
  }
  error_code error = simdjson::SUCCESS;
  for (auto field_result : object) {
    od::field field;
    if ((error = std::move(field_result).get(field))) {
      break;
    }
    std::string_view key;
    if ((error = field.unescaped_key().get(key))) {
      break;
    }
    if (key == "run_id") {
      error = read_text(field.value(), run.run_id);
    } else if (key == "sha") {
      error = read_text(field.value(), run.sha);
    } else if (key == "generated") {
      error = read_text(field.value(), run.generated);
    } else if (key == "node") {
      error = read_text(field.value(), run.node);
    } else if (key == "runner") {
      error = read_text(field.value(), run.runner);
      if (run.runner.empty()) {
        run.runner = kDefaultRunnerClass;
      }
    } else if (key == "series") {
      error = read_series(field.value(), run);
    } else if (key == "badges") {
      error = read_badges(field.value(), run);
    } else if (key == "ernicctl") {
      error = read_ernicctl(field.value(), run);
    }  // other keys are skipped by the iteration itself
    if (error) {
      break;
    }
  }
  auto last = line.find_last_not_of(" \t\r");
  if (!error && (last == std::string::npos || line[last] != '}')) {
    error = simdjson::TRAILING_CONTENT;
  }
  if (error) {
    return fmt::format("not valid JSON ({})", simdjson::error_message(error));
  }
  return std::nullopt;
}

bool blank(const std::string& line) {
  return line.find_first_not_of(" \t\r") == std::string::npos;
}

}  // namespace

const char* series_key(Series s) {
  switch (s) {
    case Series::kBandwidth:
      return "bandwidth";
    case Series::kLatency:
      return "latency";
    case Series::kNvmeof:
      return "nvmeof";
    case Series::kTcp:
      return "tcp";
  }
  return "";
}

const char* badge_key(Badge b) {
  switch (b) {
    case Badge::kRdma:
      return "rdma_bw_GBs";
    case Badge::kTcp:
      return "tcp_bw_GBs";
    case Badge::kNvmeof:
      return "nvmeof_iops_M";
  }
  return "";
}

std::string RunEntry::date() const {
  auto space = generated.find(' ');
  return space == std::string::npos ? generated : generated.substr(0, space);
}

std::vector<std::string> RunIndex::runner_classes() const {
  std::set<std::string> names;
  for (const auto& run : runs) {
    names.insert(run.runner);
  }
  return {names.begin(), names.end()};
}

std::vector<std::size_t> RunIndex::runs_of(const std::string& runner) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].runner == runner) {
      out.push_back(i);
    }
  }
  return out;
}

RunIndex index_histories(const std::vector<std::filesystem::path>& histories) {
  RunIndex index;
  od::parser parser;
  std::vector<std::string> sort_keys;
  std::unordered_map<std::string, std::size_t> by_run_id;
  for (const auto& path : histories) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      throw std::runtime_error(fmt::format("cannot read history {}: {}", path.string(),
                                           std::filesystem::exists(path)
                                               ? "permission denied or not a file"
                                               : "no such file"));
    }
    std::size_t source = index.sources.size();
    index.sources.push_back(path);
    std::string line;
    std::string previous_key;
    std::uint64_t offset = 0;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::uint64_t line_offset = offset;
      offset += line.size() + 1;
      if (blank(line)) {
        continue;
      }
      RunEntry run;
      run.source = source;
      run.offset = line_offset;
      run.length = line.size();
      run.line = number;
      if (auto problem = scan_line(parser, line, run)) {
        index.warnings.push_back(
            fmt::format("{}:{}: {}; skipped", path.string(), number, *problem));
        continue;
      }
      if (!run.generated.empty()) {
        previous_key = run.generated;
      }
      if (!run.run_id.empty()) {
        auto [it, inserted] = by_run_id.emplace(run.run_id, index.runs.size());
        if (!inserted) {
          auto& kept = index.runs[it->second];
          if (run.has_ernicctl && !kept.has_ernicctl) {
            kept = std::move(run);  // the richer record of the same run, in the first one's place
          }
          continue;
        }
      }
      sort_keys.push_back(previous_key);
      index.runs.push_back(std::move(run));
    }
    if (in.bad()) {
      throw std::runtime_error(fmt::format("cannot read history {}", path.string()));
    }
  }
  std::vector<std::size_t> order(index.runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return sort_keys[a] < sort_keys[b]; });
  std::vector<RunEntry> sorted;
  sorted.reserve(order.size());
  for (auto i : order) {
    sorted.push_back(std::move(index.runs[i]));
  }
  index.runs = std::move(sorted);
  return index;
}

nlohmann::json load_record(const RunIndex& index, const RunEntry& run) {
  const auto& path = index.sources.at(run.source);
  std::ifstream in(path, std::ios::binary);
  std::string text(run.length, '\0');
  in.seekg(static_cast<std::streamoff>(run.offset));
  in.read(text.data(), static_cast<std::streamsize>(run.length));
  if (!in) {
    throw std::runtime_error(
        fmt::format("{}:{}: the file changed while reading it", path.string(), run.line));
  }
  try {
    auto record = nlohmann::json::parse(text);
    if (record.is_object()) {
      return record;
    }
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(fmt::format("{}:{}: not valid JSON ({})", path.string(), run.line,
                                         e.what()));
  }
  throw std::runtime_error(fmt::format("{}:{}: not a JSON object", path.string(), run.line));
}

}  // namespace ernic::reports
