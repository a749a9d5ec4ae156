// up.json and instances.json through their types: today's files come back byte for byte, what
// rocm-ernic's clients read is where they read it, and a mistyped field is named by its path.
#include "run/up_state.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "base/file_text.h"
#include "scratch_dir.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

const fs::path kSamples = fs::path(ERNIC_SOURCE_DIR) / "tests" / "state_samples";

std::string sample(const std::string& name) {
  std::string text = read_file_text(kSamples / name);
  REQUIRE_FALSE(text.empty());
  return text;
}

TEST_CASE("up.json samples are read and written back byte for byte", "[bringup][state]") {
  for (const char* name :
       {"up-embedded.json", "up-attached-restarted.json", "up-external-placed.json"}) {
    INFO(name);
    const std::string text = sample(name);
    CHECK(up_state_text(parse_up_state(text, name)) == text);
  }
}

TEST_CASE("instances.json samples are read and written back byte for byte", "[bringup][state]") {
  for (const char* name : {"instances-embedded.json", "instances-external-placed.json"}) {
    INFO(name);
    const std::string text = sample(name);
    CHECK(instance_manifest_text(parse_instance_manifest(text, name)) == text);
  }
}

TEST_CASE("the typed state holds what its readers use", "[bringup][state]") {
  UpState state = parse_up_state(sample("up-external-placed.json"), "up.json");
  CHECK(state.run_token == "5b0e11");
  CHECK(state.emulator_kind == "external");
  CHECK(state.log_dir_created == false);
  CHECK_FALSE(state.attached_runs.has_value());
  REQUIRE(state.hosts.size() == 1);
  CHECK(state.hosts[0].fact("uri") == "qemu+ssh://root@hv1.lab/system");
  CHECK(state.hosts[0].fact("no such fact").empty());
  REQUIRE(state.instances.size() == 2);

  const ManifestInstance& local = state.instances[0];
  CHECK(local.pid == 90210);
  CHECK(std::get<std::string>(local.gids) == "fe80::a0:d1ff:fe00:1,192.168.200.10");
  CHECK_FALSE(local.on.has_value());
  CHECK_FALSE(local.remote.has_value());
  REQUIRE(local.vm.has_value());
  CHECK_FALSE(local.vm->attached);
  CHECK_FALSE(local.vm->ssh_port.has_value());

  const ManifestInstance& placed = state.instances[1];
  CHECK(placed.on == "B");
  CHECK(std::get<std::vector<std::string>>(placed.gids).size() == 2);
  REQUIRE(placed.remote.has_value());
  // The remote part carries the entry's own id, role, pid and socket.
  CHECK(placed.remote->describe() == "instance 2 (worker on B, pid 3141)");
  CHECK(placed.remote->socket == placed.socket);
  CHECK(placed.remote->dir == "/tmp/ernic-5b0e11-B");
  CHECK(placed.remote->ssh.label == "B");
  CHECK(placed.remote->ssh.target.display() == "ernic@10.0.0.2:2222");
  REQUIRE(placed.remote->ssh.jump.has_value());
  CHECK(placed.remote->ssh.jump->host == "bastion.lab");
  CHECK(placed.remote->ssh.host_key_policy == HostKeyPolicy::kAcceptNew);
  CHECK(placed.remote->ssh.connect_timeout == std::chrono::milliseconds(10000));
  CHECK(state.find_instance(2) == &placed);
  CHECK(state.find_instance(3) == nullptr);
}

// rocm-ernic's bring-up CLI lists instances[], its CI helper checks every instances[].pid alive,
// its playbooks read instances[].id and vm.{ssh_port,ssh_user,vm_name}.
TEST_CASE("instances.json keeps what rocm-ernic's clients read, as numbers and texts",
          "[bringup][state]") {
  InstanceManifest manifest;
  ManifestInstance instance;
  instance.id = 1;
  instance.role = "manager";
  instance.pid = 4242;
  instance.gids = std::vector<std::string>{"fe80::1"};
  instance.vm = InstanceGuest{
      .attached = true, .vm_name = "guest1", .ssh_port = 22, .ssh_user = "root", .address = {}};
  manifest.instances.push_back(instance);
  json written = json::parse(instance_manifest_text(manifest));
  REQUIRE(written["instances"].is_array());
  const json& entry = written["instances"][0];
  CHECK(entry["pid"].is_number_integer());
  CHECK(entry["pid"] == 4242);
  CHECK(entry["id"] == 1);
  CHECK(entry["vm"]["ssh_port"] == 22);
  CHECK(entry["vm"]["ssh_user"] == "root");
  CHECK(entry["vm"]["vm_name"] == "guest1");
  CHECK_FALSE(entry["vm"].contains("address"));  // unset fields stay out
  CHECK_FALSE(entry.contains("on"));
  CHECK_FALSE(entry.contains("remote"));
}

