#pragma once

#include <string>

namespace ernic {

// Ctrl-C and SIGTERM handling. The first signal asks the run to stop and tear down; a second
// one asks for a faster teardown (no graceful waits). Teardown itself is never skipped: the
// signals stay caught until the process exits.
class Interrupt {
 public:
  static void install();
  // Number of SIGINT/SIGTERM received (or request() calls) so far.
  static int count();
  static bool requested() { return count() > 0; }
  // The signal that caused the first request (SIGINT or SIGTERM), 0 when none.
  static int first_signal();
  // A file descriptor that becomes readable once an interrupt is requested, for poll().
  static int wake_fd();
  // Requests an interrupt from code, as if SIGINT arrived.
  static void request();
  // Stops the run because something it depends on died (an emulator instance): every wait
  // wakes as for Ctrl-C, but the run is reported failed with `reason`, not interrupted.
  static void abort(const std::string& reason);
  // The reason given to abort(), "" when none.
  static std::string abort_reason();
  // Tests only: forget earlier requests.
  static void reset();
};

}  // namespace ernic
