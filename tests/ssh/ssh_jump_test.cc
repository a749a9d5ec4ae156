// Connections through a jump host: namespace J runs an sshd the test reaches; namespace T runs
// one reachable only from J, over a NamespaceLink. Everything a direct connection guarantees
// (host keys, timeouts, remote process groups) holds through the jump, and a jump that fails
// is named in the error.
#include "hosts/ssh/ssh_jump.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "base/interrupt.h"
#include "hosts/libvirt/libvirt_config.h"
#include "hosts/ssh/ssh_host.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

using testing::error_of;
using testing::NamespaceLink;
using testing::seconds_since;
using testing::SshdOptions;
using testing::SshdServer;
using testing::TestNamespace;
using namespace std::chrono_literals;

bool gone_within(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (testing::process_running(argv) && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  return !testing::process_running(argv);
}

// A known_hosts file that records a freshly made key (not the server's) for `host_part`.
std::filesystem::path wrong_known_hosts(const SshdServer& server, const std::string& host_part) {
  auto key = server.directory() / "impostor_key";
  testing::run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key.string()});
  std::ifstream public_key(key.string() + ".pub");
  std::string type, blob;
  public_key >> type >> blob;
  auto file = server.directory() / "wrong_known_hosts";
  std::ofstream(file) << host_part << " " << type << " " << blob << "\n";
  return file;
}

// J (reachable, its sshd replaceable to kill it) and T (reachable only from J).
struct JumpTopology {
  TestNamespace j{"jj"};
  TestNamespace t{"jt"};
  NamespaceLink link{j, t};
  std::unique_ptr<SshdServer> j_sshd =
      std::make_unique<SshdServer>(SshdOptions{j.name(), j.inside_address(), 0, false});
  SshdServer t_sshd{SshdOptions{t.name(), link.b_address(), 0, false}};

  // T's options through J, each host's key in its own known_hosts.
  SshConnectOptions options() const {
    SshConnectOptions options = t_sshd.connect_options("t");
    SshConnectOptions jump = j_sshd->connect_options("j");
    options.jump = jump.target;
    options.jump_known_hosts = jump.known_hosts;
    return options;
  }
  std::string jump_name() const { return jump_host_name(j_sshd->connect_options("j").target); }
};

TEST_CASE("a command runs on a host reached only through a jump host", "[ssh][jump]") {
  JumpTopology net;
  // Not reachable directly from the test's namespace.
  SshConnectOptions direct = net.t_sshd.connect_options("t");
  direct.connect_timeout = 1500ms;
  CHECK_FALSE(error_of([&] { SshHost("t", net.link.b_address(), direct); }).empty());

  SshHost host("t", net.link.b_address(), net.options());
  CommandResult result = host.run(CommandSpec{{"ip", "-o", "-4", "addr", "show"}, 10s, {}});
  INFO(result.out << result.err);
  REQUIRE(result.ok());
  CHECK(result.out.find(net.link.b_address() + "/") != std::string::npos);
  CHECK(host.check_alive().empty());
  CHECK(host.is_listening(net.t_sshd.port()));
  CHECK(host.describe().find("via root@" + net.j.inside_address()) != std::string::npos);
  std::string payload(300000, 'j');
  host.upload(payload, (net.t_sshd.directory() / "through-jump").string(), 0644);
  std::ifstream uploaded(net.t_sshd.directory() / "through-jump", std::ios::binary);
  std::stringstream content;
  content << uploaded.rdbuf();
  CHECK(content.str() == payload);
}

