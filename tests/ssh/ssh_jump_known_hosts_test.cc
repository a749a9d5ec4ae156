// `ssh.jump_known_hosts` of an ssh host entry: the jump host's key is verified against that
// file, not against `known_hosts` (which then needs only the target's key).
#include <catch2/catch.hpp>
#include <fstream>

#include "base/config_value.h"
#include "hosts/ssh/ssh_provider.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

using namespace std::chrono_literals;
using testing::NamespaceLink;
using testing::SshdOptions;
using testing::SshdServer;
using testing::TestNamespace;

// J (reachable from here) and T (reachable only from J, over a link).
struct JumpAndTarget {
  TestNamespace j{"kj"};
  TestNamespace t{"kt"};
  NamespaceLink link{j, t};
  SshdServer j_sshd{SshdOptions{j.name(), j.inside_address(), 0, false}};
  SshdServer t_sshd{SshdOptions{t.name(), link.b_address(), 0, false}};

  // An ssh host entry for T through J; `jump_known_hosts` omitted when empty.
  HostSpec spec(const std::string& jump_known_hosts) const {
    std::string yaml = "{name: t, address: " + link.b_address() +
                       ", ssh: {user: root, key: " + t_sshd.client_key().string() +
                       ", known_hosts: " + t_sshd.known_hosts_file().string() +
                       ", connect_timeout: 5s, jump: {host: " + j.inside_address() +
                       ", user: root, key: " + j_sshd.client_key().string() + "}" +
                       (jump_known_hosts.empty() ? "" : ", jump_known_hosts: " + jump_known_hosts) +
                       "}}";
    HostSpec entry;
    entry.name = "t";
    entry.provider = "ssh";
    entry.address = link.b_address();
    entry.config =
        make_config(YAML::Load(yaml), ssh_host_provider().host_schema(), "s.yaml", "hosts[0]");
    return entry;
  }
};

std::string connect_error(const HostSpec& spec) {
  try {
    SshHost host("t", spec.address, ssh_options_from_spec(spec));
    CommandResult result = host.run(CommandSpec{{"true"}, 10s, {}});
    return result.ok() ? "" : result.describe() + result.err;
  } catch (const SshError& error) {
    return error.what();
  }
}

TEST_CASE("ssh.jump_known_hosts holds the jump host's key apart from the target's", "[ssh][jump]") {
  JumpAndTarget net;
  // known_hosts has only T's key: without jump_known_hosts the jump's key is unknown.
  std::string error = connect_error(net.spec(""));
  CHECK(error.find("jump host root@" + net.j.inside_address()) != std::string::npos);
  CHECK(error.find("is not in") != std::string::npos);
  // With J's key in its own file both hops verify and the command runs on T.
  CHECK(connect_error(net.spec(net.j_sshd.known_hosts_file().string())) == "");
}

}  // namespace
}  // namespace ernic
