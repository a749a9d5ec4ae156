#include "benchmarks/pingpong_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "benchmarks/tool_text.h"

namespace ernic {
namespace {

using tool_text::contains;
using tool_text::parse_finite_number;
using tool_text::parse_unsigned;
using tool_text::printable;
using tool_text::split_words;

constexpr std::string_view kPingpongTool = "pingpong";

// "<count> <what> in <seconds> seconds = <rate> <unit>"
struct RateLine {
  std::uint64_t count = 0;
  double seconds = 0;
  double rate = 0;
};

std::optional<RateLine> parse_rate_line(const std::vector<std::string_view>& words,
                                        std::string_view what, std::string_view unit) {
  if (words.size() != 8 || words[1] != what || words[2] != "in" || words[4] != "seconds" ||
      words[5] != "=" || words[7] != unit) {
    return std::nullopt;
  }
  auto count = parse_unsigned(words[0]);
  auto seconds = parse_finite_number(words[3]);
  auto rate = parse_finite_number(words[6]);
  if (!count || !seconds || !rate) {
    return std::nullopt;
  }
  return RateLine{*count, *seconds, *rate};
}

constexpr std::array kErrorWords{std::string_view("Couldn't"),  std::string_view("couldn't"),
                                 std::string_view("Failed"),    std::string_view("failed"),
                                 std::string_view("Unable"),    std::string_view("read/write:"),
                                 std::string_view("not found"), std::string_view("No IB devices"),
                                 std::string_view("error")};

bool is_pingpong_error_line(std::string_view line) {
  return std::any_of(kErrorWords.begin(), kErrorWords.end(),
                     [&](std::string_view word) { return contains(line, word); });
}

// "local address:  LID 0x0000, QPN 0x000013, PSN 0x44aac0, GID ::" -> "::"
std::optional<std::string> address_gid(std::string_view line) {
  auto at = line.find("GID ");
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::vector<std::string_view> words = split_words(line.substr(at + 4));
  return words.empty() ? std::string() : printable(words.front());
}

}  // namespace

PingpongOutput parse_pingpong_output(std::string_view text) {
  PingpongOutput output;
  std::vector<std::string> errors;
  std::optional<PingpongResult> pending;  // a "bytes" line waiting for its "iters" line
  std::string problem;
  int problem_line = 0;
  auto report_problem = [&](int line, std::string message) {
    if (problem.empty()) {
      problem = std::move(message);
      problem_line = line;
    }
  };
  auto unpaired = [](const PingpongResult& result) {
    return fmt::format(
        "line {}: a bandwidth line without its 'N iters in T seconds = L usec/iter' line after "
        "it: both are required",
        result.line);
  };

  int number = 0;
  while (!text.empty()) {
    auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++number;
    std::vector<std::string_view> words = split_words(line);
    if (words.empty()) {
      continue;
    }
    if (auto bytes = parse_rate_line(words, "bytes", "Mbit/sec")) {
      if (pending) {
        report_problem(pending->line, unpaired(*pending));
      }
      pending = PingpongResult{};
      pending->line = number;
      pending->bytes = bytes->count;
      pending->bytes_seconds = bytes->seconds;
      pending->mbit_per_sec = bytes->rate;
      continue;
    }
    if (auto iters = parse_rate_line(words, "iters", "usec/iter")) {
      if (!pending) {
        report_problem(number, fmt::format("line {}: a latency line without the 'N bytes in T "
                                           "seconds = R Mbit/sec' line before it",
                                           number));
        continue;
      }
      pending->iters = iters->count;
      pending->iters_seconds = iters->seconds;
      pending->usec_per_iter = iters->rate;
      output.results.push_back(*pending);
      pending.reset();
      continue;
    }
    std::string_view first = words.front();
    if (first == "local" || first == "remote") {
      if (auto gid = address_gid(line)) {
        (first == "local" ? output.local_gid : output.remote_gid) = *gid;
        continue;
      }
    }
    if (is_pingpong_error_line(line)) {
      errors.push_back(fmt::format("line {}: {}", number, printable(line)));
      if (output.error_line == 0) {
        output.error_line = number;
      }
      continue;
    }
    output.warnings.push_back(fmt::format("line {}: {}", number, printable(line)));
  }
  if (pending) {
    report_problem(pending->line, unpaired(*pending));
  }

  if (!errors.empty()) {
    for (std::size_t i = 0; i < errors.size() && i < 4; ++i) {
      output.error += (i == 0 ? "" : "; ") + errors[i];
    }
    if (output.local_gid == "::") {
      output.error +=
          " (the local GID is empty (::): on RoCE devices, soft-RoCE included, ibv_rc_pingpong "
          "needs -g GID_INDEX; the gid-index setup step finds it)";
    }
    return output;
  }
  output.error_line = 0;
  if (!problem.empty()) {
    output.error = problem;
    output.error_line = problem_line;
  } else if (output.results.empty()) {
    output.error =
        "no result: expected 'N bytes in T seconds = R Mbit/sec' and 'N iters in T seconds = L "
        "usec/iter' lines";
  }
  return output;
}

std::map<std::string, double> pingpong_metrics(const PingpongResult& result) {
  return {{"bw_Mbps", result.mbit_per_sec},
          {"bw_GBs", result.mbit_per_sec / 8000.0},
          {"lat_per_iter_us", result.usec_per_iter}};
}

nlohmann::json pingpong_output_to_json(const PingpongOutput& output) {
  nlohmann::json results = nlohmann::json::array();
  for (const PingpongResult& result : output.results) {
    results.push_back({{"line", result.line},
                       {"bytes", result.bytes},
                       {"bytes_seconds", result.bytes_seconds},
                       {"Mbit/sec", result.mbit_per_sec},
                       {"iters", result.iters},
                       {"iters_seconds", result.iters_seconds},
                       {"usec/iter", result.usec_per_iter},
                       {"metrics", pingpong_metrics(result)}});
  }
  nlohmann::json data = {{"tool", kPingpongTool},
                         {"results", results},
                         {"local_gid", output.local_gid},
                         {"remote_gid", output.remote_gid},
                         {"warnings", output.warnings}};
  if (!output.error.empty()) {
    data["error"] = output.error;
    data["error_line"] = output.error_line;
  }
  return data;
}

ParsedFile parse_pingpong_file(std::string_view text) {
  PingpongOutput output = parse_pingpong_output(text);
  ParsedFile file;
  file.data = pingpong_output_to_json(output);
  if (!output.error.empty()) {
    file.error = fmt::format("{}: {}", kPingpongTool, output.error);
  }
  return file;
}

OutputParser pingpong_output_parser() {
  return {std::string(kPingpongTool), "ibv_rc_pingpong output (rdma-core)", &parse_pingpong_file};
}

}  // namespace ernic
