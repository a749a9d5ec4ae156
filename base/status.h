#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace ernic {

// Progress of a run as a person sees it (ninja's Status): a redrawn line on a terminal, plain
// timestamped lines in CI logs. Progress goes to stderr so that stdout carries only the
// summary (or its JSON).
class Status {
 public:
  virtual ~Status() = default;
  virtual void phase(std::string_view what) = 0;
  virtual void point_started(int index, int total, std::string_view id, int repetition,
                             int repetitions) = 0;
  virtual void point_finished(int index, int total, std::string_view id, bool passed,
                              std::string_view outcome) = 0;
  virtual void warning(std::string_view text) = 0;
  // Clears any live line; called before the summary is printed.
  virtual void finish() = 0;
};

// A smart terminal status when stderr and stdout are terminals, plain lines otherwise.
std::unique_ptr<Status> make_status(bool quiet = false);

}  // namespace ernic
