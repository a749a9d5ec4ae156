#include "hosts/ssh/ssh_host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/interrupt.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

using testing::error_of;
using testing::seconds_since;
using testing::SshdInNamespace;
using testing::SshdServer;
using namespace std::chrono_literals;

class RecordingSink : public OutputSink {
 public:
  void on_output(OutputStream stream, std::string_view data) override {
    std::lock_guard lock(mutex_);
    (stream == OutputStream::kStdout ? out_ : err_).append(data);
    ++calls_;
  }
  std::string out() {
    std::lock_guard lock(mutex_);
    return out_;
  }
  std::string err() {
    std::lock_guard lock(mutex_);
    return err_;
  }

 private:
  std::mutex mutex_;
  std::string out_;
  std::string err_;
  int calls_ = 0;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("ssh host runs a command and reports stdout, stderr and exit status", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  RecordingSink sink;
  CommandResult result =
      host.run(CommandSpec{{"sh", "-c", "echo out-$GREETING; echo err-line >&2; exit 3"},
                           10s,
                           {{"GREETING", "hello world"}}},
               &sink);
  CHECK(result.exit_code == 3);
  CHECK(result.term_signal == 0);
  CHECK_FALSE(result.timed_out);
  CHECK(result.out == "out-hello world\n");
  CHECK(result.err == "err-line\n");  // the wrapper's pid line is not passed on
  CHECK(sink.out() == "out-hello world\n");
  CHECK(sink.err() == "err-line\n");
  CHECK(host.describe().find("g1") != std::string::npos);

  // The command really ran inside the namespace: it sees the namespace's address.
  CommandResult address = host.run(CommandSpec{{"ip", "-o", "-4", "addr", "show"}, 10s, {}});
  CHECK(address.ok());
  CHECK(address.out.find(server.ns.inside_address()) != std::string::npos);

  CommandResult missing = host.run(CommandSpec{{"ernic-no-such-program"}, 10s, {}});
  CHECK(missing.exit_code == 127);
}

TEST_CASE("ssh host streams output before the command ends", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  RecordingSink sink;
  auto command =
      host.start(CommandSpec{{"sh", "-c", "echo server-ready; sleep 30"}, 0ms, {}}, &sink);
  auto started = Clock::now();
  REQUIRE(command->wait_for_output(std::regex("server-ready"), Clock::now() + 5s));
  CHECK(seconds_since(started) < 3.0);
  CHECK(sink.out() == "server-ready\n");
  CHECK(command->running());
  CHECK_FALSE(command->wait_for_output(std::regex("never printed"), Clock::now() + 200ms));
  CommandResult result = command->stop(2000ms);
  CHECK(result.term_signal == SIGTERM);
  CHECK_FALSE(command->running());
}

TEST_CASE("ssh command timeout kills the remote process", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  const std::vector<std::string> sleeper{"sleep", "271.828"};
  auto started = Clock::now();
  CommandResult result = host.run(CommandSpec{sleeper, 700ms, {}});
  CHECK(result.timed_out);
  CHECK_FALSE(result.ok());
  CHECK(result.describe().find("timed out") != std::string::npos);
  CHECK(seconds_since(started) < 5.0);
  // The remote process is gone, not just our channel.
  auto deadline = Clock::now() + 3s;
  while (testing::process_running(sleeper) && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  CHECK_FALSE(testing::process_running(sleeper));

  // A command that ignores SIGTERM is killed after the grace period.
  const std::vector<std::string> stubborn{"sh", "-c", "trap '' TERM; sleep 314.159; :"};
  result = host.run(CommandSpec{stubborn, 500ms, {}});
  CHECK(result.timed_out);
  deadline = Clock::now() + 3s;
  while (testing::process_running({"sleep", "314.159"}) && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  CHECK_FALSE(testing::process_running({"sleep", "314.159"}));
}

TEST_CASE("destroying a running ssh command stops the remote process", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  const std::vector<std::string> sleeper{"sleep", "161.803"};
  {
    auto command = host.start(CommandSpec{sleeper, 0ms, {}}, nullptr);
    auto deadline = Clock::now() + 3s;
    while (!testing::process_running(sleeper) && Clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    REQUIRE(testing::process_running(sleeper));
  }
  auto deadline = Clock::now() + 3s;
  while (testing::process_running(sleeper) && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  CHECK_FALSE(testing::process_running(sleeper));
}

TEST_CASE("Ctrl-C stops a running ssh command and its remote process", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  const std::vector<std::string> sleeper{"sleep", "141.421"};
  auto command = host.start(CommandSpec{sleeper, 0ms, {}}, nullptr);
  Interrupt::reset();
  std::jthread presser([] {
    std::this_thread::sleep_for(300ms);
    Interrupt::request();
  });
  auto started = Clock::now();
  CommandResult result = command->wait(Clock::time_point::max());
  Interrupt::reset();
  CHECK(result.interrupted);
  CHECK_FALSE(result.timed_out);
  CHECK(seconds_since(started) < 4.0);
  auto deadline = Clock::now() + 3s;
  while (testing::process_running(sleeper) && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  CHECK_FALSE(testing::process_running(sleeper));
}

TEST_CASE("ssh upload replaces a file atomically with the given mode", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  std::string target = (server.sshd.directory() / "uploaded.conf").string();
  std::string content("line one\n\0binary\xff tail", 22);
  content += std::string(200000, 'x');  // more than one SSH window chunk
  host.upload(content, target, 0640);
  CHECK(read_file(target) == content);
  struct stat info {};
  REQUIRE(stat(target.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0640);

  host.upload("second\n", target, 0600);
  CHECK(read_file(target) == "second\n");
  int leftovers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(server.sshd.directory())) {
    leftovers += entry.path().filename().string().find("ernic-upload") != std::string::npos;
  }
  CHECK(leftovers == 0);

  std::string error = error_of([&] { host.upload("x", "/nonexistent-dir/file", 0644); });
  CHECK(error.find("upload to /nonexistent-dir/file failed") != std::string::npos);
  CHECK(error.find("g1") != std::string::npos);
}

TEST_CASE("ssh host answers is_listening, has_program and check_alive", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  CHECK(host.is_listening(server.sshd.port()));
  CHECK_FALSE(host.is_listening(static_cast<std::uint16_t>(server.sshd.port() + 1)));
  CHECK(host.has_program("sh"));
  CHECK_FALSE(host.has_program("ernic-no-such-program"));
  CHECK(host.check_alive().empty());
}

TEST_CASE("ssh host key verification", "[ssh]") {
  SshdInNamespace server;
  SshConnectOptions options = server.sshd.connect_options("g1");

  SECTION("a changed host key is refused with a clear error") {
    testing::run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                          (server.sshd.directory() / "other_key").string()});
    std::istringstream other(read_file((server.sshd.directory() / "other_key.pub").string()));
    std::string type, blob;
    other >> type >> blob;
    std::string known = (server.sshd.directory() / "wrong_known_hosts").string();
    std::ofstream(known) << server.ns.inside_address() << " " << type << " " << blob << "\n";
    options.known_hosts = known;
    for (HostKeyPolicy policy : {HostKeyPolicy::kStrict, HostKeyPolicy::kAcceptNew}) {
      options.host_key_policy = policy;
      std::string error = error_of([&] { SshHost("g1", server.ns.inside_address(), options); });
      CHECK(error.find("host key mismatch") != std::string::npos);
      CHECK(error.find("g1") != std::string::npos);
      CHECK(error.find(known) != std::string::npos);
    }
  }

  SECTION("strict refuses an unknown host") {
    options.known_hosts = server.sshd.directory() / "absent_known_hosts";
    std::string error = error_of([&] { SshHost("g1", server.ns.inside_address(), options); });
    CHECK(error.find("is not in") != std::string::npos);
    CHECK(error.find("accept-new") != std::string::npos);
  }

  SECTION("accept-new records the key, which strict then accepts") {
    auto known = server.sshd.directory() / "new" / "known_hosts";
    options.known_hosts = known;
    options.host_key_policy = HostKeyPolicy::kAcceptNew;
    { SshHost first("g1", server.ns.inside_address(), options); }
    std::string recorded = read_file(known.string());
    std::istringstream expected(server.sshd.known_hosts_line());
    std::string host_part, type, blob;
    expected >> host_part >> type >> blob;
    CHECK(recorded.find(blob) != std::string::npos);
    options.host_key_policy = HostKeyPolicy::kStrict;
    SshHost second("g1", server.ns.inside_address(), options);
    CHECK(second.run(CommandSpec{{"true"}, 5s, {}}).ok());
  }

  SECTION("ignore connects without checking and warns") {
    options.known_hosts = server.sshd.directory() / "absent_known_hosts";
    options.host_key_policy = HostKeyPolicy::kIgnore;
    std::vector<std::string> warnings;
    options.warn = [&](const std::string& message) { warnings.push_back(message); };
    SshHost host("g1", server.ns.inside_address(), options);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("NOT verified") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(options.known_hosts));
  }
}

TEST_CASE("ssh authenticates with a key held by the SSH agent", "[ssh]") {
  SshdInNamespace server;
  auto dir = server.sshd.directory();
  std::string socket = (dir / "agent.sock").string();
  pid_t agent = testing::start_program({"ssh-agent", "-D", "-a", socket}, dir / "agent.log");
  struct StopAgent {
    pid_t pid;
    ~StopAgent() {
      kill(pid, SIGTERM);
      testing::wait_program(pid, 5s);
    }
  } stop_agent{agent};
  auto deadline = Clock::now() + 5s;
  while (!std::filesystem::exists(socket) && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE(std::filesystem::exists(socket));
  testing::run_checked(
      {"env", "SSH_AUTH_SOCK=" + socket, "ssh-add", "-q", server.sshd.client_key().string()});
  // No key file, and a home without ~/.ssh/id_*: only the agent can log in.
  std::string old_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  std::string old_sock = std::getenv("SSH_AUTH_SOCK") ? std::getenv("SSH_AUTH_SOCK") : "";
  setenv("HOME", dir.c_str(), 1);
  SshConnectOptions options = server.sshd.connect_options("g1");
  options.target.key.clear();

  unsetenv("SSH_AUTH_SOCK");
  std::string without_agent = error_of([&] { SshHost("g1", server.ns.inside_address(), options); });
  setenv("SSH_AUTH_SOCK", socket.c_str(), 1);
  std::string with_agent;
  CommandResult result;
  try {
    SshHost host("g1", server.ns.inside_address(), options);
    result = host.run(CommandSpec{{"echo", "via-agent"}, 10s, {}});
  } catch (const SshError& error) {
    with_agent = error.what();
  }
  setenv("HOME", old_home.c_str(), 1);
  if (old_sock.empty()) {
    unsetenv("SSH_AUTH_SOCK");
  } else {
    setenv("SSH_AUTH_SOCK", old_sock.c_str(), 1);
  }
  CHECK(without_agent.find("authentication failed for user root (tried ~/.ssh/id_* keys)") !=
        std::string::npos);
  CHECK(with_agent.empty());
  CHECK(result.out == "via-agent\n");
}

TEST_CASE("ssh connection failures name the host and the cause", "[ssh]") {
  SshdInNamespace server;
  SshConnectOptions options = server.sshd.connect_options("g1");

  SECTION("connection refused") {
    options.target.port = static_cast<std::uint16_t>(server.sshd.port() + 1);
    std::string error = error_of([&] { SshHost("g1", server.ns.inside_address(), options); });
    CHECK(error.find("connection refused") != std::string::npos);
    CHECK(error.find("g1") != std::string::npos);
  }

  SECTION("authentication failed") {
    testing::run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                          (server.sshd.directory() / "stranger").string()});
    options.target.key = server.sshd.directory() / "stranger";
    std::string error = error_of([&] { SshHost("g1", server.ns.inside_address(), options); });
    CHECK(error.find("authentication failed for user root") != std::string::npos);
  }

  SECTION("an address nobody answers is reported within the connect timeout") {
    options.target.host = server.ns.unused_address();
    options.connect_timeout = 1500ms;
    auto started = Clock::now();
    std::string error = error_of([&] { SshHost("g1", server.ns.unused_address(), options); });
    CHECK(seconds_since(started) < 2.5);
    bool named_cause = error.find("timed out") != std::string::npos ||
                       error.find("no route to host") != std::string::npos;
    CHECK(named_cause);
    CHECK(error.find(server.ns.unused_address()) != std::string::npos);
  }

  SECTION("a server that accepts but never speaks times out") {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(listen(listener, 4) == 0);
    socklen_t length = sizeof address;
    getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
    options.target.host = "127.0.0.1";
    options.target.port = ntohs(address.sin_port);
    options.connect_timeout = 1000ms;
    auto started = Clock::now();
    std::string error = error_of([&] { SshHost("g1", "127.0.0.1", options); });
    close(listener);
    CHECK(seconds_since(started) < 2.5);
    CHECK(error.find("timed out") != std::string::npos);
  }
}

TEST_CASE("ssh host runs commands from several threads in parallel", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  constexpr int kThreads = 6;
  constexpr int kRounds = 2;
  std::vector<std::string> failures(kThreads);
  // Remote start and end times (ns) of every command: overlapping intervals prove that commands
  // really ran at the same time, whatever the machine's load.
  std::vector<std::pair<long long, long long>> intervals(kThreads * kRounds);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < kRounds; ++round) {
          std::string word = "thread" + std::to_string(t) + "round" + std::to_string(round);
          CommandResult result = host.run(CommandSpec{
              {"sh", "-c", "date +%s%N; echo \"$0\"; sleep 0.5; date +%s%N", word}, 30s, {}});
          std::istringstream lines(result.out);
          std::string begin, echoed, end;
          lines >> begin >> echoed >> end;
          if (!result.ok() || echoed != word || end.empty()) {
            failures[t] =
                word + ": " + result.describe() + " out=" + result.out + " err=" + result.err;
            continue;
          }
          intervals[t * kRounds + round] = {std::stoll(begin), std::stoll(end)};
        }
      });
    }
  }
  for (const auto& failure : failures) {
    CHECK(failure.empty());
  }
  int overlapping_pairs = 0;
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    for (std::size_t j = i + 1; j < intervals.size(); ++j) {
      overlapping_pairs +=
          intervals[i].first < intervals[j].second && intervals[j].first < intervals[i].second;
    }
  }
  CHECK(overlapping_pairs >= kThreads / 2);

  // Channels are closed on both sides: more commands than sshd's MaxSessions (10) work.
  for (int i = 0; i < 14; ++i) {
    CommandResult result = host.run(CommandSpec{{"echo", std::to_string(i)}, 10s, {}});
    REQUIRE(result.out == std::to_string(i) + "\n");
  }
}