TEST_CASE("both host keys are verified through a jump host, each naming its host", "[ssh][jump]") {
  JumpTopology net;
  SshConnectOptions options = net.options();
  std::string target = "ssh to t (" + options.target.display() + " via " + net.jump_name() + ")";

  SECTION("a wrong key for the target is refused naming the target") {
    options.known_hosts = wrong_known_hosts(net.t_sshd, net.link.b_address());
    std::string error = error_of([&] { SshHost("t", net.link.b_address(), options); });
    CHECK(error.rfind(target + ": host key mismatch", 0) == 0);
  }
  SECTION("a wrong key for the jump host is refused naming the jump host") {
    options.jump_known_hosts = wrong_known_hosts(*net.j_sshd, net.j.inside_address());
    std::string error = error_of([&] { SshHost("t", net.link.b_address(), options); });
    CHECK(error.rfind(target + ": " + net.jump_name() + ": host key mismatch", 0) == 0);
  }
  SECTION("an unknown jump host is refused under strict") {
    options.jump_known_hosts = net.j_sshd->directory() / "absent_known_hosts";
    std::string error = error_of([&] { SshHost("t", net.link.b_address(), options); });
    CHECK(error.find(net.jump_name() + ": host key") != std::string::npos);
    CHECK(error.find("is not in") != std::string::npos);
  }
  SECTION("a client key the jump host does not accept is refused naming the jump host") {
    testing::run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                          (net.j_sshd->directory() / "stranger").string()});
    options.jump->key = net.j_sshd->directory() / "stranger";
    std::string error = error_of([&] { SshHost("t", net.link.b_address(), options); });
    CHECK(error.find(net.jump_name() + ": authentication failed for user root") !=
          std::string::npos);
  }
  SECTION("a target the jump host cannot reach is named with the jump host") {
    options.target.port = static_cast<std::uint16_t>(net.t_sshd.port() + 1);
    std::string error = error_of([&] { SshHost("t", net.link.b_address(), options); });
    CHECK(error.find(net.jump_name() + " cannot reach " + net.link.b_address()) !=
          std::string::npos);
  }
}

TEST_CASE("a dead or frozen jump host fails the connection within its timeout, naming the jump",
          "[ssh][jump]") {
  JumpTopology net;
  SshConnectOptions options = net.options();
  options.connect_timeout = 1500ms;

  SECTION("frozen before connecting") {
    net.j_sshd->freeze(true);
    auto started = Clock::now();
    std::string error = error_of([&] { SshHost("t", net.link.b_address(), options); });
    double elapsed = seconds_since(started);
    net.j_sshd->freeze(false);
    CHECK(elapsed < 4.0);
    INFO(error);
    CHECK(error.find(net.jump_name() + ": timed out after 1.50 s (connect_timeout)") !=
          std::string::npos);
  }
  SECTION("killed before connecting") {
    std::string jump_name = net.jump_name();
    net.j_sshd.reset();
    std::string error = error_of([&] { SshHost("t", net.link.b_address(), options); });
    CHECK(error.find(jump_name + ": connection refused") != std::string::npos);
  }
  SECTION("frozen while connected: check_alive reports it within alive_timeout") {
    SshHost host("t", net.link.b_address(), options);
    auto command = host.start(CommandSpec{{"sleep", "60"}, 0ms, {}}, nullptr);
    REQUIRE(host.check_alive().empty());
    net.j_sshd->freeze(true);
    auto started = Clock::now();
    std::string reason = host.check_alive();
    double elapsed = seconds_since(started);
    net.j_sshd->freeze(false);
    CHECK(elapsed < 4.0);  // alive_timeout is 2 s
    CHECK(reason.find("did not answer within") != std::string::npos);
    CHECK(reason.find(net.jump_name()) != std::string::npos);
    CHECK_FALSE(command->wait(Clock::now() + 5s).ok());
  }
  SECTION("killed while connected: the command ends and the reason names the jump") {
    SshHost host("t", net.link.b_address(), options);
    auto command = host.start(CommandSpec{{"sleep", "60"}, 0ms, {}}, nullptr);
    REQUIRE(host.check_alive().empty());
    std::string jump_name = net.jump_name();
    net.j_sshd.reset();  // the listener and its session processes
    auto started = Clock::now();
    CommandResult result = command->wait(Clock::now() + 10s);
    CHECK(seconds_since(started) < 5.0);
    CHECK_FALSE(result.ok());
    std::string reason = host.check_alive();
    CHECK(reason.find(jump_name) != std::string::npos);
  }
}

