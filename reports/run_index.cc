#include "run_index.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

namespace ernic::reports {
namespace {

// The DOM API dispatches at run time to the CPU's SIMD kernels (the On Demand API would be
// limited to the portable kernel unless the whole build targeted the CPU) and validates every
// line completely, points included.
namespace dom = simdjson::dom;

std::string text_of(dom::element value) {
  switch (value.type()) {
    case dom::element_type::STRING:
      return std::string(std::string_view(value));
    case dom::element_type::INT64:
      return std::to_string(int64_t(value));
    case dom::element_type::UINT64:
      return std::to_string(uint64_t(value));
    default:
      return "";  // other types are left empty; `history validate` reports them
  }
}

std::optional<double> number_of(dom::element value) {
  double number = 0;
  if (value.get_double().get(number) != simdjson::SUCCESS) {
    return std::nullopt;  // null or not a number: no value
  }
  return number;
}

void read_series(dom::element value, RunEntry& run) {
  dom::object series;
  if (value.get_object().get(series) != simdjson::SUCCESS) {
    return;
  }
  for (auto [name, element] : series) {
    dom::object sizes;
    if (element.get_object().get(sizes) != simdjson::SUCCESS) {
      continue;
    }
    auto& values = run.series[std::string(name)];
    for (auto [size, number] : sizes) {
      if (auto parsed = number_of(number)) {
        values[std::string(size)] = *parsed;
      }
    }
  }
}

void read_badges(dom::element value, RunEntry& run) {
  dom::object badges;
  if (value.get_object().get(badges) != simdjson::SUCCESS) {
    return;
  }
  for (auto [name, element] : badges) {
    run.badges[std::string(name)] = number_of(element);
  }
}

void read_ernicctl(dom::element value, RunEntry& run) {
  dom::object object;
  if (value.get_object().get(object) != simdjson::SUCCESS) {
    return;
  }
  RunOutline& part = run.ernicctl.emplace();
  dom::element field;
  if (object["status"].get(field) == simdjson::SUCCESS) {
    part.status = text_of(field);
  }
  if (object["accelerator"].get(field) == simdjson::SUCCESS) {
    part.accelerator = text_of(field);
  }
  if (object.at_pointer("/scenario/name").get(field) == simdjson::SUCCESS) {
    part.scenario_name = text_of(field);
  }
  // A scenario that does not publish rocm-ernic's series (history.publish: false) keeps its own
  // here, and its record's top-level series is empty: the charts read either, the badges only
  // the top level.
  if (object["series"].get(field) == simdjson::SUCCESS) {
    read_series(field, run);
  }
}

// Fills `run` from one line; returns a reason when the line is not a JSON object.
// `line` lies inside a buffer with at least SIMDJSON_PADDING readable bytes after it.
std::optional<std::string> scan_line(dom::parser& parser, std::string_view line, RunEntry& run) {
  dom::element doc;
  if (auto error = parser.parse(line.data(), line.size(), false).get(doc)) {
    return fmt::format("not valid JSON ({})", simdjson::error_message(error));
  }
  dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return std::string("not a JSON object");
  }
  for (auto [key, value] : object) {
    if (key == "run_id") {
      run.run_id = text_of(value);
    } else if (key == "sha") {
      run.sha = text_of(value);
    } else if (key == "generated") {
      run.generated = text_of(value);
    } else if (key == "node") {
      run.node = text_of(value);
    } else if (key == "runner") {
      run.runner = text_of(value);
    } else if (key == "series") {
      read_series(value, run);
    } else if (key == "badges") {
      read_badges(value, run);
    } else if (key == "ernicctl") {
      read_ernicctl(value, run);
    }
  }
  return std::nullopt;
}

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// Calls `handle(line, offset)` for every line of `in`, reading big blocks: a history of 100k
// records is most of a gigabyte, and a getline copy per line costs as much as parsing it.
template <typename Handle>
void for_each_line(std::istream& in, std::uint64_t begin, std::uint64_t limit,
                   const std::filesystem::path& path, Handle&& handle) {
  std::size_t capacity = std::size_t{8} << 20;
  std::vector<char> buffer(capacity + simdjson::SIMDJSON_PADDING);
  std::size_t have = 0;
  std::uint64_t consumed = begin;  // file offset of buffer[0]
  std::uint64_t left = limit;      // bytes of the range not read yet
  bool eof = false;
  while (!eof || have > 0) {
    if (!eof) {
      auto want = static_cast<std::size_t>(std::min<std::uint64_t>(capacity - have, left));
      in.read(buffer.data() + have, static_cast<std::streamsize>(want));
      auto got = static_cast<std::size_t>(in.gcount());
      have += got;
      left -= got;
      if (in.bad()) {
        throw std::runtime_error(fmt::format("cannot read history {}", path.string()));
      }
      eof = in.eof() || left == 0;
    }
    std::size_t start = 0;
    while (start < have) {
      const char* line_start = buffer.data() + start;
      const void* newline = std::memchr(line_start, '\n', have - start);
      if (newline == nullptr) {
        break;
      }
      std::size_t length = static_cast<const char*>(newline) - line_start;
      handle(std::string_view(line_start, length), consumed + start);
      start += length + 1;
    }
    if (eof && start < have && start == 0 && have < capacity) {
      // the last line has no newline (a writer crashed mid-line): still a line
      handle(std::string_view(buffer.data(), have), consumed);
      start = have;
    } else if (start == 0 && have == capacity) {
      capacity *= 2;  // one line longer than the buffer
      buffer.resize(capacity + simdjson::SIMDJSON_PADDING);
      continue;
    }
    std::memmove(buffer.data(), buffer.data() + start, have - start);
    have -= start;
    consumed += start;
    if (eof && start == 0) {
      break;
    }
  }
}

}  // namespace

