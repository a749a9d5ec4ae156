// SIGKILL of `ernicctl run` at random moments: nothing it started survives it (emulator
// instances, load generators, tools), and `ernicctl down` removes everything it left. A frozen
// emulator instance (SIGSTOP) stops the run promptly, naming the instance that lost its peer.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <thread>

#include "base/file_text.h"
#include "ernicctl_runner.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kQuickstart = std::string(ERNIC_SOURCE_DIR) + "/scenarios/quickstart.yaml";

// Every process ernicctl starts inherits its environment: the marker finds them all, also
// those reparented to init after ernicctl died and those inside the run's namespaces.
int processes_marked(const std::string& marker) {
  return count_running_processes([&](const fs::path& proc) {
    return ernic::read_file_text(proc / "environ").find(marker) != std::string::npos;
  });
}

// The run token, read from the lock file ernicctl holds open.
std::optional<std::string> run_token_of(pid_t pid) {
  static const std::regex kLock(".*/ernicctl-run-([0-9a-f]{6})\\.lock$");
  std::error_code ignored;
  for (const auto& fd :
       fs::directory_iterator(fs::path("/proc") / std::to_string(pid) / "fd", ignored)) {
    std::smatch m;
    const std::string target = fs::read_symlink(fd.path(), ignored).string();
    if (std::regex_match(target, m, kLock)) {
      return m[1].str();
    }
  }
  return std::nullopt;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// What a run with `token` may leave behind, by name.
std::vector<std::string> traces_of(const std::string& token) {
  std::vector<std::string> found;
  for (const auto& name : namespaces()) {
    if (name.starts_with("ernic-" + token + "-")) {
      found.push_back("netns " + name);
    }
  }
  for (const auto& path : {fs::temp_directory_path() / ("ernic-" + token),
                           fs::temp_directory_path() / ("ernicctl-run-" + token + ".lock")}) {
    if (fs::exists(path)) {
      found.push_back(path.string());
    }
  }
  return found;
}

// The pid of the running process whose command line holds every one of `parts`.
std::optional<pid_t> process_with(const std::vector<std::string>& parts) {
  std::optional<pid_t> found;
  count_running_processes([&](const fs::path& proc) {
    std::string cmdline = ernic::read_file_text(proc / "cmdline");
    for (const std::string& part : parts) {
      if (cmdline.find(part) == std::string::npos) {
        return false;
      }
    }
    found = static_cast<pid_t>(std::stol(proc.filename().string()));
    return true;
  });
  return found;
}

// `ernicctl run` of the quickstart, its runs and history in `dir`, every process it starts
// carrying `marker` (NAME=VALUE) in its environment.
std::unique_ptr<ernic::Subprocess> start_quickstart(const fs::path& dir,
                                                    const std::string& marker) {
  std::vector<std::string> argv = {ERNIC_BINARY,
                                   "run",
                                   kQuickstart,
                                   "--runs-dir",
                                   (dir / "runs").string(),
                                   "--set",
                                   "history.path=" + (dir / "history.jsonl").string()};
  return ernic::Subprocess::spawn(
      {.argv = argv,
       .env = {{marker.substr(0, marker.find('=')), marker.substr(marker.find('=') + 1)}},
       .netns_path = "",
       .stdin_file = ""},
      {});
}

int files_in(const fs::path& dir) {
  std::error_code ignored;
  int count = 0;
  for (auto it = fs::directory_iterator(dir, ignored); it != fs::directory_iterator(); ++it) {
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("a frozen emulator worker stops ernicctl run within seconds, naming the instance") {
  auto dir = fresh_dir("frozen-worker");
  const std::string marker = "ERNIC_KILL_TEST=" + std::to_string(getpid()) + "-frozen";
  auto process = start_quickstart(dir, marker);
  std::optional<std::string> token;
  REQUIRE(eventually([&] { return (token = run_token_of(process->pid())).has_value(); }, 20s));
  INFO("run " << *token);
  // Mid-run: a few points have their logs (the instances are up and carrying traffic).
  fs::path steps;
  REQUIRE(eventually(
      [&] {
        std::error_code not_yet;
        for (auto it = fs::directory_iterator(dir / "runs", not_yet);
             it != fs::directory_iterator(); ++it) {
          steps = it->path() / "steps";
        }
        return !steps.empty() && files_in(steps) >= 3;
      },
      60s));
  std::optional<pid_t> worker;
  REQUIRE(eventually(
      [&] {
        return (worker = process_with(
                    {"emulator", "tcp:worker", "/tmp/ernic-" + *token + "/ernic2.sock"}))
            .has_value();
      },
      5s));
  const auto frozen_at = std::chrono::steady_clock::now();
  REQUIRE(::kill(*worker, SIGSTOP) == 0);
  // The manager's heartbeats (3 s) declare the worker gone; the run stops on its own.
  REQUIRE(process->wait_until(frozen_at + 15s, false) == ernic::Subprocess::WaitEnd::kExited);
  const auto stopped_after = std::chrono::steady_clock::now() - frozen_at;
  process->finish_output();
  const std::string printed = process->stdout_text() + process->stderr_text();
  INFO(printed);
  CHECK(stopped_after < 10s);
  CHECK(process->exit_code() != 0);
  CHECK_THAT(printed,
             Catch::Contains("emulator instance 1") && Catch::Contains("lost 1 mesh peer"));
  // The stopped worker is not left behind: teardown kills what does not stop on its own.
  CHECK(eventually([&] { return processes_marked(marker) == 0; }, 10s));
  CHECK(traces_of(*token).empty());
  fs::remove_all(dir);
}

TEST_CASE("SIGKILL of ernicctl run leaves nothing running, and down leaves nothing at all") {
  auto dir = fresh_dir("kill");
  std::mt19937 random(std::random_device{}());
  for (int round = 0; round < 10; ++round) {
    INFO("round " << round);
    const std::string marker =
        "ERNIC_KILL_TEST=" + std::to_string(getpid()) + "-" + std::to_string(round);
    auto process = start_quickstart(dir, marker);
    std::optional<std::string> token;
    REQUIRE(eventually([&] { return (token = run_token_of(process->pid())).has_value(); }, 20s));
    // A random moment of the run: starting the instances, setting up hosts, mid-point.
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 2500));
    INFO("run " << *token);
    ::kill(process->pid(), SIGKILL);
    REQUIRE(process->wait_until(std::chrono::steady_clock::now() + 10s, false) ==
            ernic::Subprocess::WaitEnd::kExited);
    CHECK(process->term_signal() == SIGKILL);
    CHECK(eventually([&] { return processes_marked(marker) == 0; }, 10s));
    const Invocation down = run_ernicctl({"down"});
    INFO(down.out << down.err);
    CHECK(down.exit_code == 0);
    CHECK(traces_of(*token).empty());
    CHECK(processes_marked(marker) == 0);
  }
  fs::remove_all(dir);
}