TEST_CASE("a command stopped through a jump host loses its whole process group on the target",
          "[ssh][jump]") {
  JumpTopology net;
  SshHost host("t", net.link.b_address(), net.options());
  // Two processes in the command's group: the shell's background child dies with it.
  const std::vector<std::string> background{"sleep", "271.101"};
  const std::vector<std::string> foreground{"sleep", "271.102"};
  const std::vector<std::string> command{"sh", "-c", "sleep 271.101 & sleep 271.102; wait"};

  SECTION("on timeout") {
    auto started = Clock::now();
    CommandResult result = host.run(CommandSpec{command, 800ms, {}});
    CHECK(result.timed_out);
    CHECK(seconds_since(started) < 5.0);
  }
  SECTION("on stop (the command dropped)") {
    auto running = host.start(CommandSpec{command, 0ms, {}}, nullptr);
    auto deadline = Clock::now() + 5s;
    while (!testing::process_running(foreground) && Clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    REQUIRE(testing::process_running(background));
    running.reset();
  }
  SECTION("on Ctrl-C") {
    auto running = host.start(CommandSpec{command, 0ms, {}}, nullptr);
    Interrupt::reset();
    std::jthread presser([] {
      std::this_thread::sleep_for(400ms);
      Interrupt::request();
    });
    CommandResult result = running->wait(Clock::time_point::max());
    Interrupt::reset();
    CHECK(result.interrupted);
  }
  CHECK(gone_within(background, 3s));
  CHECK(gone_within(foreground, 3s));
  // The session survives its commands.
  CHECK(host.run(CommandSpec{{"true"}, 5s, {}}).ok());
}

TEST_CASE("SSH destinations parse as user@host[:port]", "[ssh][jump]") {
  SshEndpoint plain = parse_ssh_destination("gw.example");
  CHECK(plain.host == "gw.example");
  CHECK(plain.user.empty());
  CHECK(plain.port == 22);
  SshEndpoint full = parse_ssh_destination("admin@10.1.2.1:2222");
  CHECK(full.user == "admin");
  CHECK(full.host == "10.1.2.1");
  CHECK(full.port == 2222);
  SshEndpoint v6 = parse_ssh_destination("root@[fd00::1]:23");
  CHECK(v6.host == "fd00::1");
  CHECK(v6.port == 23);
  for (const char* bad : {"", "@gw", "root@", "gw:", "gw:0", "gw:70000", "gw:22x", "[fd00::1"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_ssh_destination(bad),
                      Catch::StartsWith(fmt::format("'{}' is not an SSH destination", bad)));
  }
}

TEST_CASE("guests of a remote libvirt URI are reached through its host", "[ssh][jump]") {
  LibvirtRunConfig run;
  CHECK_FALSE(guest_jump(run, "qemu:///system"));
  CHECK_FALSE(guest_jump(run, "qemu+ssh:///system"));
  CHECK_FALSE(guest_jump(run, "qemu+tls://host/system"));
  auto jump = guest_jump(
      run, "qemu+ssh://admin@10.1.2.1:2222/system?keyfile=/k/id%20x&no_verify=0&known_hosts=/kh");
  REQUIRE(jump);
  CHECK(jump->host.display() == "admin@10.1.2.1:2222");
  CHECK(jump->host.key == "/k/id x");
  CHECK(jump->known_hosts == "/kh");
  auto libssh = guest_jump(run, "qemu+libssh://root@gw/system");
  REQUIRE(libssh);
  CHECK(libssh->host.display() == "root@gw:22");
  CHECK(libssh->known_hosts.empty());

  // The scenario's jump wins over the URI's host; jump_key and jump_known_hosts apply to both.
  run.jump_key = "/keys/jump";
  run.jump_known_hosts = "/keys/known";
  jump = guest_jump(run, "qemu+ssh://root@10.1.2.1/system?keyfile=/k");
  REQUIRE(jump);
  CHECK(jump->host.key == "/keys/jump");
  CHECK(jump->known_hosts == "/keys/known");
  run.jump = parse_ssh_destination("ops@bastion:2200");
  jump = guest_jump(run, "qemu:///system");
  REQUIRE(jump);
  CHECK(jump->host.display() == "ops@bastion:2200");
  CHECK(jump->host.key == "/keys/jump");
}

}  // namespace
}  // namespace ernic