std::vector<std::string> RunIndex::runner_classes() const {
  std::set<std::string> names;
  for (const auto& run : runs) {
    names.insert(run.runner_class());
  }
  return {names.begin(), names.end()};
}

std::vector<std::size_t> RunIndex::runs_of(const std::string& runner) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].runner_class() == runner) {
      out.push_back(i);
    }
  }
  return out;
}

namespace {

// What one thread read of a byte range of a history file. Line numbers are counted within the
// range and shifted once the ranges before it are known.
struct ChunkResult {
  std::vector<RunEntry> runs;
  std::vector<std::pair<int, std::string>> problems;
  int lines = 0;
  std::exception_ptr error;
};

ChunkResult scan_range(const std::filesystem::path& path, std::size_t source, std::uint64_t begin,
                       std::uint64_t end) {
  ChunkResult result;
  try {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(begin));
    simdjson::dom::parser parser;
    for_each_line(in, begin, end - begin, path, [&](std::string_view text, std::uint64_t offset) {
      int number = ++result.lines;
      if (blank(text)) {
        return;
      }
      RunEntry run;
      run.source = source;
      run.offset = offset;
      run.length = text.size();
      run.line = number;
      if (auto problem = scan_line(parser, text, run)) {
        result.problems.emplace_back(number, std::move(*problem));
        return;
      }
      result.runs.push_back(std::move(run));
    });
  } catch (...) {
    result.error = std::current_exception();
  }
  return result;
}

// Range boundaries at line starts, about `parts` equal ranges.
std::vector<std::uint64_t> split_at_lines(const std::filesystem::path& path, std::uint64_t size,
                                          std::size_t parts) {
  std::vector<std::uint64_t> bounds{0};
  std::ifstream in(path, std::ios::binary);
  for (std::size_t k = 1; k < parts; ++k) {
    std::uint64_t at = std::max(bounds.back(), size * k / parts);
    in.clear();
    in.seekg(static_cast<std::streamoff>(at));
    std::string rest;
    if (!std::getline(in, rest) || in.eof()) {
      break;
    }
    at += rest.size() + 1;
    if (at > bounds.back() && at < size) {
      bounds.push_back(at);
    }
  }
  bounds.push_back(size);
  return bounds;
}

