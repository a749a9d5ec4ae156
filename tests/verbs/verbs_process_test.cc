// A real verbs program (rc_verbs_check, libibverbs only) between two real `ernicctl emulator`
// processes, a manager and a worker on loopback, each reached through the ERNIC provider under
// its instance's verbs environment (SYSFS_PATH, RDMAV_DRIVERS, LD_PRELOAD), as perftest and
// ibv_rc_pingpong reach them.
//
// Compile definitions: ERNIC_BINARY (ernicctl), ERNIC_VERBS_LIBRARY_DIR (the directory of
// libernic-rdmav34.so and libernic-cdev.so) and RC_VERBS_CHECK_BINARY.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "frontend/verbs_device.h"
#include "frontend/verbs_environment.h"
#include "hosts/local_host.h"
#include "runtime/instance.h"
#include "supervisor.h"
#include "test_dir.h"
#include "test_process.h"

extern char** environ;

namespace ernic::emu {
namespace {

// A child process stopped when this goes away: SIGTERM, then SIGKILL after a bounded wait.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(); }
  // Its exit status, waiting at most `limit` (-1: killed, or had to be killed).
  int wait(std::chrono::seconds limit) {
    const int status = wait_exit(pid_, limit);
    pid_ = -1;
    return status;
  }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      wait_exit(pid_, std::chrono::seconds(5));
      pid_ = -1;
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// The counters are rewritten every 100 ms: the checks need not wait a second.
const std::vector<std::string> kFastStats = {"--stats-interval-ms", "100"};

// Runs `program args...` with `environment` added to this process's, its output in `output`.
pid_t spawn_with_environment(const std::string& program, const std::vector<std::string>& args,
                             const VerbsEnvironment& environment,
                             const std::filesystem::path& output) {
  // Everything the child needs is built before fork: the child only execs.
  std::vector<std::string> env;
  const auto variables = environment.variables();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& [name, value] : variables) {
      replaced = replaced || entry.rfind(name + "=", 0) == 0;
    }
    if (!replaced) {
      env.push_back(entry);
    }
  }
  for (const auto& [name, value] : variables) {
    env.push_back(name + "=" + value);
  }
  std::vector<char*> envp;
  for (auto& e : env) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> all{program};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  const std::string out = output.string();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      _exit(127);
    }
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) {
      _exit(126);
    }
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

std::uint64_t stat_value(const std::filesystem::path& stats, const std::string& key) {
  const auto values = Supervisor::read_stats(stats);
  const auto found = values.find(key);
  return found == values.end() ? 0 : std::stoull(found->second);
}

// Whether `key` in `stats` reaches `at_least` within a few seconds (the file is rewritten every
// 100 ms here).
bool counts_at_least(const std::filesystem::path& stats, const std::string& key,
                     std::uint64_t at_least) {
  return observe([&] { return stat_value(stats, key) >= at_least; }, std::chrono::seconds(5));
}

// A manager and a worker instance, each with a verbs device of its own (ernic_1, ernic_2).
bool server_listens(std::uint16_t port) {
  return proc_net_tcp_listens(read_all("/proc/net/tcp"), port) ||
         proc_net_tcp_listens(read_all("/proc/net/tcp6"), port);
}

// Through guest regions (`through_guest_regions`), each instance also serves a region file, and
// the programs see a device folder as a guest's: the region's path and no socket, so that every
// control call, ring and registered page goes through the region as from a QEMU guest.
class TwoInstances {
 public:
  explicit TwoInstances(bool through_guest_regions = false) : dir_("verbs") {
    SupervisorConfig config;
    if (through_guest_regions) {
      config.guest_regions = {dir_.path() / "instance1.region", dir_.path() / "instance2.region"};
    }
    config.executable = ERNIC_BINARY;
    config.instances = 2;  // each with a verbs device of its own (ernic_1, ernic_2)
    config.token = "verbs-test-token";
    config.dir = dir_.path();
    config.ready_timeout = std::chrono::milliseconds(20000);
    config.extra_args = kFastStats;
    supervisor_.start(config);
    manager_ = supervisor_.instances().at(0);
    worker_info_ = supervisor_.instances().at(1);
    REQUIRE(std::filesystem::exists(manager_.verbs_sysfs));
    REQUIRE(std::filesystem::exists(worker_info_.verbs_sysfs));
    if (through_guest_regions) {
      for (const InstanceInfo* info : {&manager_, &worker_info_}) {
        const auto folder = dir_.path() / fmt::format("guest{}-sysfs", info->id);
        verbs_device::write_sysfs(
            folder.string(),
            {info->verbs_device, "", info->guest_region.string(), info->mac, info->gids});
        guest_sysfs_.push_back(folder);
      }
    }
  }
  ~TwoInstances() { supervisor_.stop(); }

