#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <cstdint>

namespace ernic::testing {

// A full disk without a mount: while this lives, no file of this process may grow past `bytes`
// (RLIMIT_FSIZE), so a write that crosses it is cut short and the next fails with EFBIG, as
// writes on a full file system are cut short and then fail with ENOSPC. SIGXFSZ, which would
// kill the process instead, is ignored meanwhile. Restores both when it goes.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(std::uint64_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_limit_);
    rlimit limited = saved_limit_;
    limited.rlim_cur = static_cast<rlim_t>(bytes);
    ::setrlimit(RLIMIT_FSIZE, &limited);
    saved_handler_ = ::signal(SIGXFSZ, SIG_IGN);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_limit_);
    ::signal(SIGXFSZ, saved_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_limit_{};
  sighandler_t saved_handler_ = SIG_DFL;
};

}  // namespace ernic::testing