// Rearranges `items` so that items[i] becomes what was at items[order[i]]. In place because a
// sorted copy of 100k entries is 40 MB of fresh pages to fault in: 1.12 s against 0.96 s for
// `ernicctl report` of 100k runs here, at the same peak memory.
void permute_in_place(std::vector<RunEntry>& items, std::vector<std::size_t> order) {
  for (std::size_t start = 0; start < order.size(); ++start) {
    if (order[start] == start) {
      continue;
    }
    RunEntry held = std::move(items[start]);
    std::size_t at = start;
    while (order[at] != start) {
      std::size_t from = order[at];
      items[at] = std::move(items[from]);
      order[at] = at;
      at = from;
    }
    items[at] = std::move(held);
    order[at] = at;
  }
}

}  // namespace

RunIndex index_histories(const std::vector<std::filesystem::path>& histories,
                         std::uint64_t bytes_per_thread) {
  RunIndex index;
  std::vector<std::string> sort_keys;
  std::unordered_map<std::string, std::size_t> by_run_id;
  for (const auto& path : histories) {
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    std::ifstream probe(path, std::ios::binary);
    if (ec || !probe) {
      throw std::runtime_error(fmt::format(
          "cannot read history {}: {}", path.string(),
          std::filesystem::exists(path) ? "permission denied or not a file" : "no such file"));
    }
    std::size_t source = index.sources.size();
    index.sources.push_back(path);
    std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 4);
    threads = static_cast<std::size_t>(
        std::min<std::uint64_t>(threads, size / std::max<std::uint64_t>(bytes_per_thread, 1) + 1));
    auto bounds = split_at_lines(path, size, threads);
    std::vector<ChunkResult> chunks(bounds.size() - 1);
    {
      std::vector<std::thread> workers;
      for (std::size_t i = 1; i < chunks.size(); ++i) {
        workers.emplace_back(
            [&, i] { chunks[i] = scan_range(path, source, bounds[i], bounds[i + 1]); });
      }
      chunks[0] = scan_range(path, source, bounds[0], bounds[1]);
      for (auto& worker : workers) {
        worker.join();
      }
    }
    std::size_t scanned = 0;
    for (const auto& chunk : chunks) {
      scanned += chunk.runs.size();
    }
    index.runs.reserve(index.runs.size() + scanned);
    sort_keys.reserve(sort_keys.size() + scanned);
    std::string previous_key;
    int line_base = 0;
    for (auto& chunk : chunks) {
      if (chunk.error) {
        std::rethrow_exception(chunk.error);
      }
      for (auto& [number, problem] : chunk.problems) {
        index.warnings.push_back(
            fmt::format("{}:{}: {}; skipped", path.string(), line_base + number, problem));
      }
      for (auto& run : chunk.runs) {
        run.line += line_base;
        if (!run.generated.empty()) {
          previous_key = run.generated;
        }
        if (!run.run_id.empty()) {
          auto [it, inserted] = by_run_id.emplace(run.run_id, index.runs.size());
          if (!inserted) {
            auto& kept = index.runs[it->second];
            if (run.ernicctl && !kept.ernicctl) {
              kept = std::move(run);  // the richer record of the same run, in the first one's place
            }
            continue;
          }
        }
        sort_keys.push_back(previous_key);
        index.runs.push_back(std::move(run));
      }
      line_base += chunk.lines;
    }
  }
  std::vector<std::size_t> order(index.runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return sort_keys[a] < sort_keys[b]; });
  permute_in_place(index.runs, std::move(order));
  return index;
}

HistoryRecord load_record(const RunIndex& index, const RunEntry& run) {
  const auto& path = index.sources.at(run.source);
  std::ifstream in(path, std::ios::binary);
  std::string text(run.length, '\0');
  in.seekg(static_cast<std::streamoff>(run.offset));
  in.read(text.data(), static_cast<std::streamsize>(run.length));
  if (!in) {
    throw std::runtime_error(
        fmt::format("{}:{}: the file changed while reading it", path.string(), run.line));
  }
  std::string error;
  auto json = parse_history_line(text, error);
  if (!json) {
    throw std::runtime_error(fmt::format("{}:{}: {}", path.string(), run.line, error));
  }
  return read_history_record(*json);
}

}  // namespace ernic::reports
