#include "benchmarks/iperf3_parser.h"

#include <fmt/format.h>

#include <sstream>

#include "benchmarks/tool_text.h"

namespace ernic {
namespace {

using tool_text::line_of_offset;

constexpr const char* kIperf3Tool = "iperf3";

// Finds the end of the JSON object starting at `begin` by matching braces outside strings.
std::size_t object_end(std::string_view text, std::size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = begin; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// iperf3 prints C's "-nan", "nan" and "inf" into its JSON; they become null.
std::string replace_non_finite(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < json.size()) {
        out += json[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (std::string_view token : {"-nan", "nan", "-inf", "inf"}) {
      if (json.substr(i, token.size()) == token) {
        out += "null";
        i += token.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) {
      out += c;
    }
  }
  return out;
}

std::optional<double> number_at(const nlohmann::json& object,
                                std::initializer_list<const char*> path) {
  const nlohmann::json* node = &object;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) {
      return std::nullopt;
    }
    node = &(*node)[key];
  }
  if (node->is_number()) {
    return node->get<double>();
  }
  return std::nullopt;
}

std::vector<std::string> text_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::stringstream stream{std::string(text)};
  for (std::string line; std::getline(stream, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) {
      lines.push_back(line);
    }
  }
  return lines;
}

// --json-stream output: one {"event": ..., "data": ...} object per line.
Iperf3Result from_stream(std::string_view text,
                         const std::vector<std::pair<int, nlohmann::json>>& events);

Iperf3Result from_document(const nlohmann::json& doc, std::vector<std::string> notes,
                           int first_line) {
  if (doc.contains("error") && doc["error"].is_string() &&
      !doc["error"].get<std::string>().empty()) {
    throw ParseError(kIperf3Tool, first_line,
                     fmt::format("iperf3 reported an error: {}", doc["error"].get<std::string>()));
  }
  Iperf3Result result;
  result.notes = std::move(notes);
  const auto& start = doc.value("start", nlohmann::json::object());
  std::string version = start.value("version", "");
  result.version = version.rfind("iperf ", 0) == 0 ? version.substr(6) : version;
  const auto& test = start.value("test_start", nlohmann::json::object());
  result.protocol = test.value("protocol", "");
  result.streams = test.value("num_streams", 0);
  result.duration_s = test.value("duration", 0.0);
  result.reverse = test.value("reverse", 0) != 0;
  for (const auto& interval : doc.value("intervals", nlohmann::json::array())) {
    bool omitted = interval.contains("sum") && interval["sum"].value("omitted", false);
    (omitted ? result.omitted_intervals : result.intervals)++;
    if (!omitted) {
      if (auto rate = number_at(interval, {"sum", "bits_per_second"})) {
        result.interval_bits_per_second.push_back(*rate);
      }
      if (auto seconds = number_at(interval, {"sum", "seconds"}); seconds && !result.interval_s) {
        result.interval_s = *seconds;
      }
    }
  }
  const auto& end = doc.value("end", nlohmann::json::object());
  result.sender_bits_per_second = number_at(end, {"sum_sent", "bits_per_second"});
  result.receiver_bits_per_second = number_at(end, {"sum_received", "bits_per_second"});
  if (auto retransmits = number_at(end, {"sum_sent", "retransmits"})) {
    result.retransmits = static_cast<long long>(*retransmits);
  }
  if (end.contains("sum")) {
    // UDP: before iperf3 3.11 only end.sum exists; it is the receiver-side view.
    if (!result.receiver_bits_per_second) {
      result.receiver_bits_per_second = number_at(end, {"sum", "bits_per_second"});
    }
    result.jitter_ms = number_at(end, {"sum", "jitter_ms"});
    result.lost_percent = number_at(end, {"sum", "lost_percent"});
  }
  result.cpu_host_percent = number_at(end, {"cpu_utilization_percent", "host_total"});
  result.cpu_remote_percent = number_at(end, {"cpu_utilization_percent", "remote_total"});
  if (!result.receiver_bits_per_second && !result.sender_bits_per_second) {
    std::string reason = "the JSON has no end.sum_sent, end.sum_received or end.sum";
    for (const auto& note : result.notes) {
      if (note.find("error") != std::string::npos) {
        reason += fmt::format(" (iperf3 said: {})", note);
        break;
      }
    }
    throw ParseError(kIperf3Tool, first_line, reason);
  }
  return result;
}

Iperf3Result from_stream(std::string_view /*text*/,
                         const std::vector<std::pair<int, nlohmann::json>>& events) {
  nlohmann::json doc = {{"start", nlohmann::json::object()},
                        {"intervals", nlohmann::json::array()},
                        {"end", nlohmann::json::object()}};
  int first_line = events.empty() ? 0 : events.front().first;
  for (const auto& [line, event] : events) {
    std::string name = event.value("event", "");
    const auto& data = event.contains("data") ? event["data"] : nlohmann::json();
    if (name == "error") {
      throw ParseError(kIperf3Tool, line,
                       fmt::format("iperf3 reported an error: {}",
                                   data.is_string() ? data.get<std::string>() : data.dump()));
    }
    if (name == "start") {
      doc["start"] = data;
    } else if (name == "interval") {
      doc["intervals"].push_back(data);
    } else if (name == "end") {
      doc["end"] = data;
    }
  }
  return from_document(doc, {}, first_line);
}

}  // namespace

