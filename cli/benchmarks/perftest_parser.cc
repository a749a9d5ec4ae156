#include "benchmarks/perftest_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <set>

#include "benchmarks/tool_text.h"

namespace ernic {
namespace {

using tool_text::contains;
using tool_text::parse_number;
using tool_text::parse_unsigned;
using tool_text::printable;
using tool_text::split_lines;
using tool_text::split_words;
using tool_text::trim;

constexpr std::string_view kTool = "perftest";

// Known perftest (and verbs) error texts, with what they usually mean. Matched anywhere in a
// line, because perftest prefixes some with a function name or a pid.
struct KnownError {
  std::string_view text;
  std::string_view hint;
};

constexpr std::array kKnownErrors{
    KnownError{"Couldn't connect to",
               "the server is not listening there: not started, wrong address or port, or "
               "blocked"},
    KnownError{"Unable to init the socket connection",
               "the out-of-band connection to the other side failed"},
    KnownError{"Completion with error", "a work request failed mid-run (peer or device error)"},
    KnownError{"Couldn't create CQ",
               "usually RLIMIT_MEMLOCK is too small (check `ulimit -l`; run the memlock setup "
               "step)"},
    KnownError{"Couldn't allocate MR",
               "usually RLIMIT_MEMLOCK is too small (check `ulimit -l`; run the memlock setup "
               "step)"},
    KnownError{"Couldn't create QP",
               "usually RLIMIT_MEMLOCK is too small (check `ulimit -l`; run the memlock setup "
               "step)"},
    KnownError{"Couldn't get context for the device",
               "the RDMA device is missing or unusable (check the rdma-device setup step)"},
    KnownError{"No IB devices found", "the host has no RDMA device"},
    KnownError{"not found", "the RDMA device named with -d does not exist on this host"},
    KnownError{"state is Down", "the RDMA port is down"},
    KnownError{"ADDR_ERROR", "rdma_cm could not resolve the server address (-R)"},
    KnownError{"Couldn't read remote address",
               "the other side went away during the connection handshake"},
    KnownError{"Failed to modify QP",
               "the queue pair could not be connected (wrong GID index or unreachable peer)"},
};

// Words that mark a line as a failure report when no known text matched.
constexpr std::array kErrorWords{std::string_view("Couldn't "),  std::string_view("Unable to "),
                                 std::string_view("Failed to "), std::string_view("Failed status"),
                                 std::string_view("ERRNO:"),     std::string_view("poll CQ failed"),
                                 std::string_view("Error:"),     std::string_view("error:")};

// ibv_wc_status values (rdma-core verbs.h), for "Failed status N".
constexpr std::array<std::string_view, 22> kWcStatusNames{
    "IBV_WC_SUCCESS",           "IBV_WC_LOC_LEN_ERR",
    "IBV_WC_LOC_QP_OP_ERR",     "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",      "IBV_WC_WR_FLUSH_ERR",
    "IBV_WC_MW_BIND_ERR",       "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",    "IBV_WC_REM_INV_REQ_ERR",
    "IBV_WC_REM_ACCESS_ERR",    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",     "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR",  "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",     "IBV_WC_INV_EECN_ERR",
    "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR",  "IBV_WC_GENERAL_ERR"};

std::optional<std::string> error_hint(std::string_view line) {
  constexpr std::string_view kFailedStatus = "Failed status ";
  if (auto at = line.find(kFailedStatus); at != std::string_view::npos) {
    std::string_view rest = line.substr(at + kFailedStatus.size());
    unsigned status = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), status);
    if (ec == std::errc() && end != rest.data() && status < kWcStatusNames.size()) {
      return fmt::format("work completion status {} is {}", status, kWcStatusNames[status]);
    }
  }
  for (const KnownError& known : kKnownErrors) {
    if (contains(line, known.text)) {
      // "not found" alone is too common a phrase: only device lookups count.
      if (known.text == "not found" && !contains(line, "device")) {
        continue;
      }
      return std::string(known.hint);
    }
  }
  return std::nullopt;
}

bool is_error_line(std::string_view line) {
  if (error_hint(line)) {
    return true;
  }
  return std::any_of(kErrorWords.begin(), kErrorWords.end(),
                     [&](std::string_view word) { return contains(line, word); });
}

