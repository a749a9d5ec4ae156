#pragma once

// Private to the load generator: perftest's duration mode (-D SECONDS). The client runs for
// that long and measures only the middle of it; the server serves until the client tells it,
// over the out-of-band channel, how many messages (or exchanges) the run had ("END <count>").

#include <cstddef>
#include <cstdint>
#include <vector>

#include "perf/endpoint.h"
#include "perf/load_generator_output.h"
#include "perf/oob_channel.h"

namespace ernic::emu::perf {

// perftest's timeline: a warm-up of a quarter of the duration in whole seconds (perftest's
// default margin), the measured time, the same margin again while traffic goes on, the end.
struct MeasureWindow {
  MeasureWindow(int duration_seconds, SteadyClock::time_point begin);
  bool measures(SteadyClock::time_point t) const;
  std::size_t second_of(SteadyClock::time_point t) const;  // within the measured time
  int measured_seconds() const;

  SteadyClock::time_point start, sample_start, sample_end, end;
};

// The client's side: bandwidth (per-second counts in SizeResult::per_second) or ping-pong
// latency for o.duration_seconds. Both fail with a clear message when the server goes away.
SizeResult client_bandwidth_for_duration(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                                         OobChannel& oob);
SizeResult client_latency_for_duration(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                                       OobChannel& oob);
// Tells the server the run is over.
void send_end(OobChannel& oob, const SizeResult& r);

// The server's side: serves until the client's END, then checks the count.
void server_bandwidth_until_end(Endpoint& e, const PerfOptions& s, std::uint64_t size,
                                std::vector<std::uint64_t>& next_recv, OobChannel& oob);
void server_latency_until_end(Endpoint& e, const PerfOptions& s, std::uint64_t size,
                              OobChannel& oob);

}  // namespace ernic::emu::perf