  VerbsEnvironment environment(int instance) const {
    if (!guest_sysfs_.empty()) {
      return verbs_environment(guest_sysfs_.at(instance == 1 ? 0 : 1).string(),
                               ERNIC_VERBS_LIBRARY_DIR);
    }
    return verbs_environment(
        (instance == 1 ? manager_.verbs_sysfs : worker_info_.verbs_sysfs).string(),
        ERNIC_VERBS_LIBRARY_DIR);
  }
  const std::filesystem::path& dir() const { return dir_.path(); }
  const InstanceInfo& manager() const { return manager_; }
  const InstanceInfo& worker() const { return worker_info_; }
  Supervisor& supervisor() { return supervisor_; }
  pid_t worker_pid() const { return worker_info_.pid; }
  std::string logs() const {
    return "\nmanager log:" + Supervisor::tail(manager_.log, 20) +
           "\nworker log:" + Supervisor::tail(worker_info_.log, 20);
  }

  struct Run {
    int server_status;
    int client_status;
    std::string server_text;
    std::string client_text;
  };
  // `program server_args` on the manager's device, then `program client_args` on the worker's;
  // their exit statuses and what they printed.
  // Starts `program server_args` on the manager's device and, once it listens, `program
  // client_args` on the worker's; both keep running.
  std::pair<std::unique_ptr<Child>, std::unique_ptr<Child>> start_pair(
      const std::string& program, const std::vector<std::string>& server_args,
      const std::vector<std::string>& client_args, const std::string& name, std::uint16_t port) {
    auto server = std::make_unique<Child>(spawn_with_environment(
        program, server_args, environment(1), dir_.path() / (name + ".server.out")));
    observe([&] { return server_listens(port); }, std::chrono::seconds(20));
    auto client = std::make_unique<Child>(spawn_with_environment(
        program, client_args, environment(2), dir_.path() / (name + ".client.out")));
    return {std::move(server), std::move(client)};
  }

  Run run_pair(const std::string& program, const std::vector<std::string>& server_args,
               const std::vector<std::string>& client_args, const std::string& name,
               std::uint16_t port) {
    const auto server_out = dir_.path() / (name + ".server.out");
    const auto client_out = dir_.path() / (name + ".client.out");
    Child server(spawn_with_environment(program, server_args, environment(1), server_out));
    // perftest's and ibv_rc_pingpong's clients give up at once when nobody listens yet; a
    // connect probe would be the one client the server serves, so read the listen table.
    observe([&] { return server_listens(port); }, std::chrono::seconds(20));
    Child client(spawn_with_environment(program, client_args, environment(2), client_out));
    const int client_status = client.wait(std::chrono::seconds(120));
    const int server_status = server.wait(std::chrono::seconds(30));
    return {server_status, client_status, read_all(server_out), read_all(client_out)};
  }

 private:
  TestDir dir_;
  Supervisor supervisor_;  // stops the manager last, whatever happens
  InstanceInfo manager_;
  InstanceInfo worker_info_;
  std::vector<std::filesystem::path> guest_sysfs_;
};

