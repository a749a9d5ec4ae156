#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ernic::emu::perf {

enum class Verb { kSend, kWrite, kRead };
enum class Mode { kBandwidth, kLatency };

// perftest's own text layout, so that the parser for ib_*_bw / ib_*_lat reads ours too.
std::string test_title(Verb verb, Mode mode);  // "Send BW Test", "RDMA_Write Latency Test", ...
std::string banner(Verb verb, Mode mode, bool server, std::uint32_t qps, std::uint32_t depth);
std::string address_line(bool local, std::uint32_t qpn, std::uint32_t rkey, std::uint64_t vaddr,
                         bool show_rdma);
std::string gid_line(const std::string& gid);
std::string dashes();
std::string waiting_banner();

std::string bw_header(bool gbits);
struct BwResult {
  std::uint64_t bytes = 0;
  std::uint64_t iterations = 0;
  double peak_bytes_per_second = 0;
  double average_bytes_per_second = 0;
  double message_rate = 0;  // messages per second
};
std::string bw_row(const BwResult& result, bool gbits);
// BW peak, computed as perftest computes it: the best rate over windows of consecutive
// messages i..j, from the time message i was posted to the time message j completed, over
// windows of at least `depth` messages (j starting at i + depth - 1, in steps of depth). Every
// message of a window was posted and completed inside its interval, so no window can look
// faster than the work really went (a client that was descheduled and then finds many
// completions at once does not make a peak). Below two windows (fewer than 2 x depth
// messages) it is the average; it is never below the average. Times in usec since the start,
// in completion order; `posted_usec[k]` is when the k-th completed message was posted.
double peak_bytes_per_second(const std::vector<double>& posted_usec,
                             const std::vector<double>& completed_usec,
                             std::uint64_t bytes_per_message, std::uint64_t depth);

std::string lat_header();
struct LatResult {
  std::uint64_t bytes = 0;
  std::uint64_t iterations = 0;
  double min = 0, max = 0, typical = 0, average = 0, stdev = 0, p99 = 0, p999 = 0;  // usec
  double transactions_per_second = 0;  // duration mode: exchanges per measured second
};
LatResult summarize_latency(std::uint64_t bytes, std::vector<double> samples_usec);
std::string lat_row(const LatResult& result);
// Duration mode (-D) prints only the average and the exchange rate, as perftest does.
std::string lat_duration_header();
std::string lat_duration_row(const LatResult& result);
// -H/--report-histogram: "#, usec", then "N, latency" for every measured iteration, sorted.
std::string histogram_lines(std::vector<double> samples_usec);

// Rung 2 of the evaluation ladder, printed after the closing dashed line: the time from the
// process's start to its first QP in RTS.
std::string time_to_rts_line(double milliseconds);

}  // namespace ernic::emu::perf
