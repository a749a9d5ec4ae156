#include "perf/duration_mode.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace ernic::emu::perf {
namespace {

// How often a busy client makes sure the server is still there.
constexpr std::chrono::seconds kPeerCheck{1};

// A line the peer sent, if one has arrived; a peer whose connection closed is lost.
std::optional<std::string> line_from(OobChannel& oob, const char* peer) {
  try {
    return oob.try_receive_line();
  } catch (const std::exception&) {
    throw std::runtime_error(fmt::format(
        "Lost the {} during the duration run: its out-of-band connection closed", peer));
  }
}

// Asked while the client waits: fails with a clear message when the server went away (its
// out-of-band connection closed) or reported a failure; never asks the wait to stop.
StopRequested watch_server(OobChannel& oob) {
  return [&oob] {
    if (const auto line = line_from(oob, "server")) {
      throw std::runtime_error("server failed during the duration run: " +
                               (line->starts_with("FAIL ") ? line->substr(5) : *line));
    }
    return false;
  };
}

// The next completion; when it fails (an error completion, a timeout) because the server went
// away, says so.
Device::Completion next_or_lost(Endpoint& e, const PerfOptions& o, const StopRequested& watch) {
  try {
    return *e.next(o.timeout_seconds, "client", watch);
  } catch (const std::exception&) {
    watch();
    throw;
  }
}

std::uint64_t parse_end(const std::string& line) {
  std::uint64_t count = 0;
  if (std::sscanf(line.c_str(), "END %lu", &count) != 1) {
    throw std::runtime_error("unexpected message from the client during the duration run: " + line);
  }
  return count;
}

// Asked while the server waits: true once the client's END has arrived (its count in `end`).
StopRequested watch_for_end(OobChannel& oob, std::optional<std::uint64_t>& end) {
  return [&oob, &end] {
    if (end) {
      return true;
    }
    if (const auto line = line_from(oob, "client")) {
      end = parse_end(*line);
    }
    return end.has_value();
  };
}

// The client's END comes after the duration; the server gives it that long plus its timeout.
std::uint64_t wait_for_end(OobChannel& oob, const PerfOptions& s) {
  return parse_end(oob.receive_line(std::chrono::seconds(s.duration_seconds + s.timeout_seconds)));
}

}  // namespace

MeasureWindow::MeasureWindow(int duration_seconds, SteadyClock::time_point begin)
    : start(begin),
      sample_start(begin + std::chrono::seconds(duration_seconds / 4)),
      sample_end(begin + std::chrono::seconds(duration_seconds - duration_seconds / 4)),
      end(begin + std::chrono::seconds(duration_seconds)) {}

bool MeasureWindow::measures(SteadyClock::time_point t) const {
  return t >= sample_start && t < sample_end;
}

std::size_t MeasureWindow::second_of(SteadyClock::time_point t) const {
  const auto second = std::chrono::duration_cast<std::chrono::seconds>(t - sample_start).count();
  return std::min<std::size_t>(static_cast<std::size_t>(std::max<long>(second, 0)),
                               static_cast<std::size_t>(measured_seconds() - 1));
}

int MeasureWindow::measured_seconds() const {
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(sample_end - sample_start).count());
}