// rc_verbs_check between the two devices: every verb at 1, 4 KiB + 1, 64 KiB and 8 MiB with its
// data verified, the bad keys and the counters that saw it.
void check_rc_verbs(TwoInstances& instances, int port_index) {
  const std::string port = port_for_test(port_index);
  const auto run =
      instances.run_pair(RC_VERBS_CHECK_BINARY, {"server", port, "-d", "ernic_1", "-g", "0"},
                         {"client", "127.0.0.1", port, "-d", "ernic_2", "-g", "0"},
                         "rc_verbs_check", static_cast<std::uint16_t>(std::stoi(port)));
  INFO("server output:\n"
       << run.server_text << "\nclient output:\n"
       << run.client_text << instances.logs());
  CHECK(run.server_status == 0);
  CHECK(run.client_status == 0);
  CHECK_THAT(run.server_text, Catch::Contains("checks passed"));
  CHECK_THAT(run.client_text, Catch::Contains("checks passed"));
  CHECK(instances.supervisor().check_alive().empty());

  // Bytes moved: the client SENDs and WRITEs each size once (and 4097 bytes again), and READs
  // each size from the server; the server places the SENDs and WRITEs and answers the READs.
  constexpr std::uint64_t kEachWay = 1 + 4097 + 65536 + (8u << 20);
  const auto& server_stats = instances.manager().stats;
  const auto& client_stats = instances.worker().stats;
  CHECK(counts_at_least(client_stats, "bytes_sent", 2 * kEachWay));
  CHECK(counts_at_least(client_stats, "rdma_write_bytes", kEachWay));
  CHECK(counts_at_least(client_stats, "rdma_read_bytes", kEachWay));
  CHECK(counts_at_least(server_stats, "bytes_received", 2 * kEachWay));
  CHECK(counts_at_least(server_stats, "bytes_sent", kEachWay));
  // The bad lkey and the bad rkey.
  CHECK(counts_at_least(client_stats, "errors", 2));
  // rocm-ernic's names for the same counters, and a section per QP.
  CHECK(counts_at_least(client_stats, "total_bytes_sent", 2 * kEachWay));
  CHECK(counts_at_least(client_stats, "total_bytes_rdma_read", kEachWay));
  CHECK(counts_at_least(server_stats, "total_bytes_received", 2 * kEachWay));
  CHECK(counts_at_least(client_stats, "commands", 10));
  const std::string client_stats_text = read_all(client_stats);
  CHECK_THAT(client_stats_text, Catch::Contains("connection : tcp worker of"));
  CHECK_THAT(client_stats_text, Catch::Contains("flr_reset_count : 0"));
  // Its QPs are destroyed by now: the per-QP part is there, with no section left.
  CHECK_THAT(client_stats_text, Catch::Contains("Per-QP Statistics:\n"));
}

TEST_CASE("rc_verbs_check passes between a manager's and a worker's verbs devices") {
  TwoInstances instances;
  check_rc_verbs(instances, 7);
}

TEST_CASE("the device's QP and registered-memory limits fail as a real device's do") {
  TwoInstances instances;
  const auto output = instances.dir() / "limits_check.out";
  Child check(
      spawn_with_environment(LIMITS_CHECK_BINARY, {"ernic_1"}, instances.environment(1), output));
  const int status = check.wait(std::chrono::seconds(60));
  const std::string text = read_all(output);
  INFO(text << instances.logs());
  CHECK(status == 0);
  CHECK_THAT(text, Catch::Contains("checks passed (max_qp 1024)"));
  // Refusing resources costs the instance nothing: it still serves.
  CHECK(instances.supervisor().check_alive().empty());
}

