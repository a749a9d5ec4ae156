#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "benchmarks/registry.h"
#include "builtin_platform.h"
#include "scenario/platform.h"

#include "samples.h"

namespace ernic {
namespace {

using Argv = std::vector<std::string>;

using testing::read_sample;

// Command lines only need the server's address; nothing here runs a command.
class AddressOnlyHost final : public Host {
 public:
  explicit AddressOnlyHost(std::string address) : address_(std::move(address)) {}
  const std::string& name() const override { return name_; }
  std::string address() const override { return address_; }
  std::string describe() const override { return name_ + " (" + address_ + ")"; }
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
  std::string name_ = "server";
  std::string address_;
};

struct PointFixture {
  AddressOnlyHost server_host{"10.10.0.1"};
  AddressOnlyHost client_host{"10.10.0.2"};
  PointContext point;

  PointFixture() {
    point.benchmark = "rdma";
    point.server = &server_host;
    point.client = &client_host;
    point.port = 18600;
    point.timeout = std::chrono::milliseconds(120000);
  }
  PointFixture& param(const std::string& name, const std::string& value) {
    point.params.set(name, value);
    return *this;
  }
};

const Benchmark& perftest() {
  const Platform platform = builtin_platform();
  const Benchmark* found = platform.tool("perftest");
  REQUIRE(found != nullptr);
  return *found;
}

CommandResult exited(int code, std::string out, std::string err = "") {
  CommandResult result;
  result.exit_code = code;
  result.out = std::move(out);
  result.err = std::move(err);
  return result;
}

TEST_CASE("perftest module: bw point with device and GID index from setup facts",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "write").param("mode", "bw").param("size", "65536").param("iterations", "1000");
  f.point.server_facts = {{"rdma_device", "rxe0"}, {"gid_index", "1"}};
  f.point.client_facts = {{"rdma_device", "rxe1"}, {"gid_index", "3"}};
  PointCommands commands = perftest().commands(f.point);
  REQUIRE(commands.server.has_value());
  CHECK(commands.server->spec.argv == Argv{"ib_write_bw", "-d", "rxe0", "-x", "1", "-s", "65536",
                                           "-n", "1000", "--report_gbits", "-p", "18600"});
  CHECK(commands.client.argv == Argv{"ib_write_bw", "-d", "rxe1", "-x", "3", "-s", "65536", "-n",
                                     "1000", "--report_gbits", "-p", "18600", "10.10.0.1"});
  CHECK(commands.server->readiness.listening_port == std::optional<std::uint16_t>(18600));
  CHECK_FALSE(commands.server->readiness.output_line.has_value());
  CHECK(commands.server->readiness.description == "ib_write_bw server listening on port 18600");
  CHECK(commands.client.timeout == std::chrono::milliseconds(120000));
}

TEST_CASE("perftest module: lat point has no --report_gbits; depth and QPs passed",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "read").param("mode", "lat").param("size", "4096").param("iterations", "50");
  f.param("tx_depth", "1").param("qps", "2").param("report_gbits", "true");
  f.point.server_facts = {{"rdma_device", "rxe0"}, {"gid_index", "1"}};
  f.point.client_facts = f.point.server_facts;
  PointCommands commands = perftest().commands(f.point);
  CHECK(commands.server->spec.argv == Argv{"ib_read_lat", "-d", "rxe0", "-x", "1", "-s", "4096",
                                           "-n", "50", "-t", "1", "-q", "2", "-p", "18600"});
  CHECK(commands.client.argv.back() == "10.10.0.1");
}

TEST_CASE("perftest module: without facts, -d is left out and -x comes from params",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "send").param("mode", "bw").param("size", "1048576").param("iterations", "100");
  f.param("report_gbits", "false");
  CHECK(perftest().commands(f.point).client.argv ==
        Argv{"ib_send_bw", "-s", "1048576", "-n", "100", "-p", "18600", "10.10.0.1"});
  f.param("gid_index", "2").param("extra_args", " -F   --cpu_util ");
  CHECK(perftest().commands(f.point).server->spec.argv == Argv{"ib_send_bw", "-x", "2", "-s",
                                                               "1048576", "-n", "100", "-p",
                                                               "18600", "-F", "--cpu_util"});
  // A fact from the gid-index step wins over the scenario's fallback.
  f.point.client_facts = {{"gid_index", "5"}};
  CHECK(perftest().commands(f.point).client.argv == Argv{"ib_send_bw", "-x", "5", "-s", "1048576",
                                                         "-n", "100", "-p", "18600", "-F",
                                                         "--cpu_util", "10.10.0.1"});
}

