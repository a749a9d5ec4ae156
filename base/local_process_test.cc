#include "base/local_process.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ernic {
namespace {

TEST_CASE("local processes: output, exit status, timeout, stop flag, missing program", "[image]") {
  auto ok = run_local({"sh", "-c", "echo out; echo err >&2"});
  CHECK(ok.ok());
  CHECK(ok.output.find("out") != std::string::npos);
  CHECK(ok.output.find("err") != std::string::npos);

  auto failed = run_local({"sh", "-c", "exit 3"});
  CHECK_FALSE(failed.ok());
  CHECK(failed.exit_code == 3);
  CHECK(failed.describe() == "exit status 3");

  LocalProcessOptions short_timeout;
  short_timeout.timeout = std::chrono::seconds(1);
  auto started = std::chrono::steady_clock::now();
  // The grandchild (sleep) is in the same process group and is stopped too.
  auto slow = run_local({"sh", "-c", "sleep 30 & sleep 30"}, short_timeout);
  CHECK(slow.timed_out);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));

  std::atomic<bool> stop{true};
  LocalProcessOptions stopped;
  stopped.stop = &stop;
  CHECK(run_local({"sleep", "30"}, stopped).interrupted);

  auto missing = run_local({"ernic-no-such-program"});
  CHECK(missing.exit_code == 127);
  CHECK(missing.output.find("cannot run ernic-no-such-program") != std::string::npos);
  CHECK_FALSE(local_program_exists("ernic-no-such-program"));
  CHECK(local_program_exists("sh"));
}

TEST_CASE("local process output goes to the log file and tail() keeps the last lines", "[image]") {
  auto log = std::filesystem::temp_directory_path() / "ernic-local-process-test.log";
  std::filesystem::remove(log);
  LocalProcessOptions options;
  options.log_file = log;
  auto result = run_local({"sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done"}, options);
  CHECK(result.tail(2) == "line4\nline5");
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find("line3") != std::string::npos);
  CHECK(text.str().find("# exit status 0") != std::string::npos);
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace ernic
