#include "benchmarks/perftest_errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

#include "benchmarks/tool_text.h"

namespace ernic::perftest_errors {
namespace {

using tool_text::contains;
using tool_text::printable;
using tool_text::split_lines;
using tool_text::split_words;
using tool_text::trim;

// Known perftest (and verbs) error texts, with what they usually mean. Matched anywhere in a
// line, because perftest prefixes some with a function name or a pid.
struct KnownError {
  std::string_view text;
  std::string_view hint;
};

// get_clock.c's sample_get_cpu_mhz() when its TSC-against-gettimeofday fit is poor, then the
// report's refusal once get_cpu_mhz() returned 0 (perftest_parameters.c, print_report_bw/lat).
constexpr std::string_view kCalibrationText = "Correlation coefficient r^2:";
constexpr std::string_view kNoReportText = "Can't produce a report";

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
    KnownError{kCalibrationText,
               "perftest could not calibrate the CPU clock: a busy or "
               "virtualised CPU"},
    KnownError{kNoReportText, "perftest has no CPU clock rate to convert its measurement with"},
};

// Error texts that only say the other side went away: perftest's out-of-band exchange (and
// rdma_cm's disconnect) failing because the peer process already exited.
constexpr std::array kPeerConsequences{
    std::string_view("Couldn't read remote address"),
    std::string_view("Unable to read from socket"),
    std::string_view("Unable to read to socket"),
    std::string_view("Unable to write to socket"),
    std::string_view("Failed to close connection between server and client"),
    std::string_view("Failed to exchange data between server and clients"),
    std::string_view("Failed to disconnect RDMA CM"),
    std::string_view("Connection reset by peer"),
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

}  // namespace

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

std::optional<OwnFailure> own_failure(std::string_view output) {
  std::vector<std::string_view> lines = split_lines(output);
  auto calibration = std::find_if(lines.begin(), lines.end(), [](std::string_view line) {
    return contains(line, kCalibrationText);
  });
  if (calibration == lines.end()) {
    return std::nullopt;
  }
  // "Correlation coefficient r^2: 0.658888 < 0.9": the fit and the threshold, as printed.
  std::string_view fit =
      calibration->substr(calibration->find(kCalibrationText) + kCalibrationText.size());
  std::vector<std::string_view> words = split_words(fit);
  std::string figures = "r^2 below 0.9";
  if (words.size() == 3 && words[1] == "<") {
    auto r2 = tool_text::parse_finite_number(words[0]);
    figures = fmt::format("r^2 {} < {}", r2 ? fmt::format("{:.2f}", *r2) : printable(words[0]),
                          printable(words[2]));
  }
  OwnFailure failure;
  failure.cause = "perftest could not calibrate the CPU clock";
  failure.transient = true;
  failure.message = fmt::format("{} ({}; a busy or virtualised CPU)", failure.cause, figures);
  auto refusal = std::find_if(calibration, lines.end(),
                              [](std::string_view line) { return contains(line, kNoReportText); });
  if (refusal != lines.end()) {
    failure.message += ": " + printable(trim(*refusal));
  }
  return failure;
}

bool is_peer_consequence(std::string_view line) {
  return std::any_of(kPeerConsequences.begin(), kPeerConsequences.end(),
                     [&](std::string_view text) { return contains(line, text); });
}

bool has_independent_error(std::string_view output) {
  std::vector<std::string_view> lines = split_lines(output);
  return std::any_of(lines.begin(), lines.end(), [](std::string_view line) {
    return is_error_line(line) && !is_peer_consequence(line);
  });
}

}  // namespace ernic::perftest_errors