// What instance_facts() (emulators/placed_instances.h) gives a host attached to instance `id`.
HostFacts instance_host_facts(int id) {
  return {{"perf_socket", fmt::format("/run/ernic/{}.sock", id)},
          {"ernicctl", "/usr/local/bin/ernicctl"},
          {"emulator_instance", std::to_string(id)},
          {"verbs_device", fmt::format("ernic_{}", id)},
          {"verbs_sysfs", fmt::format("/run/ernic/ernic{}-verbs-sysfs", id)},
          {"verbs_library_dir", "/usr/local/lib/ernicctl"}};
}

using Env = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("perftest module: emulator hosts run Debian's perftest on the instance's verbs device",
          "[perftest][module][verbs]") {
  PointFixture f;
  f.param("program", "perftest").param("verb", "write").param("mode", "bw").param("size", "65536");
  f.param("iterations", "500").param("tx_depth", "64").param("qps", "2");
  f.param("extra_args", "-F --cpu_util");
  f.point.server_facts = instance_host_facts(1);
  f.point.client_facts = instance_host_facts(2);
  PointCommands commands = perftest().commands(f.point);
  REQUIRE(commands.server.has_value());
  // Every declared parameter and extra_args, the instance's device and its first GID.
  CHECK(commands.server->spec.argv == Argv{"ib_write_bw", "-d", "ernic_1", "-x", "0", "-s", "65536",
                                           "-n", "500", "-t", "64", "-q", "2", "--report_gbits",
                                           "-p", "18600", "-F", "--cpu_util"});
  CHECK(commands.client.argv == Argv{"ib_write_bw", "-d", "ernic_2", "-x", "0", "-s", "65536", "-n",
                                     "500", "-t", "64", "-q", "2", "--report_gbits", "-p", "18600",
                                     "-F", "--cpu_util", "10.10.0.1"});
  // Each side under the environment that points libibverbs at its own instance.
  CHECK(commands.server->spec.env ==
        Env{{"SYSFS_PATH", "/run/ernic/ernic1-verbs-sysfs"},
            {"RDMAV_DRIVERS", "/usr/local/lib/ernicctl/libernic"},
            {"LD_PRELOAD", "/usr/local/lib/ernicctl/libernic-cdev.so"}});
  CHECK(commands.client.env.at(0) ==
        std::pair<std::string, std::string>{"SYSFS_PATH", "/run/ernic/ernic2-verbs-sysfs"});
  // What the dry run prints and the record keeps: the command with its environment.
  CHECK(commands.client.display().starts_with(
      "SYSFS_PATH=/run/ernic/ernic2-verbs-sysfs RDMAV_DRIVERS=/usr/local/lib/ernicctl/libernic "
      "LD_PRELOAD=/usr/local/lib/ernicctl/libernic-cdev.so ib_write_bw -d ernic_2 -x 0 "));
  CHECK(commands.server->readiness.description == "ib_write_bw server listening on port 18600");
  CHECK(perftest().measured_by(f.point.params, f.point.client_facts) == "perftest");

  // A GID index the scenario gives wins over the instance's first GID; duration mode is -D
  // without the load generator's per-second flag; latency tests print every iteration.
  f.param("gid_index", "1").param("duration", "3000").param("mode", "lat");
  Argv client = perftest().commands(f.point).client.argv;
  CHECK(Argv(client.begin(), client.begin() + 9) ==
        Argv{"ib_write_lat", "-d", "ernic_2", "-x", "1", "-s", "65536", "-D", "3"});
  CHECK(std::count(client.begin(), client.end(), "--report-per-second") == 0);
}