// ibv_rc_pingpong with validation and perftest's tools between the two instances' devices: each
// tool's success as it reports it, and the bytes the instances' counters saw move.
void run_debian_tools(TwoInstances& instances, int first_port) {
  const auto moved_before = stat_value(instances.worker().stats, "bytes_sent");
  struct Tool {
    std::string program;
    std::vector<std::string> args;
    std::string success;  // what the client prints when it measured
    std::uint64_t bytes;  // at least this many more sent by the client's instance
  };
  const std::vector<Tool> tools = {
      {"/usr/bin/ibv_rc_pingpong",
       {"-g", "0", "-s", "4096", "-n", "100", "-c"},
       "iters in",
       100 * 4096},
      {"/usr/bin/ib_write_bw", {"-x", "0", "-a", "-n", "5", "-F"}, "8388608", 5u << 23},
      {"/usr/bin/ib_send_lat", {"-x", "0", "-s", "4096", "-n", "200", "-F"}, "4096", 200 * 4096},
      {"/usr/bin/ib_read_bw", {"-x", "0", "-q", "4", "-s", "65536", "-n", "100", "-F"}, "65536", 0},
      {"/usr/bin/ib_send_bw",
       {"-x", "0", "-b", "-s", "65536", "-n", "100", "-F"},
       "65536",
       100 * 65536},
  };
  int round = first_port;
  for (const Tool& tool : tools) {
    const std::string port = port_for_test(round++);
    std::vector<std::string> server{"-d", "ernic_1", "-p", port};
    std::vector<std::string> client{"-d", "ernic_2", "-p", port};
    server.insert(server.end(), tool.args.begin(), tool.args.end());
    client.insert(client.end(), tool.args.begin(), tool.args.end());
    client.push_back("127.0.0.1");
    const auto before = stat_value(instances.worker().stats, "bytes_sent");
    const auto run = instances.run_pair(tool.program, server, client,
                                        std::filesystem::path(tool.program).filename(),
                                        static_cast<std::uint16_t>(std::stoi(port)));
    INFO(tool.program << "\nserver output:\n"
                      << run.server_text << "\nclient output:\n"
                      << run.client_text << instances.logs());
    CHECK(run.server_status == 0);
    CHECK(run.client_status == 0);
    CHECK_THAT(run.client_text, Catch::Contains(tool.success));
    if (tool.bytes > 0) {
      CHECK(counts_at_least(instances.worker().stats, "bytes_sent", before + tool.bytes));
    }
  }
  // ib_read_bw's bytes travel the other way: the manager's instance answered the READs.
  CHECK(counts_at_least(instances.manager().stats, "bytes_sent", 4 * 100 * 65536));
  CHECK(stat_value(instances.worker().stats, "bytes_sent") > moved_before);
  CHECK(instances.supervisor().check_alive().empty());
}

// Debian's own binaries, unmodified (ibverbs-utils, perftest): each tool's success as it reports
// it, and the bytes the instances' counters saw move.
TEST_CASE("Debian's ibv_devinfo, ibv_rc_pingpong and perftest run through the provider") {
  if (!std::filesystem::exists("/usr/bin/ib_write_bw") ||
      !std::filesystem::exists("/usr/bin/ibv_rc_pingpong")) {
    WARN("perftest or ibverbs-utils is not installed (.ci/install-packages --all installs them)");
    return;
  }
  TwoInstances instances;
  const auto devinfo_out = instances.dir() / "ibv_devinfo.out";
  Child devinfo(spawn_with_environment("/usr/bin/ibv_devinfo", {"-v"}, instances.environment(1),
                                       devinfo_out));
  CHECK(devinfo.wait(std::chrono::seconds(30)) == 0);
  const std::string info = read_all(devinfo_out);
  CHECK_THAT(info, Catch::Contains("hca_id:\ternic_1"));
  CHECK_THAT(info, Catch::Contains("PORT_ACTIVE"));
  CHECK_THAT(info, Catch::Contains("vendor_id:\t\t\t0x1dd8"));
  CHECK_THAT(info, Catch::Contains("RoCE v2"));

  run_debian_tools(instances, 20);
}