bool is_known_warning(std::string_view line) {
  return contains(line, "Conflicting CPU frequency") ||
         contains(line, "not recognized to implement") || contains(line, "WARNING") ||
         contains(line, "Warning") || contains(line, "warning");
}

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
    std::vector<std::string_view> words = split_words(line);
    if (looks_like_row(words)) {
      add_row(words);
      return;
    }
    if (is_error_line(line)) {
      add_error(line);
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

  static bool is_banner_line(std::string_view line) {
    return line.front() == '*' || contains(line, ":") || contains(line, "Please run the same") ||
           contains(line, "Waiting for client");
  }

  void open_table(std::string_view line) {
    TableState* filling = filling_table();
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
};

// Bytes per second per unit of a bandwidth column.
std::optional<double> bytes_per_second(std::string_view unit) {
  if (unit == "MB/sec" || unit == "MiB/sec") {
    return 1048576.0;  // perftest's "MB" has always been 2^20 bytes
  }
  if (unit == "Gb/sec") {
    return 1e9 / 8;
  }
  return std::nullopt;
}

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
  for (const auto& row : rows) {
    if (row.bytes == bytes) {
      return &row;
    }
  }
  return nullptr;
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

std::map<std::string, double> perftest_row_metrics(const PerftestTable& table,
                                                   const PerftestRow& row) {
  std::map<std::string, double> metrics;
  auto add = [&](const char* metric, std::string_view column_name, auto convert) {
    const PerftestColumn* found = table.column(column_name);
    std::optional<double> value = table.value(row, column_name);
    if (found == nullptr || !value) {
      return;
    }
    if (std::optional<double> converted = convert(found->unit, *value)) {
      metrics[metric] = *converted;
    }
  };
  auto to_gbs = [](const std::string& unit, double value) -> std::optional<double> {
    auto scale = bytes_per_second(unit);
    return scale ? std::optional<double>(value * *scale / 1e9) : std::nullopt;
  };
  auto to_us = [](const std::string& unit, double value) -> std::optional<double> {
    return unit == "usec" ? std::optional<double>(value) : std::nullopt;
  };
  auto to_mpps = [](const std::string& unit, double value) -> std::optional<double> {
    return unit == "Mpps" ? std::optional<double>(value) : std::nullopt;
  };
  add("bw_peak_GBs", "BW peak", to_gbs);
  add("bw_avg_GBs", "BW average", to_gbs);
  add("msg_rate_mpps", "MsgRate", to_mpps);
  add("lat_min_us", "t_min", to_us);
  add("lat_max_us", "t_max", to_us);
  add("lat_typical_us", "t_typical", to_us);
  add("lat_avg_us", "t_avg", to_us);
  add("lat_stdev_us", "t_stdev", to_us);
  add("lat_p99_us", "99% percentile", to_us);
  add("lat_p999_us", "99.9% percentile", to_us);
  return metrics;
}

const char* to_string(PerftestSide side) {
  return side == PerftestSide::kServer ? "server" : "client";
}

const char* to_string(PerftestMode mode) {
  return mode == PerftestMode::kBandwidth ? "bw" : "lat";
}

nlohmann::json perftest_output_to_json(const PerftestOutput& output) {
  nlohmann::json tables = nlohmann::json::array();
  for (const PerftestTable& table : output.tables) {
    nlohmann::json units = nlohmann::json::object();
    for (const auto& column : table.columns) {
      if (!column.unit.empty()) {
        units[column.name] = column.unit;
      }
    }
    nlohmann::json rows = nlohmann::json::array();
    for (const PerftestRow& row : table.rows) {
      nlohmann::json columns = nlohmann::json::object();
      for (std::size_t i = 0; i < table.columns.size() && i < row.values.size(); ++i) {
        const std::string& name = table.columns[i].name;
        if (name == "#bytes") {
          columns[name] = row.bytes;
        } else if (name == "#iterations") {
          columns[name] = row.iterations;
        } else if (row.values[i]) {
          columns[name] = *row.values[i];
        } else {
          columns[name] = nullptr;  // printed as 0.00 (BW peak) or -nan: not measured
        }
      }
      rows.push_back({{"line", row.line},
                      {"size", row.bytes},
                      {"columns", columns},
                      {"metrics", perftest_row_metrics(table, row)}});
    }
    tables.push_back({{"test", table.test},
                      {"verb", table.verb},
                      {"mode", to_string(table.mode)},
                      {"unit", table.unit()},
                      {"units", units},
                      {"side", to_string(table.side)},
                      {"header_line", table.header_line},
                      {"complete", table.closed && !table.rows.empty()},
                      {"rows", rows}});
  }
  nlohmann::json data = {{"tool", kTool}, {"tables", tables}, {"warnings", output.warnings}};
  if (!output.error.empty()) {
    data["error"] = output.error;
    data["error_line"] = output.error_line;
  }
  return data;
}

ParsedFile parse_perftest_file(std::string_view text) {
  PerftestOutput output = parse_perftest_output(text);
  ParsedFile file;
  file.data = perftest_output_to_json(output);
  if (!output.error.empty()) {
    file.error = fmt::format("{}: {}", kTool, output.error);
  }
  return file;
}

OutputParser perftest_output_parser() {
  return {std::string(kTool),
          "perftest ib_{send,write,read}_{bw,lat} text output (either side, or both merged)",
          &parse_perftest_file};
}

}  // namespace ernic