TEST_CASE("perftest module: emulator hosts need perftest, or name the load generator instead",
          "[perftest][module][verbs]") {
  PointParams perftest_params;
  perftest_params.set("program", "perftest");
  std::vector<Benchmark::Program> needed =
      perftest().programs_for(instance_host_facts(1), perftest_params);
  REQUIRE(needed.size() == 6);
  CHECK(needed.front().name == "ib_send_bw");
  CHECK(needed.front().debian_package == "perftest");
  CHECK_THAT(needed.front().instead, Catch::Contains("`program: load-generator`"));
  // Hosts with a NIC of their own have no other way to measure.
  CHECK(perftest().programs_for({{"rdma_device", "rxe0"}}, perftest_params).front().instead == "");

  PointParams generator_params;
  generator_params.set("program", "load-generator");
  CHECK(perftest().programs_for(instance_host_facts(1), generator_params).empty());
  CHECK(perftest().measured_by(generator_params, instance_host_facts(2)) ==
        "ernicctl load generator");
}

TEST_CASE(
    "perftest module: an emulator host without the verbs provider's folder is an error "
    "naming the cause",
    "[perftest][module][verbs]") {
  PointFixture f;
  f.param("verb", "send").param("mode", "bw");
  f.point.server_facts = instance_host_facts(1);
  f.point.client_facts = instance_host_facts(2);
  f.point.server_facts["ernicctl"] = "ernicctl";
  f.point.server_facts["verbs_library_dir"] = "";
  CHECK_THROWS_WITH(perftest().commands(f.point),
                    Catch::Contains("emulator instance 1 runs `ernicctl` (found in PATH") &&
                        Catch::Contains("absolute path"));
  // An instance brought up before it described its device.
  f.point.server_facts = {{"perf_socket", "/run/ernic/1.sock"},
                          {"ernicctl", "/usr/local/bin/ernicctl"},
                          {"emulator_instance", "1"}};
  CHECK_THROWS_WITH(perftest().commands(f.point),
                    Catch::Contains("emulator instance 1 describes no verbs device"));
}

TEST_CASE("perftest module: the load generator runs only where it can, without extra_args",
          "[perftest][module][verbs]") {
  PointFixture f;
  f.param("program", "load-generator").param("verb", "send").param("mode", "bw");
  f.point.server_facts = instance_host_facts(1);
  f.point.client_facts = {{"rdma_device", "rxe0"}};
  CHECK_THROWS_WITH(perftest().commands(f.point),
                    Catch::Contains("benchmark rdma: `program: load-generator` runs only on hosts "
                                    "attached to an embedded emulator instance") &&
                        Catch::Contains("its client host is not"));
  f.point.client_facts = instance_host_facts(2);
  f.param("extra_args", "-F");
  CHECK_THROWS_WITH(perftest().commands(f.point),
                    Catch::Contains("benchmark rdma: `extra_args` are perftest's arguments"));
}

TEST_CASE("perftest module: the version probe reads perftest's own version", "[perftest][module]") {
  REQUIRE(perftest().version_command().has_value());
  CHECK(perftest().version_command()->argv == Argv{"ib_send_bw", "--version"});
  CHECK(perftest().parse_version(exited(0, "Version: 6.06\n")) == "6.06");
  CHECK(perftest().parse_version(exited(1, "", "ib_send_bw: not found\n")) == "");
}

TEST_CASE("perftest module: `program: load-generator` runs ernicctl's load generator",
          "[perftest][module]") {
  PointFixture f;
  f.param("program", "load-generator");
  f.param("verb", "send").param("mode", "bw").param("size", "4096").param("iterations", "1000");
  f.param("tx_depth", "128");
  f.point.server_facts = {{"perf_socket", "/run/ernic/1.sock"},
                          {"ernicctl", "/usr/local/bin/ernicctl"},
                          {"rdma_device", "ionic_0"}};
  f.point.client_facts = {{"perf_socket", "/run/ernic/2.sock"},
                          {"ernicctl", "/usr/local/bin/ernicctl"}};
  PointCommands commands = perftest().commands(f.point);
  CHECK(commands.server->spec.argv == Argv{"/usr/local/bin/ernicctl", "perf", "send_bw", "--socket",
                                           "/run/ernic/1.sock", "--bind", "10.10.0.1", "-s", "4096",
                                           "-n", "1000", "-t", "128", "--report_gbits", "-p",
                                           "18600"});
  CHECK(commands.client.argv == Argv{"/usr/local/bin/ernicctl", "perf", "send_bw", "--socket",
                                     "/run/ernic/2.sock", "-s", "4096", "-n", "1000", "-t", "128",
                                     "--report_gbits", "-p", "18600", "10.10.0.1"});
  CHECK(commands.server->readiness.listening_port == std::optional<std::uint16_t>(18600));
  CHECK(commands.server->readiness.description ==
        "ernicctl perf send_bw server listening on port 18600");

  f.param("mode", "lat");
  CHECK(perftest().commands(f.point).client.argv ==
        Argv{"/usr/local/bin/ernicctl", "perf", "send_lat", "--socket", "/run/ernic/2.sock", "-s",
             "4096", "-n", "1000", "-t", "128", "-H", "-p", "18600", "10.10.0.1"});
  // A duration-mode bandwidth point asks the load generator for a row per second.
  f.param("mode", "bw").param("duration", "2000");
  CHECK(perftest().commands(f.point).client.argv ==
        Argv{"/usr/local/bin/ernicctl", "perf", "send_bw", "--socket", "/run/ernic/2.sock", "-s",
             "4096", "-D", "2", "-t", "128", "--report_gbits", "--report-per-second", "-p", "18600",
             "10.10.0.1"});
  Argv duration_server = perftest().commands(f.point).server->spec.argv;
  CHECK(std::count(duration_server.begin(), duration_server.end(), "--report-per-second") == 0);
}