// qperf 0.4.11 addresses an RC queue pair by LID, with no global route header, unless told to
// use rdma_cm (-cm1). A RoCE port refuses such an address at RTR (EINVAL), as the kernel's RoCE
// path does on an ionic or an mlx5 port in Ethernet mode, and this device has no rdma_cm (no
// kernel rdma_ucm): qperf's RC tests fail here as on that hardware, and the instances serve on.
TEST_CASE("qperf's RC tests fail at RTR as on any RoCE port, and the instances serve on") {
  if (!std::filesystem::exists("/usr/bin/qperf") ||
      !std::filesystem::exists("/usr/bin/ib_send_lat")) {
    WARN("qperf or perftest is not installed (.ci/install-packages --all installs them)");
    return;
  }
  TwoInstances instances;
  const std::string port = port_for_test(60);
  Child server(spawn_with_environment("/usr/bin/qperf", {"--listen_port", port},
                                      instances.environment(1), instances.dir() / "qperf.server"));
  REQUIRE(observe([&] { return server_listens(static_cast<std::uint16_t>(std::stoi(port))); },
                  std::chrono::seconds(20)));
  struct Attempt {
    std::vector<std::string> test;
    std::string failure;  // what qperf prints
  };
  const std::vector<Attempt> attempts = {
      {{"rc_bw"}, "failed to modify QP to RTR"},
      {{"rc_lat"}, "failed to modify QP to RTR"},
      {{"-cm1", "rc_rdma_write_bw"}, "rdma_create_event_channel failed"},
  };
  int n = 0;
  for (const Attempt& attempt : attempts) {
    std::vector<std::string> args{"127.0.0.1", "--listen_port", port, "-t", "1"};
    args.insert(args.end(), attempt.test.begin(), attempt.test.end());
    const auto out = instances.dir() / ("qperf.client." + std::to_string(n++));
    Child client(spawn_with_environment("/usr/bin/qperf", args, instances.environment(2), out));
    const int status = client.wait(std::chrono::seconds(60));
    INFO("qperf " << attempt.test.back() << ":\n" << read_all(out) << instances.logs());
    CHECK(status == 1);
    CHECK_THAT(read_all(out), Catch::Contains(attempt.failure));
  }
  server.stop();
  CHECK(instances.supervisor().check_alive().empty());

  const std::string next = port_for_test(61);
  const auto run = instances.run_pair(
      "/usr/bin/ib_send_lat", {"-d", "ernic_1", "-x", "0", "-n", "100", "-F", "-p", next},
      {"-d", "ernic_2", "-x", "0", "-n", "100", "-F", "-p", next, "127.0.0.1"}, "after_qperf",
      static_cast<std::uint16_t>(std::stoi(next)));
  INFO("server output:\n" << run.server_text << "\nclient output:\n" << run.client_text);
  CHECK(run.server_status == 0);
  CHECK(run.client_status == 0);
}

// The guest path without a VM: every control call, ring entry and registered page goes through
// the instances' guest regions, as from programs in QEMU guests whose ivshmem devices map them.
TEST_CASE("verbs programs reach their instances through guest regions, as from a guest") {
  TwoInstances instances(true);
  check_rc_verbs(instances, 8);
  for (const InstanceInfo* info : {&instances.manager(), &instances.worker()}) {
    const std::string stats = read_all(info->stats);
    CHECK_THAT(stats, Catch::Contains("guest_region : " + info->guest_region.string()));
    // rc_verbs_check's slot and its registered memory were given back when it closed the device.
    CHECK(observe([&] { return stat_value(info->stats, "guest_clients") == 0; },
                  std::chrono::seconds(5)));
    CHECK(stat_value(info->stats, "guest_region_bytes_registered") == 0);
  }
  if (!std::filesystem::exists("/usr/bin/ib_write_bw") ||
      !std::filesystem::exists("/usr/bin/ibv_rc_pingpong")) {
    WARN("perftest or ibverbs-utils is not installed (.ci/install-packages --all installs them)");
    return;
  }
  run_debian_tools(instances, 50);
}

std::vector<std::string> write_bw_args(const std::string& device, const std::string& port,
                                       const std::string& seconds) {
  return {"-d", device, "-x", "0", "-p", port, "-s", "65536", "-D", seconds, "-F"};
}

// Debian's ib_write_bw between the two instances' devices for `seconds`, already moving data:
// the server on ernic_1, the client on ernic_2; their output in DIR/LABEL.{server,client}.out.
auto start_write_bw(TwoInstances& instances, const std::string& port, const std::string& seconds,
                    const std::string& label) {
  auto client_args = write_bw_args("ernic_2", port, seconds);
  client_args.push_back("127.0.0.1");
  return instances.start_pair("/usr/bin/ib_write_bw", write_bw_args("ernic_1", port, seconds),
                              client_args, label, static_cast<std::uint16_t>(std::stoi(port)));
}

