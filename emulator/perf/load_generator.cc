#include "perf/load_generator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "frontend/shm_client.h"
#include "perf/cpu_usage.h"
#include "perf/duration_mode.h"
#include "perf/endpoint.h"
#include "perf/load_generator_output.h"
#include "perf/oob_channel.h"
#include "runtime/in_loop_device.h"

namespace ernic::emu::perf {
namespace {

// Rung 2 is measured from here: static initialisation, before main() and before the command
// line is read (the dynamic loader's work before it is not counted).
const SteadyClock::time_point g_process_start = SteadyClock::now();

double milliseconds_to_rts(const Endpoint& e) {
  return e.first_rts
             ? std::chrono::duration<double, std::milli>(*e.first_rts - g_process_start).count()
             : 0.0;
}

SizeResult client_bandwidth(Endpoint& e, const PerfOptions& o, std::uint64_t size) {
  const std::uint32_t nqp = o.qps;
  // With --verify a slot is never reused while a message from it may still be in flight.
  const std::uint64_t depth = e.layout.send_depth;
  std::vector<std::uint64_t> posted(nqp, 0), completed(nqp, 0);
  const std::uint64_t total = o.iterations * nqp;
  std::uint64_t done = 0;
  std::vector<double> stamps;  // completion times
  stamps.reserve(total);
  std::vector<std::vector<double>> post_times(nqp, std::vector<double>(o.iterations));
  std::vector<double> posted_of_completed;  // in completion order, for the peak
  posted_of_completed.reserve(total);
  const auto start = SteadyClock::now();
  while (done < total) {
    for (std::uint32_t q = 0; q < nqp; ++q) {
      for (; posted[q] < o.iterations && posted[q] - completed[q] < depth; ++posted[q]) {
        post_times[q][posted[q]] = usec_between(start, SteadyClock::now());
        post_message(e, o, q, posted[q], size);
      }
    }
    const Device::Completion c = *e.next(o.timeout_seconds, "client");
    const std::uint32_t q = wr_qp(c.wr_id);
    if (o.verify && o.verb == Verb::kRead) {
      // The server filled slot i with message i's pattern once; reads land in our slot.
      const std::uint64_t seq = wr_seq(c.wr_id);
      check(e.slot(q, seq), size, seq % e.layout.slots, q, "READ data");
    }
    ++completed[q];
    ++done;
    // When the instance completed it, not when this process got to it: a client descheduled
    // for a while would otherwise see a burst of completions and a peak that never was.
    stamps.push_back(usec_between(start, std::max(c.completed_at, start)));
    posted_of_completed.push_back(post_times[q][wr_seq(c.wr_id)]);
  }
  const double seconds = stamps.back() / 1e6;
  SizeResult r;
  r.bw.bytes = size;
  r.bw.iterations = o.iterations;
  r.bw.average_bytes_per_second = static_cast<double>(size * total) / seconds;
  r.bw.message_rate = static_cast<double>(total) / seconds;
  // Windows of at least the messages all QPs keep in flight.
  r.bw.peak_bytes_per_second =
      std::max(r.bw.average_bytes_per_second,
               peak_bytes_per_second(posted_of_completed, stamps, size, depth * nqp));
  r.samples = std::move(stamps);
  r.post_times = std::move(posted_of_completed);
  return r;
}

void server_prepare(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                    std::vector<std::uint64_t>& next_recv) {
  next_recv.assign(o.qps, 0);
  if (o.verb == Verb::kRead && o.mode == Mode::kLatency && o.verify) {
    fill(e.slot(0, 0), size, 0, 0);
  }
  if (o.verb == Verb::kRead && o.mode == Mode::kBandwidth && o.verify) {
    for (std::uint32_t q = 0; q < o.qps; ++q) {
      for (std::uint32_t s = 0; s < e.layout.slots; ++s) {
        fill(e.slot(q, s), size, s, q);
      }
    }
  }
  if (!server_receives(o)) {
    return;
  }
  // Without --verify every receive uses the one slot (as in perftest); with it each outstanding
  // receive owns a slot, and the sender never has more in flight than there are slots.
  for (std::uint32_t q = 0; q < o.qps; ++q) {
    for (; next_recv[q] < e.layout.receive_depth; ++next_recv[q]) {
      e.post_recv_slot(q, wr_id(q, next_recv[q]), next_recv[q]);
    }
  }
}

void server_bandwidth(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                      std::vector<std::uint64_t>& next_recv) {
  if (!server_receives(o)) {
    return;
  }
  for (std::uint64_t received = 0; received < o.iterations * o.qps; ++received) {
    take_receive(e, o, size, *e.next(o.timeout_seconds, "server"), next_recv);
  }
}

// Iteration mode's ping-pong; `client` measures.
SizeResult latency(Endpoint& e, const PerfOptions& o, std::uint64_t size, bool client) {
  SizeResult r;
  if (o.verb == Verb::kRead && !client) {
    return r;  // the passive side of READ does nothing
  }
  PingPong ping_pong(e, o, size, client);
  for (std::uint64_t i = 0; i < o.iterations; ++i) {
    r.samples.push_back(*ping_pong.exchange(i));
  }
  return r;
}

// One size as the client measures it, in either mode.
SizeResult client_measure(Endpoint& e, const PerfOptions& o, std::uint64_t size, OobChannel& oob) {
  const bool duration = o.duration_seconds > 0;
  if (o.mode == Mode::kBandwidth) {
    return duration ? client_bandwidth_for_duration(e, o, size, oob) : client_bandwidth(e, o, size);
  }
  if (duration) {
    return client_latency_for_duration(e, o, size, oob);
  }
  SizeResult r = latency(e, o, size, true);
  r.lat = summarize_latency(size, r.samples);
  return r;
}

// One size as the server serves it, in either mode.
void server_serve(Endpoint& e, const PerfOptions& s, std::uint64_t size,
                  std::vector<std::uint64_t>& next_recv, OobChannel& oob) {
  const bool duration = s.duration_seconds > 0;
  if (s.mode == Mode::kBandwidth) {
    if (duration) {
      server_bandwidth_until_end(e, s, size, next_recv, oob);
    } else {
      server_bandwidth(e, s, size, next_recv);
    }
  } else if (duration) {
    server_latency_until_end(e, s, size, oob);
  } else {
    latency(e, s, size, false);
  }
}

// The instance the test runs on: attached to through its socket, or run in this process.
std::unique_ptr<Device> open_device(const PerfOptions& o) {
  if (o.in_loop) {
    InstanceConfig config = *o.in_loop;
    config.spin = spin_window();
    return std::make_unique<InLoopDevice>(config, std::chrono::seconds(o.timeout_seconds));
  }
  return std::make_unique<ShmClient>(o.socket);
}

// An instance in this process must keep running while the generator waits for its peer.
OobChannel::Waiter through(Device& device) {
  return [&device](int fd, std::chrono::steady_clock::time_point deadline) {
    return device.wait_readable(fd, deadline);
  };
}

void print_connection(std::ostream& out, Endpoint& e, const PerfOptions& o) {
  const bool rdma = o.verb != Verb::kSend;
  for (std::size_t i = 0; i < e.qps.size(); ++i) {
    out << address_line(true, e.qps[i].qpn, e.qps[i].keys.rkey,
                        reinterpret_cast<std::uint64_t>(e.qps[i].memory.data), rdma)
        << gid_line(e.client.gids().front())
        << address_line(false, e.remote[i].qpn, e.remote[i].rkey, e.remote[i].vaddr, rdma)
        << gid_line(e.remote_gid);
  }
  out << dashes() << table_header(o);
  out.flush();
}

// Tells the client why this server gives up, if the client still listens.
void tell_failure(OobChannel& oob, const std::string& failure) {
  try {
    oob.send_line("FAIL " + failure);
  } catch (const std::exception&) {
    // The client is gone too; the server's own error says why it stopped.
  }
}

// The closing dashed line, then rung 2 (outside the table, so perftest parsers skip it).
void finish_table(std::ostream& out, const Endpoint& e) {
  out << dashes() << time_to_rts_line(milliseconds_to_rts(e));
  out.flush();
}

int run_client(const PerfOptions& o, std::ostream& out) {
  // The instance first, as perftest opens its device before it dials: a wrong socket is
  // reported at once, not after the server answered.
  const std::unique_ptr<Device> opened = open_device(o);
  Device& device = *opened;
  OobChannel oob = OobChannel::connect(o.server, o.port, through(device));
  oob.send_line(header_line(o));
  const std::string reply = oob.receive_line();
  if (!reply.starts_with("OK ")) {
    throw std::runtime_error("server refused the test: " + reply);
  }
  Endpoint e(device, o, *std::max_element(o.sizes.begin(), o.sizes.end()));
  e.connect(reply.substr(3));
  oob.send_line("QPS " + e.describe());
  if (oob.receive_line() != "READY") {
    throw std::runtime_error("server failed to connect its QPs");
  }
  out << banner(o.verb, o.mode, false, o.qps, o.tx_depth);
  print_connection(out, e, o);
  nlohmann::json results = nlohmann::json::array();
  if (o.mode == Mode::kLatency && o.verb == Verb::kSend) {
    e.post_recv_slot(0, 1000000, 1);  // each ping answered re-posts one
  }
  for (std::uint64_t size : o.sizes) {
    if (o.mode == Mode::kLatency) {
      std::memset(e.slot(0, 1), 0, e.layout.slot_size);  // no marker of the previous size may match
    }
    oob.send_line(fmt::format("SIZE {}", size));
    const std::string go = oob.receive_line();
    if (go != "GO") {
      throw std::runtime_error("server failed: " + go);
    }
    const CpuMeter meter(device.instance_pid());
    SizeResult r = client_measure(e, o, size, oob);
    r.cpu = meter.stop();
    if (o.duration_seconds > 0) {
      send_end(oob, r);
    }
    oob.send_line(encode_result(r, o.mode));
    const std::string verdict = oob.receive_line();
    if (verdict != "DONE") {
      throw std::runtime_error(verdict.starts_with("FAIL ") ? verdict.substr(5) : verdict);
    }
    print_row(out, r, o);
    results.push_back(json_of(r, o));
  }
  oob.send_line("BYE");
  finish_table(out, e);
  write_json(o, results, false, milliseconds_to_rts(e));
  return 0;
}

int run_server(const PerfOptions& o, std::ostream& out) {
  // The instance before the wait for a client, as perftest opens its device first: a server
  // with a wrong socket fails now instead of waiting for a client that will fail with it.
  const std::unique_ptr<Device> opened = open_device(o);
  Device& device = *opened;
  OobChannel oob = OobChannel::listen(o.bind, o.port, through(device));
  out << waiting_banner();
  out.flush();
  oob.accept(std::chrono::seconds(o.timeout_seconds * 10));
  // The client decides the test; the server follows (so a scenario configures one side).
  const PerfOptions s = accept_test(oob, o);
  Endpoint e(device, s, *std::max_element(s.sizes.begin(), s.sizes.end()));
  oob.send_line("OK " + e.describe());
  const std::string qps = oob.receive_line();
  if (!qps.starts_with("QPS ")) {
    throw std::runtime_error("client sent no QP description");
  }
  e.connect(qps.substr(4));
  oob.send_line("READY");
  out << banner(
      s.verb, s.mode, true, s.qps,
      s.verb == Verb::kSend ? static_cast<std::uint32_t>(e.layout.receive_depth) : s.tx_depth);
  print_connection(out, e, s);
  nlohmann::json results = nlohmann::json::array();
  std::vector<std::uint64_t> next_recv;
  if (s.mode == Mode::kLatency && s.verb == Verb::kSend) {
    e.post_recv_slot(0, 1000000, 1);  // each pong received re-posts one
  }
  while (true) {
    const std::string line = oob.receive_line(std::chrono::seconds(s.timeout_seconds * 10));
    if (line == "BYE") {
      break;
    }
    std::uint64_t size = 0;
    if (std::sscanf(line.c_str(), "SIZE %lu", &size) != 1) {
      throw std::runtime_error("unexpected message from the client: " + line);
    }
    std::string failure;
    const CpuMeter meter(device.instance_pid());
    try {
      if (s.mode == Mode::kLatency) {
        std::memset(e.slot(0, 1), 0, e.layout.slot_size);
      }
      server_prepare(e, s, size, next_recv);
      oob.send_line("GO");
      server_serve(e, s, size, next_recv, oob);
    } catch (const std::exception& ex) {
      if (s.duration_seconds > 0) {
        tell_failure(oob, ex.what());  // the client is still running: stop it now
        throw;
      }
      failure = ex.what();
    }
    SizeResult r = decode_result(oob.receive_line(), s.mode);
    r.cpu = meter.stop();  // the server's own figures: its generator, its instance
    if (!failure.empty()) {
      oob.send_line("FAIL " + failure);
      throw std::runtime_error(failure);
    }
    oob.send_line("DONE");
    print_row(out, r, s);
    results.push_back(json_of(r, s));
  }
  finish_table(out, e);
  write_json(s, results, true, milliseconds_to_rts(e));
  return 0;
}

}  // namespace

int run_load_generator(const PerfOptions& o, std::ostream& out, std::ostream& err) {
  try {
    choose_spin(o.mode);
    choose_scheduling(o.mode);
    return o.server.empty() ? run_server(o, out) : run_client(o, out);
  } catch (const std::exception& e) {
    out.flush();
    err << e.what() << "\n";
    return 1;
  }
}

}  // namespace ernic::emu::perf
