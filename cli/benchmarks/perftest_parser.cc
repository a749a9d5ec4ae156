#include "benchmarks/perftest_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "benchmarks/perftest_errors.h"
#include "benchmarks/tool_text.h"

namespace ernic {
namespace {

using perftest_errors::error_hint;
using perftest_errors::is_error_line;
using perftest_errors::is_known_warning;
using tool_text::contains;
using tool_text::parse_number;
using tool_text::parse_unsigned;
using tool_text::printable;
using tool_text::split_lines;
using tool_text::split_words;
using tool_text::trim;

bool is_dashed_line(std::string_view line) {
  return line.size() >= 10 && line.find_first_not_of('-') == std::string_view::npos;
}

// Header words that start a two-word column name: "BW peak", "99% percentile", "tps average".
bool starts_two_word_name(std::string_view word) {
  return word == "BW" || word == "tps" || (!word.empty() && word.back() == '%');
}

std::vector<PerftestColumn> parse_header(std::string_view line) {
  std::vector<std::string_view> words = split_words(line);
  std::vector<PerftestColumn> columns;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string word(words[i]);
    if (starts_two_word_name(words[i]) && i + 1 < words.size()) {
      word += ' ';
      word += words[++i];
    }
    PerftestColumn column;
    auto open = word.find('[');
    if (open != std::string::npos && word.back() == ']') {
      column.name = word.substr(0, open);
      column.unit = word.substr(open + 1, word.size() - open - 2);
    } else {
      column.name = word;
    }
    columns.push_back(std::move(column));
  }
  return columns;
}

bool is_header_line(std::string_view trimmed) {
  return trimmed.starts_with("#bytes");
}

// A result row: an unsigned size first, then numbers only ("-nan" included).
bool looks_like_row(const std::vector<std::string_view>& words) {
  if (words.size() < 2 || !parse_unsigned(words[0])) {
    return false;
  }
  return std::all_of(words.begin() + 1, words.end(),
                     [](std::string_view word) { return parse_number(word).has_value(); });
}

std::string verb_of_title(std::string_view title) {
  if (title.starts_with("Send")) {
    return "send";
  }
  if (title.starts_with("RDMA_Write")) {
    return "write";
  }
  if (title.starts_with("RDMA_Read")) {
    return "read";
  }
  if (title.starts_with("Atomic")) {
    return "atomic";
  }
  return "";
}

// "RDMA_Write BW Test", "Send Latency Test"
std::optional<std::string> banner_title(std::string_view trimmed) {
  if (!trimmed.ends_with(" BW Test") && !trimmed.ends_with(" Latency Test")) {
    return std::nullopt;
  }
  return std::string(trimmed);
}

bool is_server_marker(std::string_view line) {
  return contains(line, "Waiting for client") || contains(line, "RX depth");
}

bool is_client_marker(std::string_view line) {
  return contains(line, "TX depth");
}

struct TableState {
  PerftestTable table;
  int group = 0;
  int server_marks = 0;
  int client_marks = 0;
};

// Which of several tables whose headers were printed together (two streams merged into one
// file) belongs to the server.
void assign_sides_in_group(std::vector<TableState*>& group) {
  int server_marks = group.front()->server_marks;
  int client_marks = group.front()->client_marks;
  auto set_all = [&](PerftestSide side) {
    for (TableState* state : group) {
      state->table.side = side;
    }
  };
  if (group.size() == 1 || (server_marks > 0) != (client_marks > 0)) {
    set_all(server_marks > 0 && client_marks == 0 ? PerftestSide::kServer : PerftestSide::kClient);
    return;
  }
  // Both sides' banners came before these headers: tell the tables apart by what only a
  // server prints. The server of write and read tests prints only the last size of a sweep;
  // the receiving side of send tests does not measure the peak.
  set_all(PerftestSide::kServer);
  if (group.size() != 2) {
    group.front()->table.side = PerftestSide::kClient;  // several pairs merged: keep the order
    return;
  }
  auto sizes = [](const PerftestTable& table) {
    std::set<std::uint64_t> result;
    for (const auto& row : table.rows) {
      result.insert(row.bytes);
    }
    return result;
  };
  auto peak_measured = [](const PerftestTable& table) {
    return std::any_of(table.rows.begin(), table.rows.end(),
                       [&](const PerftestRow& row) { return table.value(row, "BW peak"); });
  };
  TableState* client = group.front();
  for (TableState* candidate : group) {
    for (TableState* other : group) {
      if (candidate == other) {
        continue;
      }
      auto mine = sizes(candidate->table);
      auto theirs = sizes(other->table);
      bool covers = theirs.size() < mine.size() &&
                    std::includes(mine.begin(), mine.end(), theirs.begin(), theirs.end());
      bool only_one_measures_peak = peak_measured(candidate->table) && !peak_measured(other->table);
      if (covers || only_one_measures_peak) {
        client = candidate;
      }
    }
  }
  client->table.side = PerftestSide::kClient;
}

class Parser {
 public:
  PerftestOutput run(std::string_view text) {
    std::vector<std::string_view> lines = split_lines(text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      line_number_ = static_cast<int>(i) + 1;
      read_line(lines[i]);
    }
    finish(static_cast<int>(lines.size()));
    return std::move(output_);
  }

