#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace ernic {

// Teardown actions, run last-in first-out on success, on failure and after Ctrl-C. Every
// resource a run creates (namespace, process, domain, temp file) pushes its undo here the
// moment it exists, so nothing depends on the code path that led to teardown.
class CleanupStack {
 public:
  using Action = std::function<void()>;
  // Reports an action that threw; teardown goes on with the next one.
  using ErrorHandler = std::function<void(const std::string& description, const std::string& what)>;

  CleanupStack() = default;
  CleanupStack(const CleanupStack&) = delete;
  CleanupStack& operator=(const CleanupStack&) = delete;
  ~CleanupStack();  // runs whatever is left

  void push(std::string description, Action action);
  // Runs every action, newest first, and empties the stack. Safe to call more than once.
  void run_all(const ErrorHandler& on_error = {});
  // Forgets the actions without running them (`--keep always`), returning their descriptions.
  std::vector<std::string> release();
  std::size_t size() const;

 private:
  struct Entry {
    std::string description;
    Action action;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace ernic
