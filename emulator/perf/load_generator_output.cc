#include "perf/load_generator_output.h"

#include <ostream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "base/durable_file.h"
#include "runtime/scheduling.h"

namespace ernic::emu::perf {
namespace {

const char* verb_name(Verb v) {
  return v == Verb::kSend ? "send" : v == Verb::kWrite ? "write" : "read";
}

nlohmann::json count_or_null(std::optional<std::uint64_t> count) {
  return count ? nlohmann::json(*count) : nlohmann::json(nullptr);
}

}  // namespace

std::string encode_result(const SizeResult& r, Mode mode) {
  if (mode == Mode::kBandwidth) {
    return fmt::format("RESULT {} {} {:.6f} {:.6f} {:.6f}", r.bw.bytes, r.bw.iterations,
                       r.bw.peak_bytes_per_second, r.bw.average_bytes_per_second,
                       r.bw.message_rate);
  }
  return fmt::format("RESULT {} {} {:.3f} {:.3f} {:.3f} {:.3f} {:.3f} {:.3f} {:.3f} {:.3f}",
                     r.lat.bytes, r.lat.iterations, r.lat.min, r.lat.max, r.lat.typical,
                     r.lat.average, r.lat.stdev, r.lat.p99, r.lat.p999,
                     r.lat.transactions_per_second);
}

SizeResult decode_result(const std::string& line, Mode mode) {
  SizeResult r;
  std::istringstream in(line);
  std::string tag;
  in >> tag;
  if (tag != "RESULT") {
    throw std::runtime_error("peer failed: " + line);
  }
  if (mode == Mode::kBandwidth) {
    in >> r.bw.bytes >> r.bw.iterations >> r.bw.peak_bytes_per_second >>
        r.bw.average_bytes_per_second >> r.bw.message_rate;
  } else {
    in >> r.lat.bytes >> r.lat.iterations >> r.lat.min >> r.lat.max >> r.lat.typical >>
        r.lat.average >> r.lat.stdev >> r.lat.p99 >> r.lat.p999 >> r.lat.transactions_per_second;
  }
  return r;
}

std::string table_header(const PerfOptions& o) {
  if (o.mode == Mode::kBandwidth) {
    return bw_header(o.report_gbits);
  }
  return o.duration_seconds > 0 ? lat_duration_header() : lat_header();
}

void print_row(std::ostream& out, const SizeResult& r, const PerfOptions& o) {
  if (o.mode == Mode::kBandwidth) {
    if (o.report_per_second) {
      // perftest's periodic rows (--run_infinitely): the table's own layout, no peak.
      for (std::uint64_t messages : r.per_second) {
        BwResult second;
        second.bytes = r.bw.bytes;
        second.iterations = messages;
        second.average_bytes_per_second = static_cast<double>(messages * r.bw.bytes);
        second.message_rate = static_cast<double>(messages);
        out << bw_row(second, o.report_gbits);
      }
    }
    out << bw_row(r.bw, o.report_gbits);
  } else {
    if (o.report_histogram && !r.samples.empty()) {
      out << histogram_lines(r.samples) << dashes() << table_header(o);
    }
    out << (o.duration_seconds > 0 ? lat_duration_row(r.lat) : lat_row(r.lat));
  }
  out.flush();
}

nlohmann::json json_of(const SizeResult& r, const PerfOptions& o) {
  nlohmann::json j;
  if (o.mode == Mode::kBandwidth) {
    j = {{"bytes", r.bw.bytes},
         {"iterations", r.bw.iterations},
         {"bw_peak_bytes_per_second", r.bw.peak_bytes_per_second},
         {"bw_average_bytes_per_second", r.bw.average_bytes_per_second},
         {"msg_rate_mpps", r.bw.message_rate / 1e6}};
    if (!r.samples.empty()) {
      j["completion_times_usec"] = r.samples;
      j["post_times_usec"] = r.post_times;
    }
    if (!r.per_second.empty()) {
      j["messages_per_second"] = r.per_second;
    }
  } else {
    j = {{"bytes", r.lat.bytes},
         {"iterations", r.lat.iterations},
         {"t_min_usec", r.lat.min},
         {"t_max_usec", r.lat.max},
         {"t_typical_usec", r.lat.typical},
         {"t_avg_usec", r.lat.average},
         {"t_stdev_usec", r.lat.stdev},
         {"p99_usec", r.lat.p99},
         {"p999_usec", r.lat.p999}};
    if (o.duration_seconds > 0) {
      j["transactions_per_second"] = r.lat.transactions_per_second;
    }
    if (!r.samples.empty()) {
      j["latency_usec"] = r.samples;
    }
  }
  j["cpu"] = {{"wall_seconds", r.cpu.wall_seconds},
              {"load_generator_percent", r.cpu.load_generator_percent},
              {"instance_percent", r.cpu.instance_percent},
              {"load_generator_context_switches", count_or_null(r.cpu.load_generator_switches)},
              {"instance_context_switches", count_or_null(r.cpu.instance_switches)}};
  return j;
}

void write_json(const PerfOptions& o, const nlohmann::json& results, bool server,
                double time_to_rts_ms) {
  if (o.json.empty()) {
    return;
  }
  nlohmann::json doc = {{"tool", "ernicctl perf"},
                        {"test", test_title(o.verb, o.mode)},
                        {"verb", verb_name(o.verb)},
                        {"mode", o.mode == Mode::kBandwidth ? "bw" : "lat"},
                        {"role", server ? "server" : "client"},
                        {"qps", o.qps},
                        {"tx_depth", o.tx_depth},
                        {"verify", o.verify},
                        {"duration_seconds", o.duration_seconds},
                        {"time_to_first_rts_ms", time_to_rts_ms},
                        // The scheduler's slice this side ran with: part of the methodology.
                        {"scheduler_slice_usec", time_slice().count()},
                        {"scheduler_policy", scheduling_policy_name()},
                        {"results", results}};
  write_file_durably(o.json, doc.dump(2) + "\n");
}

std::string header_line(const PerfOptions& o) {
  std::string sizes;
  for (auto s : o.sizes) {
    sizes += (sizes.empty() ? "" : ",") + std::to_string(s);
  }
  return fmt::format("ERNICPERF1 {} {} {} {} {} {} {} {}", static_cast<int>(o.verb),
                     static_cast<int>(o.mode), o.iterations, o.tx_depth, o.qps, o.verify ? 1 : 0,
                     sizes, o.duration_seconds);
}

PerfOptions accept_test(OobChannel& oob, const PerfOptions& o) {
  PerfOptions s = o;
  std::istringstream in(oob.receive_line());
  std::string tag, sizes;
  int verb = 0, mode = 0, verify = 0;
  in >> tag >> verb >> mode >> s.iterations >> s.tx_depth >> s.qps >> verify >> sizes >>
      s.duration_seconds;
  if (tag != "ERNICPERF1" || verb != static_cast<int>(o.verb) || mode != static_cast<int>(o.mode)) {
    oob.send_line("ERR the client runs a different test");
    throw std::runtime_error("the client runs a different test than " + test_title(o.verb, o.mode));
  }
  s.verify = verify != 0;
  s.sizes.clear();
  std::istringstream list(sizes);
  std::string item;
  while (std::getline(list, item, ',')) {
    s.sizes.push_back(std::stoull(item));
  }
  if (s.sizes.empty() || s.qps == 0 || s.qps > 64 || s.duration_seconds < 0) {
    oob.send_line("ERR bad test parameters");
    throw std::runtime_error("bad test parameters from the client");
  }
  return s;
}

}  // namespace ernic::emu::perf
