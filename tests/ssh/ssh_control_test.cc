#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/file_text.h"
#include "base/interrupt.h"
#include "hosts/ssh/ssh_host.h"
#include "sshd_fixture.h"

// Readiness polls, program lookups and the signals that stop commands go through one
// long-lived control shell per SSH host (SshControl): these prove that its answers are right,
// that it survives being killed, that it does not answer for a hung host, and that commands
// stopped through it lose their whole process group.
namespace ernic {
namespace {

using testing::SshdInNamespace;
using namespace std::chrono_literals;

// Session processes of the sshd that are control shells (their $0 is ernic-control).
std::vector<pid_t> control_shells(const SshdInNamespace& server) {
  std::vector<pid_t> found;
  // NUL-separated words: the last one is the shell's $0.
  const std::string last_word = std::string("\0ernic-control\0", 15);
  for (pid_t pid : server.sshd.session_processes()) {
    std::string cmdline = read_file_text("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.size() > last_word.size() &&
        cmdline.compare(cmdline.size() - last_word.size(), last_word.size(), last_word) == 0) {
      found.push_back(pid);
    }
  }
  return found;
}

bool wait_until_gone(const std::vector<std::string>& argv) {
  auto deadline = Clock::now() + 5s;
  while (testing::process_running(argv) && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  return !testing::process_running(argv);
}

TEST_CASE("is_listening answers repeatedly on one session through one control shell",
          "[ssh][control]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  auto closed = static_cast<std::uint16_t>(server.sshd.port() + 1);
  for (int i = 0; i < 25; ++i) {
    INFO("round " << i);
    REQUIRE(host.is_listening(server.sshd.port()));
    REQUIRE_FALSE(host.is_listening(closed));
    REQUIRE(host.has_program("sh"));
    REQUIRE_FALSE(host.has_program("ernic-no-such-program"));
  }
  // Every answer came from the same shell: no process per question.
  CHECK(control_shells(server).size() == 1);
  CHECK(host.check_alive().empty());
}

TEST_CASE("a server's readiness is seen through the control shell", "[ssh][control]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  const std::uint16_t port = 5399;
  REQUIRE_FALSE(host.is_listening(port));
  auto iperf = host.start(CommandSpec{{"iperf3", "-s", "-1", "--bind", server.ns.inside_address(),
                                       "-p", std::to_string(port)},
                                      30s,
                                      {}},
                          nullptr);
  auto deadline = Clock::now() + 20s;
  bool ready = false;
  while (!ready && iperf->running() && Clock::now() < deadline) {
    ready = host.is_listening(port);
  }
  REQUIRE(ready);
  std::string output;
  CHECK(testing::run_program({"iperf3", "-c", server.ns.inside_address(), "-p",
                              std::to_string(port), "-t", "1", "-J"},
                             &output) == 0);
  CommandResult result = iperf->wait(Clock::now() + 10s);
  INFO(result.out << result.err);
  CHECK(result.ok());
  // The one client was the real one: the readiness check connected to nothing.
  CHECK(output.find("\"error\"") == std::string::npos);
  CHECK_FALSE(host.is_listening(port));
}

TEST_CASE("a killed control shell is replaced and answers again", "[ssh][control]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  REQUIRE(host.is_listening(server.sshd.port()));
  std::vector<pid_t> shells = control_shells(server);
  REQUIRE(shells.size() == 1);
  kill(shells[0], SIGKILL);
  // The next question may still reach the dead shell's channel; it is asked again of a new one.
  CHECK(host.is_listening(server.sshd.port()));
  CHECK_FALSE(host.is_listening(static_cast<std::uint16_t>(server.sshd.port() + 1)));
  std::vector<pid_t> now = control_shells(server);
  REQUIRE(now.size() == 1);
  CHECK(now[0] != shells[0]);
  CHECK(host.check_alive().empty());
}

TEST_CASE("is_listening throws instead of answering for a host that hangs", "[ssh][control]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  REQUIRE(host.is_listening(server.sshd.port()));
  server.sshd.freeze(true);
  std::string error;
  try {
    host.is_listening(server.sshd.port());
  } catch (const SshError& e) {
    error = e.what();
  }
  server.sshd.freeze(false);
  CHECK(error.find("did not answer") != std::string::npos);
  CHECK(error.find("g1") != std::string::npos);
  // The host is declared gone: the watchdog's check says so at once.
  CHECK(host.check_alive() == error);
}

TEST_CASE("stopping an ssh command kills its whole remote process group", "[ssh][control]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  const std::vector<std::string> first{"sleep", "123.25"};
  const std::vector<std::string> second{"sleep", "234.75"};
  // A shell with a background child and a foreground one: both are in the command's group.
  const CommandSpec family{{"sh", "-c", "sleep 123.25 & sleep 234.75; wait"}, 0ms, {}};

  SECTION("stop() once both run") {
    auto command = host.start(family, nullptr);
    auto deadline = Clock::now() + 5s;
    while (!(testing::process_running(first) && testing::process_running(second)) &&
           Clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    REQUIRE(testing::process_running(first));
    CommandResult result = command->stop(1000ms);
    CHECK(result.term_signal == SIGTERM);
  }
  SECTION("stop() right after start(), before the wrapper announced the pid") {
    auto command = host.start(family, nullptr);
    CommandResult result = command->stop(1000ms);
    // The command was signalled and ended, not merely abandoned with its channel.
    CHECK(result.term_signal == SIGTERM);
    CHECK_FALSE(command->running());
  }
  SECTION("a timeout") {
    CommandSpec timed = family;
    timed.timeout = 800ms;
    CommandResult result = host.run(timed);
    CHECK(result.timed_out);
  }
  SECTION("Ctrl-C") {
    auto command = host.start(family, nullptr);
    Interrupt::reset();
    std::jthread presser([] {
      std::this_thread::sleep_for(300ms);
      Interrupt::request();
    });
    CommandResult result = command->wait(Clock::time_point::max());
    Interrupt::reset();
    CHECK(result.interrupted);
  }
  CHECK(wait_until_gone(first));
  CHECK(wait_until_gone(second));
  // No signal opened a channel of its own: one control shell did it all.
  CHECK(control_shells(server).size() == 1);
}

}  // namespace
}  // namespace ernic