double Iperf3Result::bandwidth_bits_per_second() const {
  if (receiver_bits_per_second) {
    return *receiver_bits_per_second;
  }
  return sender_bits_per_second.value_or(0);
}

nlohmann::json Iperf3Result::to_json() const {
  auto optional = [](const auto& value) -> nlohmann::json {
    if (value) {
      return *value;
    }
    return nullptr;
  };
  return {{"tool", "iperf3"},
          {"version", version},
          {"protocol", protocol},
          {"streams", streams},
          {"duration_s", duration_s},
          {"reverse", reverse},
          {"sender_bits_per_second", optional(sender_bits_per_second)},
          {"receiver_bits_per_second", optional(receiver_bits_per_second)},
          {"bandwidth_GBs", bandwidth_bits_per_second() / 8e9},
          {"retransmits", optional(retransmits)},
          {"jitter_ms", optional(jitter_ms)},
          {"lost_percent", optional(lost_percent)},
          {"cpu_host_percent", optional(cpu_host_percent)},
          {"cpu_remote_percent", optional(cpu_remote_percent)},
          {"intervals", intervals},
          {"omitted_intervals", omitted_intervals},
          {"notes", notes}};
}

Iperf3Result parse_iperf3_unchecked(std::string_view text);

Iperf3Result parse_iperf3(std::string_view text) {
  try {
    return parse_iperf3_unchecked(text);
  } catch (const nlohmann::json::exception& e) {
    // Valid JSON of the wrong shape (a number where iperf3 writes an object): not a result.
    throw ParseError(kIperf3Tool, 0,
                     fmt::format("the JSON does not have iperf3's structure ({})", e.what()));
  }
}

Iperf3Result parse_iperf3_unchecked(std::string_view text) {
  // The JSON starts at the first line that begins with '{'; anything before it is a warning.
  std::size_t begin = std::string_view::npos;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t first = text.find_first_not_of(" \t", pos);
    if (first != std::string_view::npos && first < text.size() && text[first] == '{') {
      begin = first;
      break;
    }
    std::size_t newline = text.find('\n', pos);
    if (newline == std::string_view::npos) {
      break;
    }
    pos = newline + 1;
  }
  if (begin == std::string_view::npos) {
    auto lines = text_lines(text);
    std::string said =
        lines.empty() ? "the output is empty" : fmt::format("it says: {}", lines.front());
    throw ParseError(kIperf3Tool, 0,
                     fmt::format("no JSON result found (was iperf3 run with -J?); {}", said));
  }
  std::vector<std::string> notes = text_lines(text.substr(0, begin));
  std::size_t end = object_end(text, begin);
  if (end == std::string_view::npos) {
    throw ParseError(kIperf3Tool, line_of_offset(text, begin),
                     "the JSON result is cut short (no closing brace)");
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(replace_non_finite(text.substr(begin, end - begin)));
  } catch (const nlohmann::json::parse_error& e) {
    throw ParseError(kIperf3Tool, line_of_offset(text, begin),
                     fmt::format("the JSON result is not valid: {}", e.what()));
  }
  if (doc.contains("event")) {
    std::vector<std::pair<int, nlohmann::json>> events;
    std::size_t pos = begin;
    while (pos < text.size()) {
      std::size_t object_begin = text.find('{', pos);
      if (object_begin == std::string_view::npos) {
        break;
      }
      std::size_t object_finish = object_end(text, object_begin);
      if (object_finish == std::string_view::npos) {
        break;
      }
      try {
        events.emplace_back(line_of_offset(text, object_begin),
                            nlohmann::json::parse(replace_non_finite(
                                text.substr(object_begin, object_finish - object_begin))));
      } catch (const nlohmann::json::parse_error&) {
        throw ParseError(kIperf3Tool, line_of_offset(text, object_begin),
                         "a --json-stream event is not valid JSON");
      }
      pos = object_finish;
    }
    return from_stream(text, events);
  }
  for (auto& line : text_lines(text.substr(end))) {
    notes.push_back(std::move(line));
  }
  return from_document(doc, std::move(notes), line_of_offset(text, begin));
}

ParsedFile parse_iperf3_file(std::string_view text) {
  try {
    return ParsedFile{parse_iperf3(text).to_json(), ""};
  } catch (const ParseError& e) {
    return ParsedFile{nlohmann::json::object(), e.what()};
  }
}

}  // namespace ernic
