#include "perf/perftest_format.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace ernic::emu::perf {

std::string test_title(Verb verb, Mode mode) {
  const char* name = verb == Verb::kSend    ? "Send"
                     : verb == Verb::kWrite ? "RDMA_Write"
                                            : "RDMA_Read";
  return fmt::format("{} {} Test", name, mode == Mode::kBandwidth ? "BW" : "Latency");
}

std::string dashes() {
  return "---------------------------------------------------------------------------------------"
         "\n";
}

std::string waiting_banner() {
  return "\n************************************\n"
         "* Waiting for client to connect... *\n"
         "************************************\n";
}

std::string banner(Verb verb, Mode mode, bool server, std::uint32_t qps, std::uint32_t depth) {
  std::string out = dashes();
  out += fmt::format("                    {}\n", test_title(verb, mode));
  out += " Dual-port       : OFF\t\tDevice         : ernic_emu0\n";
  out += fmt::format(" Number of qps   : {}\t\tTransport type : IB\n", qps);
  out += " Connection type : RC\t\tUsing SRQ      : OFF\n";
  out += " PCIe relax order: OFF\n";
  out += " ibv_wr* API     : OFF\n";
  if (server && verb == Verb::kSend) {
    out += fmt::format(" RX depth        : {}\n", depth);
  } else {
    out += fmt::format(" TX depth        : {}\n", depth);
  }
  if (mode == Mode::kBandwidth) {
    out += " CQ Moderation   : 1\n";
  }
  out += " Mtu             : 4096[B]\n";
  out += " Link type       : Ethernet\n";
  out += " GID index       : 0\n";
  out += " Max inline data : 0[B]\n";
  out += " rdma_cm QPs\t : OFF\n";
  out += " Data ex. method : Ethernet\n";
  out += dashes();
  return out;
}

std::string address_line(bool local, std::uint32_t qpn, std::uint32_t rkey, std::uint64_t vaddr,
                         bool show_rdma) {
  std::string out = fmt::format(" {} address: LID 0000 QPN 0x{:04x} PSN 0x000000",
                                local ? "local" : "remote", qpn);
  if (show_rdma) {
    out += fmt::format(" RKey 0x{:06x} VAddr 0x{:016x}", rkey, vaddr);
  }
  return out + "\n";
}

std::string gid_line(const std::string& gid) {
  unsigned char bytes[16] = {};
  unsigned char v4[4];
  if (inet_pton(AF_INET6, gid.c_str(), bytes) != 1 && inet_pton(AF_INET, gid.c_str(), v4) == 1) {
    bytes[10] = bytes[11] = 0xff;  // IPv4-mapped, as perftest shows RoCE v2 GIDs
    std::copy(v4, v4 + 4, bytes + 12);
  }
  std::string out = " GID: ";
  for (int i = 0; i < 16; ++i) {
    out += fmt::format("{:02d}{}", bytes[i], i == 15 ? "" : ":");
  }
  return out + "\n";
}

std::string bw_header(bool gbits) {
  const char* unit = gbits ? "Gb/sec" : "MB/sec";
  return fmt::format(" #bytes     #iterations    BW peak[{0}]    BW average[{0}]   MsgRate[Mpps]\n",
                     unit);
}

std::string bw_row(const BwResult& r, bool gbits) {
  auto scale = [gbits](double bytes_per_second) {
    return gbits ? bytes_per_second * 8 / 1e9 : bytes_per_second / 1048576.0;
  };
  return fmt::format(" {:<7}    {:<10}       {:<7.2f}            {:<7.2f}\t\t   {:<7.6f}\n",
                     r.bytes, r.iterations, scale(r.peak_bytes_per_second),
                     scale(r.average_bytes_per_second), r.message_rate / 1e6);
}

double peak_bytes_per_second(const std::vector<double>& posted,
                             const std::vector<double>& completed, std::uint64_t bytes,
                             std::uint64_t depth) {
  const std::size_t n = completed.size();
  if (n == 0 || completed.back() <= 0) {
    return 0;
  }
  const double size = static_cast<double>(bytes);
  const double average = size * static_cast<double>(n) / (completed.back() / 1e6);
  const std::size_t window = std::max<std::uint64_t>(depth, 1);
  if (n < 2 * window || posted.size() != n) {
    return average;
  }
  double peak = average;
  const std::size_t step = std::max<std::size_t>(1, n / 1000);  // bounded work for long runs
  for (std::size_t i = 0; i + window <= n; i += step) {
    for (std::size_t j = i + window - 1; j < n; j += window) {
      const double seconds = (completed[j] - posted[i]) / 1e6;
      if (seconds > 0) {
        peak = std::max(peak, size * static_cast<double>(j - i + 1) / seconds);
      }
    }
  }
  return peak;
}

std::string lat_header() {
  return " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
         "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n";
}

LatResult summarize_latency(std::uint64_t bytes, std::vector<double> s) {
  LatResult r;
  r.bytes = bytes;
  r.iterations = s.size();
  if (s.empty()) {
    return r;
  }
  std::sort(s.begin(), s.end());
  r.min = s.front();
  r.max = s.back();
  r.typical = s[s.size() / 2];
  r.average = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
  double squares = 0;
  for (double v : s) {
    squares += (v - r.average) * (v - r.average);
  }
  r.stdev = std::sqrt(squares / static_cast<double>(s.size()));
  auto percentile = [&s](double p) {
    const auto index = static_cast<std::size_t>(std::ceil(p * static_cast<double>(s.size()))) - 1;
    return s[std::min(index, s.size() - 1)];
  };
  r.p99 = percentile(0.99);
  r.p999 = percentile(0.999);
  return r;
}

std::string lat_row(const LatResult& r) {
  return fmt::format(
      " {:<7} {:<10}    {:<7.2f}        {:<7.2f}      {:<7.2f}  \t       {:<7.2f}     "
      "\t{:<7.2f}\t\t{:<7.2f} "
      "\t\t{:<7.2f}\n",
      r.bytes, r.iterations, r.min, r.max, r.typical, r.average, r.stdev, r.p99, r.p999);
}

std::string lat_duration_header() {
  return " #bytes        #iterations       t_avg[usec]    tps average\n";
}

std::string lat_duration_row(const LatResult& r) {
  return fmt::format(" {:<7}       {}            {:<7.2f}        {:<7.2f}\n", r.bytes, r.iterations,
                     r.average, r.transactions_per_second);
}

std::string histogram_lines(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  std::string out = "#, usec\n";
  for (std::size_t i = 0; i < samples.size(); ++i) {
    out += fmt::format("{}, {:g}\n", i + 1, samples[i]);
  }
  return out;
}

std::string time_to_rts_line(double milliseconds) {
  return fmt::format(" Time to first QP in RTS: {:.2f} ms\n", milliseconds);
}

}  // namespace ernic::emu::perf
