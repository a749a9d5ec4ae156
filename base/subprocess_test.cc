#include "base/subprocess.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ernic {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("ernic-subprocess-" + std::to_string(::getpid()))) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

TEST_CASE("output is captured per stream, and a ready line is waited for", "[subprocess]") {
  std::string seen;
  auto process = Subprocess::spawn(
      {.argv = {"sh", "-c", "echo out; echo err >&2; echo ready; exec sleep 30"}},
      [&](bool is_stderr, std::string_view /*data*/) { seen += is_stderr ? "E" : "O"; });
  CHECK(process->wait_for_line(std::regex("^ready$"), Clock::now() + std::chrono::seconds(10)));
  CHECK(process->running());
  process->terminate(std::chrono::milliseconds(500));
  CHECK(process->term_signal() == SIGTERM);
  process->finish_output();
  CHECK(process->stdout_text() == "out\nready\n");
  CHECK(process->stderr_text() == "err\n");
  CHECK(seen.find('E') != std::string::npos);
}

TEST_CASE("a program that is not there is a SpawnError naming it", "[subprocess]") {
  try {
    Subprocess::spawn({.argv = {"ernic-no-such-program"}}, {});
    FAIL("spawned a program that does not exist");
  } catch (const SpawnError& e) {
    CHECK_THAT(e.what(), Catch::Contains("ernic-no-such-program"));
    CHECK_THAT(e.what(), Catch::Contains("not found in PATH"));
  }
}

TEST_CASE("with an output file both streams go there, appended, and nothing is captured",
          "[subprocess]") {
  TempDir dir;
  fs::path log = dir.path / "console";
  std::ofstream(log) << "earlier\n";
  auto process = Subprocess::spawn(
      {.argv = {"sh", "-c", "echo out; echo err >&2; ls -l /proc/$$/fd | grep -c console"},
       .output_file = log.string()},
      {});
  CHECK(process->wait_until(Clock::now() + std::chrono::seconds(10), false) ==
        Subprocess::WaitEnd::kExited);
  CHECK(process->exit_code() == 0);
  process->finish_output();
  CHECK(process->stdout_text().empty());
  // The shell has stdout and stderr on the file and no stray third descriptor left open.
  CHECK(read_file(log) == "earlier\nout\nerr\n2\n");
}

TEST_CASE("an output file that cannot be opened is a SpawnError", "[subprocess]") {
  CHECK_THROWS_WITH(
      Subprocess::spawn({.argv = {"true"}, .output_file = "/nonexistent-dir/console"}, {}),
      Catch::Contains("cannot open its output file"));
}

TEST_CASE("a released process outlives its Subprocess; an owned one does not", "[subprocess]") {
  TempDir dir;
  pid_t owned_pid = 0;
  {
    auto owned = Subprocess::spawn({.argv = {"sleep", "30"}}, {});
    owned_pid = owned->pid();
    CHECK_THROWS_AS(owned->release(), std::logic_error);
  }
  CHECK_FALSE(alive(owned_pid));

  pid_t released_pid = 0;
  {
    auto released = Subprocess::spawn({.argv = {"sleep", "30"},
                                       .output_file = (dir.path / "console").string(),
                                       .may_outlive_ernicctl = true},
                                      {});
    released_pid = released->pid();
    released->release();
  }
  CHECK(alive(released_pid));
  ::kill(released_pid, SIGKILL);
  // This test process is still its parent: reap it.
  CHECK(::waitpid(released_pid, nullptr, 0) == released_pid);
}

TEST_CASE("a process that may outlive ernicctl needs somewhere to write", "[subprocess]") {
  CHECK_THROWS_AS(Subprocess::spawn({.argv = {"true"}, .may_outlive_ernicctl = true}, {}),
                  std::logic_error);
}

}  // namespace
}  // namespace ernic
