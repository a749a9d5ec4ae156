#include <catch2/catch.hpp>
#include <stdexcept>

#include "benchmarks/registry.h"
#include "builtin_platform.h"
#include "scenario/platform.h"

namespace ernic {
namespace {

using Argv = std::vector<std::string>;

class AddressOnlyHost final : public Host {
 public:
  explicit AddressOnlyHost(std::string address) : address_(std::move(address)) {}
  const std::string& name() const override { return address_; }
  std::string address() const override { return address_; }
  std::string describe() const override { return address_; }
  std::unique_ptr<RunningCommand> start(const CommandSpec&, OutputSink*) override {
    throw std::logic_error("AddressOnlyHost runs nothing");
  }
  void upload(std::string_view, const std::string&, int) override {
    throw std::logic_error("AddressOnlyHost runs nothing");
  }
  bool is_listening(std::uint16_t) override { return false; }
  std::string check_alive() override { return ""; }
  bool has_program(const std::string&) override { return false; }

 private:
  std::string address_;
};

const Benchmark& pingpong() {
  const Platform platform = builtin_platform();
  const Benchmark* found = platform.tool("pingpong");
  REQUIRE(found != nullptr);
  return *found;
}

// The client half of tests/samples/ibv_rc_pingpong-rxe-server-and-client.txt.
constexpr const char* kClientOutput =
    "  local address:  LID 0x0000, QPN 0x000012, PSN 0xdedad9, GID fe80::9c7f:f4ff:feaf:f293\n"
    "  remote address: LID 0x0000, QPN 0x000011, PSN 0xd24ed4, GID fe80::9c7f:f4ff:feaf:f293\n"
    "8192000 bytes in 0.02 seconds = 2956.87 Mbit/sec\n"
    "1000 iters in 0.02 seconds = 22.16 usec/iter\n";

TEST_CASE("pingpong module: commands with device and GID index facts", "[pingpong][module]") {
  AddressOnlyHost server("192.168.1.1");
  PointContext point;
  point.server = &server;
  point.port = 18610;
  point.timeout = std::chrono::milliseconds(30000);
  point.params.set("size", "4096");
  point.params.set("iterations", "100");
  point.server_facts = {{"rdma_device", "rxe_server"}, {"gid_index", "0"}};
  point.client_facts = {{"rdma_device", "rxe_client"}, {"gid_index", "1"}};
  PointCommands commands = pingpong().commands(point);
  REQUIRE(commands.server.has_value());
  CHECK(commands.server->spec.argv == Argv{"ibv_rc_pingpong", "-d", "rxe_server", "-g", "0", "-n",
                                           "100", "-s", "4096", "-p", "18610"});
  CHECK(commands.client.argv == Argv{"ibv_rc_pingpong", "-d", "rxe_client", "-g", "1", "-n", "100",
                                     "-s", "4096", "-p", "18610", "192.168.1.1"});
  CHECK(commands.server->readiness.listening_port == std::optional<std::uint16_t>(18610));
  CHECK(commands.client.timeout == std::chrono::milliseconds(30000));

  point.server_facts.clear();
  CHECK(pingpong().commands(point).server->spec.argv ==
        Argv{"ibv_rc_pingpong", "-n", "100", "-s", "4096", "-p", "18610"});
  point.params.set("gid_index", "2");
  CHECK(pingpong().commands(point).server->spec.argv ==
        Argv{"ibv_rc_pingpong", "-g", "2", "-n", "100", "-s", "4096", "-p", "18610"});
}

TEST_CASE("pingpong module: emulator hosts run it on the instance's verbs device",
          "[pingpong][module][verbs]") {
  AddressOnlyHost server("127.0.0.1");
  PointContext point;
  point.server = &server;
  point.port = 18610;
  point.params.set("size", "4096");
  point.params.set("iterations", "100");
  // What instance_facts() (emulators/placed_instances.h) gives a host attached to an instance.
  auto attached_to = [](const std::string& id) {
    return HostFacts{{"perf_socket", "/run/ernic/" + id + ".sock"},
                     {"ernicctl", "/usr/bin/ernicctl"},
                     {"emulator_instance", id},
                     {"verbs_device", "ernic_" + id},
                     {"verbs_sysfs", "/run/ernic/ernic" + id + "-verbs-sysfs"},
                     {"verbs_library_dir", "/usr/lib/ernicctl"}};
  };
  point.server_facts = attached_to("1");
  point.client_facts = attached_to("2");
  PointCommands commands = pingpong().commands(point);
  REQUIRE(commands.server.has_value());
  CHECK(commands.server->spec.argv == Argv{"ibv_rc_pingpong", "-d", "ernic_1", "-g", "0", "-n",
                                           "100", "-s", "4096", "-p", "18610"});
  CHECK(commands.client.display() ==
        "SYSFS_PATH=/run/ernic/ernic2-verbs-sysfs RDMAV_DRIVERS=/usr/lib/ernicctl/libernic "
        "LD_PRELOAD=/usr/lib/ernicctl/libernic-cdev.so ibv_rc_pingpong -d ernic_2 -g 0 -n 100 "
        "-s 4096 -p 18610 127.0.0.1");
  point.params.set("gid_index", "1");
  CHECK(pingpong().commands(point).client.argv[4] == "1");
}

TEST_CASE("pingpong module: parse, iteration check and the no-GID failure", "[pingpong][module]") {
  PointContext point;
  point.params.set("size", "4096");
  point.params.set("iterations", "1000");
  CommandResult client;
  client.exit_code = 0;
  client.out = kClientOutput;
  ParseOutcome outcome = pingpong().parse(nullptr, client, point);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  CHECK(outcome.metrics.at("bw_Mbps") == Approx(2956.87));
  CHECK(outcome.metrics.at("lat_per_iter_us") == Approx(22.16));

  point.params.set("iterations", "100");
  ParseOutcome mismatch = pingpong().parse(nullptr, client, point);
  CHECK_FALSE(mismatch.ok);
  CHECK(mismatch.error == "client reports 1000 iterations, 100 were asked for");

  CommandResult no_gid;
  no_gid.exit_code = 1;
  no_gid.out = "  local address:  LID 0x0000, QPN 0x000013, PSN 0x44aac0, GID ::\n";
  no_gid.err = "client read/write: No space left on device\nCouldn't read/write remote address\n";
  ParseOutcome failed = pingpong().parse(nullptr, no_gid, point);
  CHECK_FALSE(failed.ok);
  CHECK_THAT(failed.error, Catch::StartsWith("client: line 2: client read/write") &&
                               Catch::Contains("-g GID_INDEX") &&
                               Catch::EndsWith("(exit status 1)"));
}

}  // namespace
}  // namespace ernic
