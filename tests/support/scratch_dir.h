#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

namespace ernic::testing {

// A fresh directory under the temporary directory for one test, removed with everything in it
// when the test is done: a test leaves nothing behind on the machine that ran it. It is the
// path itself, so `dir / "history.jsonl"` reads as before. ERNIC_KEEP_TEST_DIRS=1 keeps it
// for a look after a failure. The name carries the process id: tests of two builds running at
// once on one machine keep apart. Only the process that made it removes it: a forked child
// that exits does not take its parent's directory with it.
class ScratchDir : public std::filesystem::path {
 public:
  explicit ScratchDir(const std::string& name)
      : std::filesystem::path(std::filesystem::temp_directory_path() /
                              (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(*this);
    std::filesystem::create_directories(*this);
  }
  ScratchDir(ScratchDir&& other) noexcept
      : std::filesystem::path(std::move(other)), owner_(other.owner_) {
    other.clear();
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir() {
    const char* keep = std::getenv("ERNIC_KEEP_TEST_DIRS");
    if (empty() || ::getpid() != owner_ || (keep != nullptr && std::string(keep) == "1")) {
      return;
    }
    std::error_code ignored;
    std::filesystem::remove_all(*this, ignored);
  }

  const std::filesystem::path& path() const { return *this; }

 private:
  pid_t owner_ = ::getpid();
};

}  // namespace ernic::testing