TEST_CASE("perftest module: parse reads the client's row for the point's size",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "write").param("mode", "bw").param("size", "65536");
  CommandResult server = exited(0, read_sample("ib_write_bw_s65536.server.txt"));
  CommandResult client = exited(0, read_sample("ib_write_bw_s65536.client.txt"));
  ParseOutcome outcome = perftest().parse(&server, client, f.point);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  CHECK(outcome.metrics.at("bw_peak_GBs") == Approx(13.51 * 1048576 / 1e9));
  CHECK(outcome.metrics.at("bw_avg_GBs") == Approx(11.72 * 1048576 / 1e9));
  CHECK(outcome.metrics.at("msg_rate_mpps") == Approx(0.000188));
  CHECK(outcome.details.at("client").at("tables").at(0).at("side") == "client");
  CHECK(outcome.details.at("server").at("tables").at(0).at("side") == "server");

  f.param("size", "4096");
  ParseOutcome wrong_size = perftest().parse(&server, client, f.point);
  CHECK_FALSE(wrong_size.ok);
  CHECK(wrong_size.error == "client table has no row for size 4096 (sizes: 65536)");

  f.param("size", "65536").param("verb", "send");
  ParseOutcome wrong_tool = perftest().parse(&server, client, f.point);
  CHECK_FALSE(wrong_tool.ok);
  CHECK_THAT(wrong_tool.error, Catch::Contains("'RDMA_Write BW Test' table, expected ib_send_bw"));
}

TEST_CASE("perftest module: duration mode runs -D whole seconds and reports no peak",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "write").param("mode", "bw").param("size", "65536").param("iterations", "1000");
  f.param("duration", "2500ms");
  PointCommands commands = perftest().commands(f.point);
  CHECK(commands.client.argv == Argv{"ib_write_bw", "-s", "65536", "-D", "3", "--report_gbits",
                                     "-p", "18600", "10.10.0.1"});
  CommandResult server = exited(0, read_sample("ib_write_bw_s65536.server.txt"));
  CommandResult client = exited(0, read_sample("ib_write_bw_s65536.client.txt"));
  ParseOutcome outcome = perftest().parse(&server, client, f.point);
  REQUIRE(outcome.ok);
  CHECK_FALSE(outcome.metrics.contains("bw_peak_GBs"));
  CHECK(outcome.metrics.at("bw_avg_GBs") == Approx(11.72 * 1048576 / 1e9));

  f.param("duration", "200ms");
  CHECK(perftest().commands(f.point).client.argv[4] == "1");  // at least one second
}

TEST_CASE("perftest module: latency point; the read server prints no table", "[perftest][module]") {
  PointFixture f;
  f.param("verb", "read").param("mode", "lat").param("size", "64");
  CommandResult server = exited(0, read_sample("ib_read_lat_s64.server.txt"));
  CommandResult client = exited(0, read_sample("ib_read_lat_s64.client.txt"));
  ParseOutcome outcome = perftest().parse(&server, client, f.point);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  CHECK(outcome.metrics.at("lat_min_us") == Approx(219.47));
  CHECK(outcome.metrics.at("lat_max_us") == Approx(2757.08));
  CHECK(outcome.metrics.at("lat_typical_us") == Approx(334.48));
  CHECK(outcome.metrics.count("bw_avg_GBs") == 0);
}