SizeResult client_bandwidth_for_duration(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                                         OobChannel& oob) {
  const std::uint32_t nqp = o.qps;
  // With --verify a slot is never reused while a message from it may still be in flight.
  const std::uint64_t depth = e.layout.send_depth;
  std::vector<std::uint64_t> posted(nqp, 0), completed(nqp, 0);
  const StopRequested watch = watch_server(oob);
  const MeasureWindow window(o.duration_seconds, SteadyClock::now());
  SizeResult r;
  r.per_second.assign(static_cast<std::size_t>(window.measured_seconds()), 0);
  std::uint64_t in_flight = 0;
  std::uint64_t measured = 0;
  auto next_check = window.start + kPeerCheck;
  while (true) {
    const auto now = SteadyClock::now();
    if (now < window.end) {
      for (std::uint32_t q = 0; q < nqp; ++q) {
        for (; posted[q] - completed[q] < depth; ++posted[q], ++in_flight) {
          post_message(e, o, q, posted[q], size);
        }
      }
    } else if (in_flight == 0) {
      break;
    }
    if (now >= next_check) {
      watch();
      next_check = now + kPeerCheck;
    }
    const Device::Completion c = next_or_lost(e, o, watch);
    const std::uint32_t q = wr_qp(c.wr_id);
    if (o.verify && o.verb == Verb::kRead) {
      // The server filled slot i with message i's pattern once; reads land in our slot.
      const std::uint64_t seq = wr_seq(c.wr_id);
      check(e.slot(q, seq), size, seq % e.layout.slots, q, "READ data");
    }
    ++completed[q];
    --in_flight;
    ++r.exchanged;
    // When the instance completed it, as in iteration mode: not when this process got to it.
    if (window.measures(c.completed_at)) {
      ++measured;
      ++r.per_second[window.second_of(c.completed_at)];
    }
  }
  const double seconds = window.measured_seconds();
  r.bw.bytes = size;
  r.bw.iterations = measured;
  r.bw.average_bytes_per_second = static_cast<double>(measured * size) / seconds;
  r.bw.message_rate = static_cast<double>(measured) / seconds;
  r.bw.peak_bytes_per_second = 0;  // perftest does not measure the peak in duration mode
  return r;
}

SizeResult client_latency_for_duration(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                                       OobChannel& oob) {
  PingPong ping_pong(e, o, size, true);
  const StopRequested watch = watch_server(oob);
  const MeasureWindow window(o.duration_seconds, SteadyClock::now());
  SizeResult r;
  for (; SteadyClock::now() < window.end; ++r.exchanged) {
    const auto began = SteadyClock::now();
    double usec = 0;
    try {
      usec = *ping_pong.exchange(r.exchanged, watch);
    } catch (const std::exception&) {
      watch();  // a server that went away explains the failure best
      throw;
    }
    if (window.measures(began)) {
      r.samples.push_back(usec);
    }
  }
  r.lat = summarize_latency(size, r.samples);
  r.lat.transactions_per_second = static_cast<double>(r.samples.size()) / window.measured_seconds();
  return r;
}

void send_end(OobChannel& oob, const SizeResult& r) {
  oob.send_line(fmt::format("END {}", r.exchanged));
}

void server_bandwidth_until_end(Endpoint& e, const PerfOptions& s, std::uint64_t size,
                                std::vector<std::uint64_t>& next_recv, OobChannel& oob) {
  if (!server_receives(s)) {
    wait_for_end(oob, s);  // WRITE and READ: the server's side is passive
    return;
  }
  std::optional<std::uint64_t> end;
  const StopRequested told = watch_for_end(oob, end);
  std::uint64_t received = 0;
  while (!end || received < *end) {
    // Once the count is known, every message it names must still arrive (or time out).
    const auto c =
        end ? e.next(s.timeout_seconds, "server") : e.next(s.timeout_seconds, "server", told);
    if (c) {
      take_receive(e, s, size, *c, next_recv);
      ++received;
    }
  }
}

void server_latency_until_end(Endpoint& e, const PerfOptions& s, std::uint64_t size,
                              OobChannel& oob) {
  if (s.verb == Verb::kRead) {
    wait_for_end(oob, s);  // the passive side of READ does nothing
    return;
  }
  std::optional<std::uint64_t> end;
  const StopRequested told = watch_for_end(oob, end);
  PingPong ping_pong(e, s, size, false);
  std::uint64_t answered = 0;
  while (ping_pong.exchange(answered, told)) {
    ++answered;
  }
  if (*end != answered) {
    throw std::runtime_error(
        fmt::format("the client counted {} exchanges, the server answered {}", *end, answered));
  }
}

}  // namespace ernic::emu::perf