 private:
  void read_line(std::string_view raw) {
    std::string_view line = trim(raw);
    if (line.empty()) {
      return;
    }
    saw_text_ = true;
    if (is_dashed_line(line)) {
      close_filling_table();
      return;
    }
    if (is_header_line(line)) {
      open_table(line);
      return;
    }
    if (read_histogram_line(line)) {
      return;
    }
    std::vector<std::string_view> words = split_words(line);
    if (looks_like_row(words)) {
      add_row(words);
      return;
    }
    if (is_error_line(line)) {
      add_error(line);
      return;
    }
    if (read_runtime_start_line(line)) {
      return;
    }
    if (is_known_warning(line)) {
      output_.warnings.push_back(fmt::format("line {}: {}", line_number_, printable(line)));
      return;
    }
    if (is_server_marker(line)) {
      ++server_marks_;
    }
    if (is_client_marker(line)) {
      ++client_marks_;
    }
    if (auto title = banner_title(line)) {
      titles_.push_back(printable(*title));
      return;
    }
    if (!is_banner_line(line)) {
      output_.warnings.push_back(fmt::format("line {}: {}", line_number_, printable(line)));
    }
  }

  static bool same_columns(const std::vector<PerftestColumn>& a,
                           const std::vector<PerftestColumn>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
      return x.name == y.name && x.unit == y.unit;
    });
  }

  bool read_runtime_start_line(std::string_view line) {
    constexpr std::string_view kPrefix = "Time to first QP in RTS:";
    if (!line.starts_with(kPrefix)) {
      return false;
    }
    std::vector<std::string_view> words = split_words(line.substr(kPrefix.size()));
    std::optional<double> value = words.size() == 2 && words[1] == "ms"
                                      ? tool_text::parse_finite_number(words[0])
                                      : std::nullopt;
    if (value) {
      output_.time_to_first_rts_ms = *value;
    } else {
      output_.warnings.push_back(fmt::format("line {}: {}", line_number_, printable(line)));
    }
    return true;
  }

  // -H/--report-histogram: "#, usec" then one "N, value" line per iteration, before the row
  // they belong to.
  bool read_histogram_line(std::string_view line) {
    if (line.starts_with("#,")) {
      histogram_.clear();
      histogram_unit_ = std::string(trim(line.substr(2)));
      in_histogram_ = true;
      return true;
    }
    if (!in_histogram_) {
      return false;
    }
    auto comma = line.find(',');
    if (comma == std::string_view::npos || !parse_unsigned(trim(line.substr(0, comma)))) {
      return false;
    }
    std::optional<double> value = parse_number(trim(line.substr(comma + 1)));
    if (!value) {
      return false;
    }
    histogram_.push_back(*value);
    return true;
  }

  static bool is_banner_line(std::string_view line) {
    return line.front() == '*' || contains(line, ":") || contains(line, "Please run the same") ||
           contains(line, "Waiting for client");
  }

  void open_table(std::string_view line) {
    TableState* filling = filling_table();
    if (in_histogram_ && filling != nullptr && filling->table.rows.empty() &&
        same_columns(filling->table.columns, parse_header(printable(line)))) {
      return;  // the header printed again after a -H histogram: still the same table
    }
    if (filling != nullptr && !filling->table.rows.empty()) {
      filling->table.closed = true;
    }
    bool same_group = filling != nullptr && filling->table.rows.empty();
    TableState state;
    state.table.header_line = line_number_;
    state.table.columns = parse_header(printable(line));
    state.group = same_group ? filling->group : ++last_group_;
    state.server_marks = same_group ? filling->server_marks : server_marks_;
    state.client_marks = same_group ? filling->client_marks : client_marks_;
    bool has_bw = state.table.column("BW average") || state.table.column("BW peak");
    state.table.mode = has_bw ? PerftestMode::kBandwidth : PerftestMode::kLatency;
    if (!has_bw && !state.table.column("t_min") && !state.table.column("t_avg") &&
        !state.table.column("t_typical")) {
      add_problem(
          fmt::format("line {}: a table header without bandwidth (BW average) or latency "
                      "(t_min, t_avg) columns: {}",
                      line_number_, printable(line)));
    }
    if (next_title_ < titles_.size()) {
      state.table.test = titles_[next_title_++];
    } else if (!titles_.empty()) {
      state.table.test = titles_.back();
    }
    state.table.verb = verb_of_title(state.table.test);
    tables_.push_back(std::move(state));
    server_marks_ = 0;
    client_marks_ = 0;
  }

  // The first table still waiting for rows (several when merged streams printed their
  // headers back to back).
  TableState* filling_table() {
    // Tables close in the order they opened, so the first open one only moves forward.
    while (first_open_ < tables_.size() && tables_[first_open_].table.closed) {
      ++first_open_;
    }
    return first_open_ < tables_.size() ? &tables_[first_open_] : nullptr;
  }

  void close_filling_table() {
    TableState* filling = filling_table();
    if (filling != nullptr && !filling->table.rows.empty()) {
      filling->table.closed = true;
    }
  }

  void add_row(const std::vector<std::string_view>& words) {
    TableState* filling = filling_table();
    if (filling == nullptr) {
      add_problem(
          fmt::format("line {}: a result row outside any table (no '#bytes' header "
                      "before it)",
                      line_number_));
      return;
    }
    PerftestTable& table = filling->table;
    if (words.size() != table.columns.size()) {
      std::string names;
      for (const auto& column : table.columns) {
        names += names.empty() ? column.name : ", " + column.name;
      }
      add_problem(
          fmt::format("line {}: expected {} columns ({}) as in the header at line {}, "
                      "found {}",
                      line_number_, table.columns.size(), names, table.header_line, words.size()));
      return;
    }
    PerftestRow row;
    row.line = line_number_;
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::string& name = table.columns[i].name;
      std::optional<double> value = parse_number(words[i]);
      if (value && !std::isfinite(*value)) {
        value.reset();
      }
      if (name == "#bytes") {
        row.bytes = parse_unsigned(words[i]).value_or(0);
      } else if (name == "#iterations") {
        row.iterations = parse_unsigned(words[i]).value_or(0);
      } else if (name == "BW peak" && value && *value == 0.0) {
        value.reset();  // perftest prints 0.00 when it did not measure the peak
      }
      row.values.push_back(value);
    }
    if (in_histogram_) {
      row.histogram = std::move(histogram_);
      row.histogram_unit = std::move(histogram_unit_);
      histogram_.clear();
      in_histogram_ = false;
    }
    table.rows.push_back(std::move(row));
  }

  void add_error(std::string_view line) {
    std::string message = printable(line);
    if (auto hint = error_hint(line); hint && hints_.insert(*hint).second) {
      message += " (" + *hint + ")";
    }
    errors_.push_back(fmt::format("line {}: {}", line_number_, message));
    if (first_error_line_ == 0) {
      first_error_line_ = line_number_;
    }
  }

  void add_problem(std::string message) {
    if (problem_.empty()) {
      problem_ = std::move(message);
      problem_line_ = line_number_;
    }
  }

  void finish(int last_line) {
    // Group tables whose headers were printed together and decide each one's side.
    for (std::size_t i = 0; i < tables_.size();) {
      std::vector<TableState*> group;
      std::size_t j = i;
      for (; j < tables_.size() && tables_[j].group == tables_[i].group; ++j) {
        group.push_back(&tables_[j]);
      }
      assign_sides_in_group(group);
      i = j;
    }
    for (TableState& state : tables_) {
      output_.tables.push_back(std::move(state.table));
    }

    if (!errors_.empty()) {
      std::string joined;
      for (std::size_t i = 0; i < errors_.size() && i < 4; ++i) {
        joined += (i == 0 ? "" : "; ") + errors_[i];
      }
      output_.error = joined;
      output_.error_line = first_error_line_;
      return;
    }
    if (!problem_.empty()) {
      output_.error = problem_;
      output_.error_line = problem_line_;
      return;
    }
    for (const PerftestTable& table : output_.tables) {
      if (table.rows.empty()) {
        output_.error =
            fmt::format("line {}: a table header with no result rows after it", table.header_line);
        output_.error_line = table.header_line;
        return;
      }
      if (!table.closed) {
        output_.error = fmt::format(
            "line {}: the table that starts at line {} has no closing dashed line: the output "
            "was cut short (the tool was killed or is still running)",
            last_line, table.header_line);
        output_.error_line = last_line;
        return;
      }
    }
    if (output_.tables.empty()) {
      std::string hint;
      if (!saw_text_) {
        hint = ": the output is empty";
      } else if (!titles_.empty() && contains(titles_.back(), "RDMA_Read Latency")) {
        hint = " (the server side of ib_read_lat prints none: read the client's output)";
      }
      output_.error =
          fmt::format("no result table (a '#bytes #iterations ...' header) found{}", hint);
      output_.error_line = 0;
    }
  }

  PerftestOutput output_;
  std::vector<TableState> tables_;
  std::vector<std::string> titles_;
  std::size_t next_title_ = 0;
  std::size_t first_open_ = 0;
  std::vector<std::string> errors_;
  std::set<std::string> hints_;
  std::string problem_;
  int problem_line_ = 0;
  int first_error_line_ = 0;
  int line_number_ = 0;
  int last_group_ = 0;
  int server_marks_ = 0;
  int client_marks_ = 0;
  bool saw_text_ = false;
  std::vector<double> histogram_;
  std::string histogram_unit_;
  bool in_histogram_ = false;
};

}  // namespace