TEST_CASE("perftest module: a latency table in cycles is not reported as microseconds",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "send").param("mode", "lat").param("size", "64");
  std::string text = read_sample("ib_send_lat_s64.client.txt");
  for (auto at = text.find("[usec]"); at != std::string::npos; at = text.find("[usec]", at)) {
    text.replace(at, 6, "[cycles]");
  }
  ParseOutcome outcome = perftest().parse(nullptr, exited(0, text), f.point);
  CHECK_FALSE(outcome.ok);
  CHECK(outcome.metrics.empty());
  CHECK(outcome.error == "cannot convert the client's 'cycles' unit to microseconds");
}

TEST_CASE("perftest module: failures carry their reason", "[perftest][module]") {
  PointFixture f;
  f.param("verb", "write").param("mode", "bw").param("size", "65536");
  CommandResult server = exited(0, read_sample("ib_write_bw_s65536.server.txt"));

  CommandResult refused = exited(1, "", read_sample("ib_write_bw_error_no_server.client.txt"));
  ParseOutcome no_server = perftest().parse(nullptr, refused, f.point);
  CHECK_FALSE(no_server.ok);
  CHECK_THAT(no_server.error, Catch::StartsWith("client: line 1: Couldn't connect to "
                                                "10.10.0.1:18515") &&
                                  Catch::EndsWith("(exit status 1)"));
  CHECK(no_server.metrics.empty());

  CommandResult silent = exited(0, "");
  ParseOutcome nothing = perftest().parse(&server, silent, f.point);
  CHECK_FALSE(nothing.ok);
  CHECK_THAT(nothing.error, Catch::Contains("no result table") && Catch::Contains("empty"));

  // A complete table but a non-zero exit is not trusted.
  CommandResult odd_exit = exited(3, read_sample("ib_write_bw_s65536.client.txt"));
  ParseOutcome odd = perftest().parse(&server, odd_exit, f.point);
  CHECK_FALSE(odd.ok);
  CHECK(odd.error == "client exit status 3 although its output is complete");

  CommandResult client = exited(0, read_sample("ib_write_bw_s65536.client.txt"));
  CommandResult failing_server =
      exited(1, "", " Completion with error at server\n Failed status 10: wr_id 0 syndrom 0x88\n");
  ParseOutcome server_failed = perftest().parse(&failing_server, client, f.point);
  CHECK_FALSE(server_failed.ok);
  CHECK_THAT(server_failed.error, Catch::StartsWith("server: line 1: Completion with error") &&
                                      Catch::Contains("IBV_WC_REM_ACCESS_ERR"));
}

TEST_CASE("perftest module: publishes rocm-ernic's bandwidth, latency and badge",
          "[perftest][module]") {
  const std::vector<std::uint64_t> tracked = {4096, 65536, 1048576};
  PublishedFigures figures;
  auto publish = [&](const char* verb, const char* mode, const char* size,
                     std::map<std::string, double> median) {
    PointParams params;
    params.set("verb", verb);
    params.set("mode", mode);
    params.set("size", size);
    PointSummary summary{&params, std::move(median)};
    perftest().publish(summary, tracked, figures);
  };
  publish("send", "bw", "1048576", {{"bw_peak_GBs", 4.72}, {"bw_avg_GBs", 4.5}});
  publish("send", "bw", "4096", {{"bw_avg_GBs", 0.39}});  // peak not measured: average
  publish("write", "bw", "65536", {{"bw_peak_GBs", 9.0}, {"bw_avg_GBs", 8.0}});
  publish("send", "bw", "8388608", {{"bw_peak_GBs", 3.4}});  // not a tracked size
  publish("send", "lat", "65536", {{"lat_typical_us", 247.64}, {"lat_min_us", 200.0}});
  CHECK(figures.series.at("bandwidth") ==
        std::map<std::string, double>{{"1048576", 4.72}, {"4096", 0.39}});
  CHECK(figures.series.at("latency") == std::map<std::string, double>{{"65536", 247.64}});
  CHECK(figures.badges == std::map<std::string, double>{{"rdma_bw_GBs", 4.72}});
}

