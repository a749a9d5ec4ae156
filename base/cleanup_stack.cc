#include "base/cleanup_stack.h"

#include <exception>

namespace ernic {

CleanupStack::~CleanupStack() {
  run_all();
}

void CleanupStack::push(std::string description, Action action) {
  std::lock_guard lock(mutex_);
  entries_.push_back({std::move(description), std::move(action)});
}

void CleanupStack::run_all(const ErrorHandler& on_error) {
  for (;;) {
    Entry entry;
    {
      std::lock_guard lock(mutex_);
      if (entries_.empty()) {
        return;
      }
      entry = std::move(entries_.back());
      entries_.pop_back();
    }
    try {
      entry.action();
    } catch (const std::exception& e) {
      if (on_error) {
        on_error(entry.description, e.what());
      }
    }
  }
}

std::vector<std::string> CleanupStack::release() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> descriptions;
  for (const auto& entry : entries_) {
    descriptions.push_back(entry.description);
  }
  entries_.clear();
  return descriptions;
}

std::size_t CleanupStack::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace ernic
