#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ernic::perftest_errors {

// What a perftest (or verbs) error line usually means, for the known ones: "Failed status N"
// gets the ibv_wc_status name, "Couldn't create CQ" the memlock limit.
std::optional<std::string> error_hint(std::string_view line);
// A line that reports a failure: a known error or one of perftest's failure words.
bool is_error_line(std::string_view line);
bool is_known_warning(std::string_view line);

// A failure perftest reports about itself rather than about the device or the other side, read
// from one side's whole output (stdout and stderr).
struct OwnFailure {
  // What went wrong, short, as the progress line says when the repetition is retried:
  // "perftest could not calibrate the CPU clock".
  std::string cause;
  // The cause with perftest's own figures and words: "perftest could not calibrate the CPU clock
  // (r^2 0.66 < 0.9; a busy or virtualised CPU): Can't produce a report".
  std::string message;
  // Whether running the repetition again may pass: the failure says nothing about the device.
  bool transient = false;
};
// perftest's get_cpu_mhz() fits the TSC against gettimeofday() and gives up below r^2 0.9
// ("Correlation coefficient r^2: 0.658888 < 0.9"), and the report then refuses to print ("Can't
// produce a report", exit 1): a busy or just-booted virtual CPU. nullopt for any other output.
std::optional<OwnFailure> own_failure(std::string_view output);

// An error line that only says the other side went away (it closed the out-of-band connection
// mid-handshake): the consequence of the other side's failure, never its cause.
bool is_peer_consequence(std::string_view line);
// Whether `output` printed an error line that is not such a consequence: a failure of its own.
bool has_independent_error(std::string_view output);

}  // namespace ernic::perftest_errors
