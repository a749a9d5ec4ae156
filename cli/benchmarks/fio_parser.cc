#include "benchmarks/fio_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "benchmarks/tool_text.h"

namespace ernic {
namespace {

using tool_text::line_of_offset;
using tool_text::printable;
using tool_text::trim;

constexpr std::string_view kFioTool = "fio";

using Json = nlohmann::json;

void add_note_lines(std::string_view text, int first_line, std::vector<std::string>& notes) {
  int number = first_line;
  while (!text.empty()) {
    auto end = text.find('\n');
    std::string_view line = trim(text.substr(0, end));
    if (!line.empty()) {
      notes.push_back(fmt::format("line {}: {}", number, printable(line)));
    }
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++number;
  }
}

std::optional<double> number_at(const Json& object, const char* key) {
  if (!object.is_object()) {
    return std::nullopt;
  }
  auto found = object.find(key);
  if (found == object.end() || !found->is_number()) {
    return std::nullopt;
  }
  double value = found->get<double>();
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

std::string string_at(const Json& object, const char* key) {
  if (!object.is_object()) {
    return "";
  }
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

std::uint64_t count_at(const Json& object, const char* key) {
  double value = number_at(object, key).value_or(0);
  return value > 0 && value < 1.8e19 ? static_cast<std::uint64_t>(value) : 0;
}

// `object[ns_key]` in nanoseconds (fio 3), else `object[us_key]` in microseconds (fio 2).
FioLatency read_latency(const Json& direction, const char* ns_key, const char* us_key) {
  FioLatency latency;
  const Json* source = nullptr;
  double to_us = 1;
  if (direction.contains(ns_key) && direction[ns_key].is_object()) {
    source = &direction[ns_key];
    to_us = 1e-3;
  } else if (direction.contains(us_key) && direction[us_key].is_object()) {
    source = &direction[us_key];
  }
  if (source == nullptr) {
    return latency;
  }
  if (auto mean = number_at(*source, "mean")) {
    latency.mean_us = *mean * to_us;
  }
  if (auto found = source->find("percentile"); found != source->end() && found->is_object()) {
    for (const auto& [key, value] : found->items()) {
      char* end = nullptr;
      double percentile = std::strtod(key.c_str(), &end);
      if (end == key.c_str() || *end != '\0' || !(percentile > 0) || percentile > 100 ||
          !value.is_number()) {
        continue;
      }
      latency.percentiles_us[percentile] = value.get<double>() * to_us;
    }
  }
  return latency;
}

FioDirection read_direction(const Json& job, const char* name, bool& seen) {
  FioDirection direction;
  auto found = job.find(name);
  if (found == job.end() || !found->is_object()) {
    return direction;
  }
  seen = true;
  const Json& data = *found;
  direction.iops = number_at(data, "iops").value_or(0);
  if (auto bw_bytes = number_at(data, "bw_bytes")) {
    direction.bw_bytes_per_second = *bw_bytes;
  } else {
    direction.bw_bytes_per_second = number_at(data, "bw").value_or(0) * 1024;  // KiB/s
  }
  direction.io_bytes = count_at(data, "io_bytes");
  direction.total_ios = count_at(data, "total_ios");
  direction.runtime_ms = number_at(data, "runtime").value_or(0);
  direction.clat = read_latency(data, "clat_ns", "clat");
  direction.lat = read_latency(data, "lat_ns", "lat");
  return direction;
}

Json latency_json(const FioLatency& latency) {
  Json percentiles = Json::object();
  for (const auto& [p, value] : latency.percentiles_us) {
    percentiles[fmt::format("{:g}", p)] = value;
  }
  Json result = {{"percentiles_us", percentiles}};
  result["mean_us"] = latency.mean_us ? Json(*latency.mean_us) : Json(nullptr);
  return result;
}

Json direction_json(const FioDirection& direction) {
  return {{"iops", direction.iops},
          {"bw_bytes", direction.bw_bytes_per_second},
          {"io_bytes", direction.io_bytes},
          {"total_ios", direction.total_ios},
          {"runtime_ms", direction.runtime_ms},
          {"clat", latency_json(direction.clat)},
          {"lat", latency_json(direction.lat)}};
}

// Where the next JSON object starts: the first line from `from` on that starts with '{'.
std::size_t find_json_start(std::string_view text, std::size_t from) {
  for (std::size_t at = from; at < text.size();) {
    std::size_t end = text.find('\n', at);
    std::string_view line =
        text.substr(at, end == std::string_view::npos ? text.size() - at : end - at);
    if (trim(line).starts_with("{")) {
      return at + line.find('{');
    }
    if (end == std::string_view::npos) {
      break;
    }
    at = end + 1;
  }
  return std::string_view::npos;
}

// The cumulative progress in one report: bytes moved in every job and direction, and the longest
// run time among them.
FioProgress progress_of(const Json& document) {
  FioProgress progress;
  auto jobs = document.find("jobs");
  if (jobs == document.end() || !jobs->is_array()) {
    return progress;
  }
  for (const Json& job : *jobs) {
    for (const char* name : {"read", "write", "trim"}) {
      bool seen = false;
      FioDirection direction = read_direction(job, name, seen);
      progress.io_bytes += direction.io_bytes;
      progress.runtime_ms = std::max(progress.runtime_ms, direction.runtime_ms);
    }
  }
  return progress;
}

}  // namespace

std::optional<double> FioLatency::percentile(double p) const {
  for (const auto& [key, value] : percentiles_us) {
    if (std::fabs(key - p) < 1e-6) {
      return value;
    }
  }
  return std::nullopt;
}

FioOutput parse_fio_output(std::string_view text) {
  FioOutput output;
  // The JSON starts at the first line that starts with '{'; lines before it are notes.
  std::size_t start = find_json_start(text, 0);
  add_note_lines(text.substr(0, start == std::string_view::npos ? text.size() : start), 1,
                 output.notes);
  if (start == std::string_view::npos) {
    output.error = "no JSON object found (was fio run with --output-format=json?)";
    if (!output.notes.empty()) {
      output.error += "; it printed: " + output.notes.front();
    }
    return output;
  }

  // With --status-interval fio prints a whole report every interval, then its final one: each
  // is cumulative, the last is the result.
  std::string json_text(text.substr(start));
  std::istringstream stream(json_text);
  Json document;
  std::size_t after = start;
  while (true) {
    std::size_t begins = start + static_cast<std::size_t>(std::max<std::streamoff>(
                                     0, static_cast<std::streamoff>(stream.tellg())));
    try {
      // operator>> reads one JSON value and leaves what follows it ("fio: ..." lines).
      stream >> document;
    } catch (const Json::parse_error& e) {
      std::size_t offset = begins + (e.byte > 0 ? e.byte - 1 : 0);
      output.error_line = line_of_offset(text, offset);
      output.error = fmt::format("line {}: fio's JSON is not valid: {}", output.error_line,
                                 printable(e.what()));
      return output;
    } catch (const std::exception& e) {
      output.error = fmt::format("fio's JSON could not be read: {}", printable(e.what()));
      return output;
    }
    std::streamoff consumed = stream.tellg();
    after = consumed > 0 ? start + static_cast<std::size_t>(consumed) : text.size();
    if (document.is_object()) {
      output.progress.push_back(progress_of(document));
    }
    std::size_t next = after < text.size() ? text.find_first_not_of(" \t\r\n", after) : after;
    if (next == std::string_view::npos || next >= text.size() || text[next] != '{') {
      break;
    }
    stream.seekg(static_cast<std::streamoff>(next - start));
  }
  if (after < text.size()) {
    add_note_lines(text.substr(after), line_of_offset(text, after), output.notes);
  }

  output.version = string_at(document, "fio version");
  auto jobs = document.is_object() ? document.find("jobs") : document.end();
  if (!document.is_object() || jobs == document.end() || !jobs->is_array()) {
    output.error = "fio's JSON has no \"jobs\" array";
    output.error_line = line_of_offset(text, start);
    return output;
  }
  const Json empty = Json::object();
  const Json& global = document.contains("global options") ? document["global options"] : empty;
  for (const Json& job : *jobs) {
    if (!job.is_object()) {
      continue;
    }
    FioJob parsed;
    parsed.name = string_at(job, "jobname");
    parsed.error = static_cast<int>(number_at(job, "error").value_or(0));
    const Json& options = job.contains("job options") ? job["job options"] : empty;
    parsed.rw = string_at(options, "rw");
    if (parsed.rw.empty()) {
      parsed.rw = string_at(global, "rw");
    }
    parsed.bs = string_at(options, "bs");
    if (parsed.bs.empty()) {
      parsed.bs = string_at(global, "bs");
    }
    bool has_direction = false;
    parsed.read = read_direction(job, "read", has_direction);
    parsed.write = read_direction(job, "write", has_direction);
    parsed.trim = read_direction(job, "trim", has_direction);
    if (!has_direction) {
      output.error =
          fmt::format("fio job '{}' has no read, write or trim section", printable(parsed.name));
      return output;
    }
    output.jobs.push_back(std::move(parsed));
  }
  if (output.jobs.empty()) {
    output.error = "fio's JSON has no jobs";
    return output;
  }
  for (const FioJob& job : output.jobs) {
    if (job.error != 0) {
      output.error = fmt::format("fio job '{}' failed with error {} ({})", printable(job.name),
                                 job.error, std::strerror(job.error));
      return output;
    }
  }
  return output;
}

std::map<std::string, double> fio_metrics(const FioOutput& output) {
  double read_iops = 0;
  double write_iops = 0;
  double trim_iops = 0;
  double read_bw = 0;
  double write_bw = 0;
  double trim_bw = 0;
  double weighted_clat = 0;
  double weight = 0;
  std::map<std::string, double> worst;
  for (const FioJob& job : output.jobs) {
    read_iops += job.read.iops;
    write_iops += job.write.iops;
    trim_iops += job.trim.iops;
    read_bw += job.read.bw_bytes_per_second;
    write_bw += job.write.bw_bytes_per_second;
    trim_bw += job.trim.bw_bytes_per_second;
    for (const FioDirection* direction : {&job.read, &job.write, &job.trim}) {
      if (!direction->active()) {
        continue;
      }
      double ios =
          direction->total_ios > 0 ? static_cast<double>(direction->total_ios) : direction->iops;
      if (direction->clat.mean_us) {
        weighted_clat += *direction->clat.mean_us * ios;
        weight += ios;
      }
      for (auto [name, p] : {std::pair{"clat_p50_us", 50.0}, std::pair{"clat_p99_us", 99.0},
                             std::pair{"clat_p999_us", 99.9}}) {
        if (auto value = direction->clat.percentile(p)) {
          worst[name] = std::max(worst.count(name) ? worst[name] : 0.0, *value);
        }
      }
    }
  }
  double iops = read_iops + write_iops + trim_iops;
  std::map<std::string, double> metrics = {{"iops", iops},
                                           {"iops_M", iops / 1e6},
                                           {"bw_avg_GBs", (read_bw + write_bw + trim_bw) / 1e9},
                                           {"read_iops", read_iops},
                                           {"write_iops", write_iops},
                                           {"read_bw_GBs", read_bw / 1e9},
                                           {"write_bw_GBs", write_bw / 1e9}};
  if (weight > 0) {
    metrics["clat_mean_us"] = weighted_clat / weight;
  }
  metrics.insert(worst.begin(), worst.end());
  return metrics;
}

std::vector<double> fio_interval_rates(const FioOutput& output, double interval_ms) {
  std::vector<double> rates;
  FioProgress previous;
  for (const FioProgress& report : output.progress) {
    double elapsed_ms = report.runtime_ms - previous.runtime_ms;
    if (elapsed_ms >= interval_ms / 2 && elapsed_ms <= interval_ms * 1.5 &&
        report.io_bytes >= previous.io_bytes) {
      rates.push_back(static_cast<double>(report.io_bytes - previous.io_bytes) /
                      (elapsed_ms / 1000));
    }
    previous = report;
  }
  return rates;
}

nlohmann::json fio_output_to_json(const FioOutput& output) {
  Json jobs = Json::array();
  for (const FioJob& job : output.jobs) {
    jobs.push_back({{"name", job.name},
                    {"error", job.error},
                    {"rw", job.rw},
                    {"bs", job.bs},
                    {"read", direction_json(job.read)},
                    {"write", direction_json(job.write)},
                    {"trim", direction_json(job.trim)}});
  }
  Json progress = Json::array();
  for (const FioProgress& report : output.progress) {
    progress.push_back({{"runtime_ms", report.runtime_ms}, {"io_bytes", report.io_bytes}});
  }
  Json data = {{"tool", kFioTool},
               {"version", output.version},
               {"jobs", jobs},
               {"notes", output.notes},
               {"progress", progress}};
  if (!output.jobs.empty()) {
    data["metrics"] = fio_metrics(output);
  }
  if (!output.error.empty()) {
    data["error"] = output.error;
    data["error_line"] = output.error_line;
  }
  return data;
}

ParsedFile parse_fio_file(std::string_view text) {
  FioOutput output = parse_fio_output(text);
  ParsedFile file;
  file.data = fio_output_to_json(output);
  if (!output.error.empty()) {
    file.error = fmt::format("{}: {}", kFioTool, output.error);
  }
  return file;
}

OutputParser fio_output_parser() {
  return {std::string(kFioTool), "fio --output-format=json output (fio 2.x and 3.x)",
          &parse_fio_file};
}

}  // namespace ernic
