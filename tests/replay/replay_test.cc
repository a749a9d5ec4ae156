// The replay program on its own: it must behave like the tools it stands in for (listen,
// wait for the client, print, exit with the recorded status), or driver tests prove nothing.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "base/subprocess.h"
#include "replay_tools.h"

namespace ernic {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::ReplayTools;
using testing::unused_tcp_port;

// Whether a TCP socket listens on `port` (IPv4), from /proc/net/tcp.
bool listening_on(std::uint16_t port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    auto colon = local.find(':');
    if (colon != std::string::npos && state == "0A" &&
        std::stoul(local.substr(colon + 1), nullptr, 16) == port) {
      return true;
    }
  }
  return false;
}

bool wait_until_listening(std::uint16_t port, Subprocess& process) {
  auto deadline = steady_clock::now() + std::chrono::seconds(10);
  while (steady_clock::now() < deadline && process.running()) {
    if (listening_on(port)) {
      return true;
    }
    // A bounded poll of /proc in a test, not a fixed sleep in the product.
    std::this_thread::sleep_for(milliseconds(5));
  }
  return false;
}

std::unique_ptr<Subprocess> start(const ReplayTools& tools, std::vector<std::string> argv) {
  argv[0] = (tools.bin_dir() / argv[0]).string();
  SpawnOptions options;
  options.argv = std::move(argv);
  options.env = tools.environment();
  return Subprocess::spawn(options, nullptr);
}

void finish(Subprocess& process) {
  REQUIRE(process.wait_until(steady_clock::now() + std::chrono::seconds(20), false) ==
          Subprocess::WaitEnd::kExited);
  process.finish_output();
}

TEST_CASE("replay: server listens on -p, prints after its client; client exits as recorded",
          "[replay]") {
  ReplayTools tools;
  tools.record_sample("ib_write_bw.server.stdout", "ib_write_bw_s65536.server.txt");
  tools.record_sample("ib_write_bw.client.stdout", "ib_write_bw_s65536.client.txt");
  tools.record("client.stderr", "a warning\n");
  std::uint16_t port = unused_tcp_port();
  std::string port_text = std::to_string(port);

  auto server =
      start(tools, {"ib_write_bw", "-d", "rxe0", "-x", "1", "-s", "65536", "-p", port_text});
  REQUIRE(wait_until_listening(port, *server));
  CHECK(server->stdout_text().empty());  // nothing before a client came
  auto client = start(tools, {"ib_write_bw", "-d", "rxe0", "-x", "1", "-s", "65536", "-p",
                              port_text, "-F", "127.0.0.1"});
  finish(*client);
  finish(*server);
  CHECK(client->exit_code() == 0);
  CHECK(client->stdout_text() ==
        testing::read_text_file(std::string(ERNIC_SAMPLES_DIR) + "/ib_write_bw_s65536.client.txt"));
  CHECK(client->stderr_text() == "a warning\n");
  CHECK(server->exit_code() == 0);
  CHECK(server->stdout_text() ==
        testing::read_text_file(std::string(ERNIC_SAMPLES_DIR) + "/ib_write_bw_s65536.server.txt"));
  CHECK(server->stderr_text().empty());
  CHECK(tools.invocations() ==
        std::vector<std::string>{
            "ib_write_bw server -d rxe0 -x 1 -s 65536 -p " + port_text,
            "ib_write_bw client -d rxe0 -x 1 -s 65536 -p " + port_text + " -F 127.0.0.1"});
}

TEST_CASE("replay: recorded failure, no output, and a tool without a server", "[replay]") {
  ReplayTools tools;
  tools.record_sample("client.stderr", "ib_write_bw_error_no_server.client.txt");
  tools.record("client.exit", "1\n");
  auto refused = start(tools, {"ib_send_bw", "-p", std::to_string(unused_tcp_port()), "127.0.0.1"});
  finish(*refused);
  CHECK(refused->exit_code() == 1);
  CHECK(refused->stdout_text().empty());
  CHECK_THAT(refused->stderr_text(), Catch::StartsWith("Couldn't connect to 10.10.0.1:18515"));

  tools.clear_recordings();
  tools.record_sample("fio.client.stdout", "fio-3.33-json-with-note-prefix.txt");
  tools.record("fio.client.delay_ms", "300");
  auto begin = steady_clock::now();
  auto fio = start(tools, {"fio", "--name=ernic", "--rw=randread", "--output-format=json"});
  finish(*fio);
  CHECK(steady_clock::now() - begin >= milliseconds(300));
  CHECK(fio->exit_code() == 0);
  CHECK_THAT(fio->stdout_text(), Catch::StartsWith("note: both iodepth"));
  CHECK(tools.invocations().back() == "fio client --name=ernic --rw=randread --output-format=json");

  tools.clear_recordings();
  auto silent =
      start(tools, {"ibv_rc_pingpong", "-p", std::to_string(unused_tcp_port()), "127.0.0.1"});
  finish(*silent);
  CHECK(silent->exit_code() == 0);
  CHECK(silent->stdout_text().empty());
  CHECK(silent->stderr_text().empty());
}

TEST_CASE("replay: a server nobody connects to gives up; no script is an error", "[replay]") {
  ReplayTools tools;
  tools.record("server.accept_timeout_ms", "200");
  std::uint16_t port = unused_tcp_port();
  auto lonely = start(tools, {"ib_read_lat", "-s", "64", "-p", std::to_string(port)});
  finish(*lonely);
  CHECK(lonely->exit_code() == 1);
  CHECK_THAT(lonely->stderr_text(),
             Catch::Contains("no client connected to port " + std::to_string(port)));

  SpawnOptions options;
  options.argv = {(tools.bin_dir() / "ib_send_bw").string(), "-p", "1"};
  auto unset = Subprocess::spawn(options, nullptr);
  finish(*unset);
  CHECK(unset->exit_code() == 127);
  CHECK_THAT(unset->stderr_text(), Catch::Contains("ERNIC_REPLAY_DIR is not set"));
}

}  // namespace
}  // namespace ernic