TEST_CASE("a host that stops answering is reported by check_alive within its bound", "[ssh]") {
  SshdInNamespace server;
  SshHost host = server.connect();
  auto command = host.start(CommandSpec{{"sleep", "60"}, 0ms, {}}, nullptr);
  REQUIRE(host.check_alive().empty());
  server.sshd.freeze(true);
  auto started = Clock::now();
  std::string reason = host.check_alive();
  double elapsed = seconds_since(started);
  server.sshd.freeze(false);
  CHECK(elapsed < 4.0);  // alive_timeout is 2 s
  CHECK(reason.find("did not answer within") != std::string::npos);
  CHECK(reason.find("g1") != std::string::npos);
  // The host stays gone: commands end at once with the reason instead of hanging.
  CHECK(host.check_alive() == reason);
  CommandResult result = command->wait(Clock::now() + 5s);
  CHECK_FALSE(result.ok());
  CHECK(result.err.find("did not answer") != std::string::npos);
  CHECK(error_of([&] { host.start(CommandSpec{{"true"}, 1s, {}}, nullptr); }) == reason);
}

TEST_CASE("a killed sshd ends the session and its commands", "[ssh]") {
  auto server = std::make_unique<SshdInNamespace>();
  SshHost host = server->connect();
  auto command = host.start(CommandSpec{{"sleep", "60"}, 0ms, {}}, nullptr);
  server.reset();  // kills sshd and its sessions, removes the namespace
  CommandResult result = command->wait(Clock::now() + 10s);
  CHECK_FALSE(result.ok());
  CHECK_FALSE(result.timed_out);
  auto started = Clock::now();
  CHECK_FALSE(host.check_alive().empty());
  CHECK(seconds_since(started) < 3.0);
}

}  // namespace
}  // namespace ernic