// A verbs program killed in the middle of a transfer takes nothing down with it: both instances
// serve the next pair of programs. Through a guest region nothing closes when a program dies:
// its instance takes the slot back when the lease runs out (a guest destroyed looks the same).
void kill_mid_transfer_then_run_again(bool through_guest_regions, int port_index) {
  TwoInstances instances(through_guest_regions);
  auto [server, client] = start_write_bw(instances, port_for_test(port_index), "20", "killed");
  const auto moving = stat_value(instances.worker().stats, "bytes_sent");
  CHECK(counts_at_least(instances.worker().stats, "bytes_sent", moving + (1u << 20)));
  kill(client->pid(), SIGKILL);
  client->wait(std::chrono::seconds(10));
  server->stop();
  CHECK(instances.supervisor().check_alive().empty());

  if (through_guest_regions) {
    CHECK(observe([&] { return stat_value(instances.worker().stats, "guest_clients") == 0; },
                  std::chrono::seconds(10)));
    CHECK(stat_value(instances.worker().stats, "guest_region_bytes_registered") == 0);
  }
  const std::string next = port_for_test(port_index + 1);
  auto next_client = write_bw_args("ernic_2", next, "1");
  next_client.push_back("127.0.0.1");
  const auto run =
      instances.run_pair("/usr/bin/ib_write_bw", write_bw_args("ernic_1", next, "1"), next_client,
                         "after", static_cast<std::uint16_t>(std::stoi(next)));
  INFO("server output:\n"
       << run.server_text << "\nclient output:\n"
       << run.client_text << instances.logs());
  CHECK(run.client_status == 0);
  CHECK(run.server_status == 0);
  CHECK_THAT(run.client_text, Catch::Contains("65536"));
}

TEST_CASE("perftest killed mid-transfer leaves both instances serving the next point") {
  if (!std::filesystem::exists("/usr/bin/ib_write_bw")) {
    WARN("perftest is not installed (.ci/install-packages --all installs it)");
    return;
  }
  SECTION("through the socket") {
    kill_mid_transfer_then_run_again(false, 40);
  }
  SECTION("through guest regions") {
    kill_mid_transfer_then_run_again(true, 43);
  }
}

// The instance under a running perftest dies: perftest's next poll gets an error completion and
// it exits, instead of waiting for a timeout.
TEST_CASE("perftest whose instance is killed ends with an error completion at once") {
  if (!std::filesystem::exists("/usr/bin/ib_write_bw")) {
    WARN("perftest is not installed (.ci/install-packages --all installs it)");
    return;
  }
  // Through a guest region the instance's heartbeat stands still instead of a socket closing.
  const bool through_guest_regions = GENERATE(false, true);
  INFO("through guest regions: " << through_guest_regions);
  TwoInstances instances(through_guest_regions);
  auto [server, client] =
      start_write_bw(instances, port_for_test(through_guest_regions ? 46 : 42), "30", "orphaned");
  const auto moving = stat_value(instances.worker().stats, "bytes_sent");
  REQUIRE(counts_at_least(instances.worker().stats, "bytes_sent", moving + (1u << 20)));
  const auto killed_at = std::chrono::steady_clock::now();
  kill(instances.worker_pid(), SIGKILL);
  const int status = client->wait(std::chrono::seconds(10));
  const auto took = std::chrono::steady_clock::now() - killed_at;
  const std::string text = read_all(instances.dir() / "orphaned.client.out");
  INFO("client output:\n" << text);
  CHECK(status == 1);
  CHECK(took < std::chrono::seconds(10));
  CHECK_THAT(text, Catch::Contains("Completion with error"));
  CHECK_THAT(text, Catch::Contains("the ERNIC instance serving this device went away"));
}

}  // namespace
}  // namespace ernic::emu
