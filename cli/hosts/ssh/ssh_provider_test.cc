#include "hosts/ssh/ssh_provider.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include "builtin_platform.h"
#include "scenario/platform.h"

#include "base/config_value.h"
#include "base/schema.h"
#include "hosts/registry.h"

namespace ernic {
namespace {

HostSpec spec_of(const std::string& yaml) {
  YAML::Node node = YAML::Load(yaml);
  HostSpec spec;
  spec.name = node["name"].Scalar();
  spec.provider = "ssh";
  spec.address = node["address"] ? node["address"].Scalar() : "";
  spec.config = make_config(node, ssh_host_provider().host_schema(), "s.yaml", "hosts[0]");
  return spec;
}

// What the scenario validator says about a host entry, one message a line.
std::string schema_errors(const std::string& yaml) {
  Diagnostics problems;
  validate(YAML::Load(yaml), ssh_host_provider().host_schema(), "s.yaml", "hosts[0]", problems);
  std::string text;
  for (const auto& problem : problems) {
    text += problem.path + ": " + problem.message + "\n";
  }
  return text;
}

std::string error_of(const HostSpec& spec) {
  try {
    ssh_options_from_spec(spec);
  } catch (const SshError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("ssh host entries become connection options", "[ssh]") {
  SshConnectOptions options = ssh_options_from_spec(spec_of(R"(
name: g1
address: 10.0.0.5
ssh:
  host: 192.168.122.5
  port: 2222
  user: root
  key: /keys/id
  known_hosts: /keys/known_hosts
  host_key_policy: accept-new
  jump: {host: gw.example, user: jumper, key: /keys/jump}
  jump_known_hosts: /keys/jump_known_hosts
  connect_timeout: 3s
  keepalive: 500ms
  alive_timeout: 2s
)"));
  CHECK(options.label == "g1");
  CHECK(options.target.host == "192.168.122.5");
  CHECK(options.target.port == 2222);
  CHECK(options.target.user == "root");
  CHECK(options.target.key == "/keys/id");
  CHECK(options.known_hosts == "/keys/known_hosts");
  CHECK(options.host_key_policy == HostKeyPolicy::kAcceptNew);
  REQUIRE(options.jump);
  CHECK(options.jump->host == "gw.example");
  CHECK(options.jump->port == 22);
  CHECK(options.jump->user == "jumper");
  CHECK(options.jump_known_hosts == "/keys/jump_known_hosts");
  CHECK(options.connect_timeout == std::chrono::seconds(3));
  CHECK(options.keepalive == std::chrono::milliseconds(500));
  CHECK(options.alive_timeout == std::chrono::seconds(2));
  CHECK(options.target.display() == "root@192.168.122.5:2222");
}

TEST_CASE("ssh host entries have defaults and named errors", "[ssh]") {
  SshConnectOptions defaults = ssh_options_from_spec(spec_of("{name: g2, address: 10.0.0.6}"));
  CHECK(defaults.target.host == "10.0.0.6");  // ssh.host defaults to the address
  CHECK(defaults.target.port == 22);
  CHECK(defaults.host_key_policy == HostKeyPolicy::kStrict);
  CHECK(defaults.connect_timeout == std::chrono::seconds(10));
  CHECK(defaults.keepalive == std::chrono::seconds(5));
  CHECK_FALSE(defaults.jump);
  CHECK(defaults.jump_known_hosts.empty());  // the jump's key is checked against known_hosts

  setenv("HOME", "/home/tester", 1);
  CHECK(ssh_options_from_spec(spec_of("{name: g, address: a, ssh: {key: ~/.ssh/id}}")).target.key ==
        "/home/tester/.ssh/id");

  CHECK(error_of(spec_of("{name: g3}")) ==
        "host g3: ssh.host: no address to connect to: give the host an address or ssh.host");
  // Values of the wrong kind are the schema's to refuse, located, before any module reads them.
  CHECK(schema_errors("{ssh: {port: 70000}}") ==
        "hosts[0].ssh.port: expected a whole number from 1 to 65535, found '70000'\n");
  CHECK(schema_errors("{ssh: {host_key_policy: trust}}") ==
        "hosts[0].ssh.host_key_policy: expected one of strict, accept-new, ignore, found "
        "'trust'\n");
  CHECK(schema_errors("{ssh: {keepalive: often}}") ==
        "hosts[0].ssh.keepalive: expected a duration such as 10s, 500ms or 1m30s, found "
        "'often'\n");
  CHECK(error_of(spec_of("{name: g7, address: a, ssh: {jump: {user: x}}}")) ==
        "host g7: ssh.jump.host: no address to connect to: give the host an address or ssh.host");
  CHECK(error_of(spec_of("{name: g8, address: a, ssh: {jump_known_hosts: /k}}")) ==
        "host g8: ssh.jump_known_hosts: given without ssh.jump: there is no jump host to verify");
}

TEST_CASE("ssh provider is registered with its schema", "[ssh]") {
  const Platform platform = builtin_platform();
  HostProvider* provider = platform.provider("ssh");
  REQUIRE(provider != nullptr);
  const ObjectSchema& schema = provider->host_schema();
  const FieldSchema* ssh = schema.find("ssh");
  REQUIRE(ssh != nullptr);
  REQUIRE(ssh->object);
  for (const char* key : {"host", "port", "user", "key", "known_hosts", "host_key_policy", "jump",
                          "jump_known_hosts", "connect_timeout", "keepalive", "alive_timeout"}) {
    CAPTURE(key);
    CHECK(ssh->object->find(key) != nullptr);
  }
  CHECK(ssh->object->find("host_key_policy")->enum_values ==
        std::vector<std::string>{"strict", "accept-new", "ignore"});

  // The scenario validator rejects a typo with a location.
  Diagnostics problems;
  validate(YAML::Load("{ssh: {prot: 22}}"), schema, "s.yaml", "hosts[0]", problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].message.find("prot") != std::string::npos);

  std::vector<HostSpec> hosts = {spec_of("{name: g1, address: 10.0.0.5, ssh: {user: root}}"),
                                 spec_of("{name: g2, ssh: {port: 0}}")};
  Diagnostics checked;
  provider->check(hosts, Config(), checked);
  REQUIRE(checked.size() == 1);
  CHECK(checked[0].message.find("host g2") != std::string::npos);
  CHECK(checked[0].file == "s.yaml");
  CHECK(checked[0].line == 1);  // located at the entry's ssh block
  CHECK(checked[0].path == "hosts[0].ssh");

  auto lines = provider->describe({hosts[0]}, ProviderContext{});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("ssh root@10.0.0.5:22 as g1") != std::string::npos);
  CHECK(lines[0].find("host_key_policy strict") != std::string::npos);
  CHECK(provider->planned_addresses({spec_of("{name: g, ssh: {host: 1.2.3.4}}")}, Config()) ==
        std::vector<std::string>{"1.2.3.4"});
}

TEST_CASE("remote commands run under a pid-announcing wrapper", "[ssh]") {
  CommandSpec spec{{"iperf3", "-c", "10.0.0.5", "it's"}, {}, {{"A", "b c"}}};
  CHECK(wrap_command(spec) ==
        R"(exec /bin/sh -c 'printf "ernic-pid:%s\n" "$$" >&2; exec "$@"' ernic env 'A=b c' )"
        R"(iperf3 -c 10.0.0.5 'it'\''s')");
  CHECK_THROWS_AS(wrap_command(CommandSpec{}), SshError);
  CHECK(parse_host_key_policy("accept-new") == HostKeyPolicy::kAcceptNew);
  CHECK_FALSE(parse_host_key_policy("yes"));
  CHECK(host_key_policy_name(HostKeyPolicy::kIgnore) == "ignore");
}

}  // namespace
}  // namespace ernic
