#include "benchmarks/perftest_errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "benchmarks/tool_text.h"

namespace ernic::perftest_errors {
namespace {

using tool_text::contains;

// Known perftest (and verbs) error texts, with what they usually mean. Matched anywhere in a
// line, because perftest prefixes some with a function name or a pid.
struct KnownError {
  std::string_view text;
  std::string_view hint;
};

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

}  // namespace ernic::perftest_errors