TEST_CASE("a mistyped field of up.json is named by its path", "[bringup][state]") {
  json state = json::parse(sample("up-external-placed.json"));
  auto error_of = [](const json& broken) {
    try {
      parse_up_state(broken.dump(2), "up.json");
    } catch (const JsonFieldError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  json pid_text = state;
  pid_text["instances"][1]["pid"] = "3141";
  CHECK(error_of(pid_text) == "up.json: instances[1].pid: expected a number, not string");
  json fractional = state;
  fractional["instances"][0]["pid"] = 1.5;
  CHECK(error_of(fractional) == "up.json: instances[0].pid: expected a whole number, not 1.5");
  json port_range = state;
  port_range["instances"][1]["remote"]["ssh"]["target"]["port"] = 70000;
  CHECK_THAT(error_of(port_range),
             Contains("up.json: instances[1].remote.ssh.target.port: 70000 is out of range"));
  json fact = state;
  fact["hosts"][0]["facts"]["emulator_instance"] = 2;
  CHECK(error_of(fact) ==
        "up.json: hosts[0].facts.emulator_instance: expected a string, not number");
  json hosts = state;
  hosts["hosts"] = json::object();
  CHECK(error_of(hosts) == "up.json: hosts: expected an array, not object");
  json created = state;
  created["log_dir_created"] = "no";
  CHECK(error_of(created) == "up.json: log_dir_created: expected true or false, not string");
  json no_dir = state;
  no_dir["instances"][1]["remote"].erase("dir");
  CHECK(error_of(no_dir) == "up.json: instances[1].remote.dir: missing");
  json policy = state;
  policy["instances"][1]["remote"]["ssh"]["host_key_policy"] = "trusting";
  CHECK_THAT(error_of(policy),
             Contains("up.json: instances[1].remote.ssh.host_key_policy: 'trusting' is not"));
  CHECK(error_of(json::array()) == "up.json: expected an object, not array");
  CHECK_THROWS_WITH(parse_up_state("{\"run_token\": ", "up.json"), Contains("up.json: not JSON"));
}

// Older states, and the ones tests make by hand, leave fields out: what is missing keeps its
// default, and what was absent stays absent when the state is written back.
TEST_CASE("missing fields keep their defaults and stay out when written back", "[bringup][state]") {
  const std::string text =
      json{{"run_token", "abc123"}, {"hosts", {{{"name", "g1"}, {"provider", "libvirt"}}}}}.dump(2);
  UpState state = parse_up_state(text, "up.json");
  CHECK(state.run_token == "abc123");
  REQUIRE(state.hosts.size() == 1);
  CHECK(state.hosts[0].facts.empty());
  CHECK(state.instances.empty());
  json written = json::parse(up_state_text(state));
  for (const char* absent :
       {"up_since", "emulator_kind", "log_dir", "log_dir_created", "instance_files",
        "attached_runs", "last_attached_run", "instances_restarted"}) {
    INFO(absent);
    CHECK_FALSE(written.contains(absent));
  }
}

TEST_CASE("the state is written whole, and no state reads as nothing up", "[bringup][state]") {
  testing::ScratchDir dir("ernic-up-state");
  CHECK_FALSE(read_up_state(dir / "up.json").has_value());
  UpState state = parse_up_state(sample("up-embedded.json"), "up.json");
  write_up_state(dir / "up.json", state);
  CHECK(read_file_text(dir / "up.json") == sample("up-embedded.json"));
  write_instance_manifest(dir / "instances.json", InstanceManifest{state.instances});
  CHECK(read_file_text(dir / "instances.json") == sample("instances-embedded.json"));
  auto read_back = read_up_state(dir / "up.json");
  REQUIRE(read_back.has_value());
  CHECK(read_back->instances.size() == 2);
  std::ofstream(dir / "broken.json") << R"({"instances": [{"id": "one"}]})";
  CHECK_THROWS_WITH(read_up_state(dir / "broken.json"),
                    Contains("broken.json: instances[0].id: expected a number, not string"));
}

}  // namespace
}  // namespace ernic
