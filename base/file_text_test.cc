#include "base/file_text.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

namespace ernic {
namespace {

namespace fs = std::filesystem;

TEST_CASE("a process's /proc file read after the process is reaped comes back empty",
          "[file_text]") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const fs::path cmdline = fs::path("/proc") / std::to_string(child) / "cmdline";
  CHECK_FALSE(read_file_text(cmdline).empty());
  int fd = ::open(cmdline.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  // The read that std::ifstream's iterator turns into an exception (ESRCH).
  CHECK(read_fd_text(fd).empty());
  ::close(fd);
  CHECK(read_file_text(cmdline).empty());
}

TEST_CASE("a file longer than one read comes back whole", "[file_text]") {
  const fs::path path =
      fs::temp_directory_path() / ("ernic-file-text-" + std::to_string(::getpid()));
  std::string text;
  for (int line = 0; line < 2000; ++line) {
    text += "line " + std::to_string(line) + "\n";
  }
  std::ofstream(path) << text;
  CHECK(read_file_text(path) == text);
  fs::remove(path);
  CHECK(read_file_text(path).empty());
}

}  // namespace
}  // namespace ernic