TEST_CASE("perftest module: latency clients print every iteration (-H), servers do not",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "send").param("mode", "lat").param("size", "64").param("iterations", "1000");
  PointCommands commands = perftest().commands(f.point);
  CHECK(commands.client.argv ==
        Argv{"ib_send_lat", "-s", "64", "-n", "1000", "-H", "-p", "18600", "10.10.0.1"});
  CHECK(commands.server->spec.argv == Argv{"ib_send_lat", "-s", "64", "-n", "1000", "-p", "18600"});
  // Real perftest has no per-second flag that ends: a duration-mode bw point passes none.
  f.param("mode", "bw").param("duration", "2000");
  CHECK(perftest().commands(f.point).client.argv ==
        Argv{"ib_send_bw", "-s", "64", "-D", "2", "--report_gbits", "-p", "18600", "10.10.0.1"});
}

TEST_CASE("perftest module: the sample carries its per-iteration distribution",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "send").param("mode", "lat").param("size", "64");
  // perftest's -H layout (print_report_lat) spliced into a recorded output: "#, usec" and one
  // line per iteration between the header and the row.
  std::string text = read_sample("ib_send_lat_s64.client.txt");
  std::string histogram = "#, usec\n";
  for (int i = 1; i <= 999; ++i) {
    histogram += std::to_string(i) + ", " + std::to_string(1900 + i * 20) + "\n";
  }
  auto row = text.find(" 64      1000");
  REQUIRE(row != std::string::npos);
  text.insert(row, histogram);
  ParseOutcome outcome = perftest().parse(nullptr, exited(0, text), f.point);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  const Distribution& latencies = outcome.distributions.at(kLatencyDistribution);
  CHECK(latencies.count == 999);
  CHECK(latencies.median() == Approx(1900 + 500 * 20));
  CHECK(outcome.metrics.at("lat_typical_us") == Approx(23112.66));  // the row still decides

  // Without -H (a recorded sample): perftest's printed percentiles, as a sketch.
  ParseOutcome recorded =
      perftest().parse(nullptr, exited(0, read_sample("ib_send_lat_s64.client.txt")), f.point);
  REQUIRE(recorded.ok);
  CHECK(recorded.distributions.at(kLatencyDistribution).median() == Approx(23112.66));
}

}  // namespace
}  // namespace ernic

namespace ernic {
namespace {

TEST_CASE("perftest module: time to the first table row, when the row's line had arrived",
          "[perftest][module]") {
  PointFixture f;
  f.param("verb", "write").param("mode", "bw").param("size", "65536");
  CommandResult client = exited(0, read_sample("ib_write_bw_s65536.client.txt"));
  // Line 23 is the table's one row: everything before it at 30 ms, its first half at 100 ms,
  // the rest of it at 250 ms, the closing dashes at 260 ms.
  std::size_t row_start = 0;
  for (int line = 1; line < 23; ++line) {
    row_start = client.out.find('\n', row_start) + 1;
  }
  std::size_t row_end = client.out.find('\n', row_start) + 1;
  REQUIRE(client.out.substr(row_start, 6) == " 65536");
  f.point.client_arrivals.chunks = {{.end = row_start, .ms = 30},
                                    {.end = row_start + 10, .ms = 100},
                                    {.end = row_end, .ms = 250},
                                    {.end = client.out.size(), .ms = 260}};
  ParseOutcome outcome = perftest().parse(nullptr, client, f.point);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  CHECK(outcome.metrics.at("time_to_first_row_ms") == 250);
  // Rung 2, and a figure perftest's module declares (lower is better).
  auto metrics = perftest().metrics();
  CHECK(std::any_of(metrics.begin(), metrics.end(), [](const MetricInfo& m) {
    return m.name == "time_to_first_row_ms" && m.better == Better::kLower && m.unit == "ms";
  }));

  SECTION("nothing timed (ernicctl parse): no figure") {
    f.point.client_arrivals.chunks.clear();
    CHECK(perftest().parse(nullptr, client, f.point).metrics.count("time_to_first_row_ms") == 0);
  }
  SECTION("a row printed on stderr has no stdout arrival time") {
    CommandResult on_stderr = exited(0, "", client.out);
    ParseOutcome parsed = perftest().parse(nullptr, on_stderr, f.point);
    REQUIRE(parsed.ok);
    CHECK(parsed.metrics.count("time_to_first_row_ms") == 0);
  }
}

}  // namespace
}  // namespace ernic