const PerftestColumn* PerftestTable::column(std::string_view name) const {
  for (const auto& candidate : columns) {
    if (candidate.name == name) {
      return &candidate;
    }
  }
  return nullptr;
}

std::optional<double> PerftestTable::value(const PerftestRow& row, std::string_view name) const {
  for (std::size_t i = 0; i < columns.size() && i < row.values.size(); ++i) {
    if (columns[i].name == name) {
      return row.values[i];
    }
  }
  return std::nullopt;
}

const PerftestRow* PerftestTable::row_for_size(std::uint64_t bytes) const {
  auto all = rows_for_size(bytes);
  return all.empty() ? nullptr : all.back();
}

std::vector<const PerftestRow*> PerftestTable::rows_for_size(std::uint64_t bytes) const {
  std::vector<const PerftestRow*> out;
  for (const auto& row : rows) {
    if (row.bytes == bytes) {
      out.push_back(&row);
    }
  }
  return out;
}

std::string PerftestTable::unit() const {
  for (std::string_view name : {"BW average", "BW peak", "t_typical", "t_avg", "t_min"}) {
    if (const PerftestColumn* found = column(name); found != nullptr) {
      return found->unit;
    }
  }
  return "";
}

const PerftestTable* PerftestOutput::table(PerftestSide side) const {
  for (const auto& candidate : tables) {
    if (candidate.side == side) {
      return &candidate;
    }
  }
  return nullptr;
}

PerftestOutput parse_perftest_output(std::string_view text) {
  return Parser().run(text);
}

}  // namespace ernic
