// End to end under libvirt, for real: image build (cached), two TCG guests, SSH verified with the
// image's host keys, and nothing left behind after teardown or after Ctrl-C while guests boot.
#include <dirent.h>
#include <fmt/format.h>
#include <libvirt/libvirt.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "base/cleanup_stack.h"
#include "base/local_process.h"
#include "base/subprocess.h"
#include "builtin_platform.h"
#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_provider.h"
#include "image/image_builder.h"
#include "libvirt_e2e_support.h"
#include "run/leftovers.h"
#include "scenario/platform.h"
#include "scenario/scenario_schema.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;
using namespace e2e;
using SteadyClock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};
void on_sigint(int /*signal*/) {
  g_interrupted.store(true);
}

// A host entry typed as the scenario loader types it: every host's keys and libvirt's.
const ObjectSchema& loader_host_schema() {
  static const ObjectSchema schema = host_schema_for(builtin_platform(), LibvirtProvider());
  return schema;
}

HostSpec guest_entry(const std::string& name) {
  HostSpec spec;
  spec.name = name;
  spec.provider = "libvirt";
  spec.config = make_config(YAML::Load(fmt::format(R"(
name: {}
provider: libvirt
libvirt:
  image: {}/images/debian12-rdma.yaml
  vcpus: 1
  memory: 768MiB
  accelerator: tcg
  timeouts: {{running: 60s, ssh: 900s, host_key: 180s}}
)",
                                                   name, ERNIC_SOURCE_DIR)),
                            loader_host_schema(), "s.yaml", "hosts[0]");
  return spec;
}

Config scenario_with_subnet(const std::string& subnet) {
  return make_config(YAML::Load(fmt::format("libvirt: {{network: {{subnet: {}}}}}", subnet)),
                     top_level_schema(builtin_platform()), "s.yaml", "");
}

// What a run gives the provider: its folder, its token, its scenario and its cleanup stack.
ProviderContext provider_context(const fs::path& run_dir, const std::string& token,
                                 const std::string& subnet, CleanupStack& cleanup) {
  ProviderContext context;
  context.run_dir = run_dir;
  context.run_token = token;
  context.scenario = scenario_with_subnet(subnet);
  context.cleanup = &cleanup;
  return context;
}

// The system ssh client, verifying against the known_hosts the provider wrote.
LocalProcessResult ssh_run(const GuestSshTarget& target, const std::string& command) {
  LocalProcessOptions options;
  options.timeout = std::chrono::seconds(120);
  return run_local(
      {"ssh", "-i", target.private_key.string(), "-o", "BatchMode=yes", "-o",
       "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + target.known_hosts.string(), "-o",
       "GlobalKnownHostsFile=/dev/null", "-o", "ConnectTimeout=60", "-l", target.user,
       target.address, command},
      options);
}

TEST_CASE(
    "two TCG guests boot from the built image, answer SSH with the image's host key, and "
    "teardown leaves nothing",
    "[libvirt][e2e]") {
  REQUIRE(::geteuid() == 0);
  Daemons daemons;

  auto build_started = SteadyClock::now();
  ImageBuildOptions build;
  build.progress = [](const std::string& line) { std::cerr << "image: " << line << "\n"; };
  auto image = build_image(
      load_image_recipe(fs::path(ERNIC_SOURCE_DIR) / "images/debian12-rdma.yaml"), build);
  double build_seconds = std::chrono::duration<double>(SteadyClock::now() - build_started).count();
  std::cerr << fmt::format("TIMING image {}: {:.1f} s\n", image.cached ? "cached" : "built",
                           build_seconds);
  REQUIRE(image.image.host_keys.size() == 2);

  std::string token = random_token();
  // As a run does: `ernicctl down` elsewhere on the machine leaves this token alone.
  RunLock lock(token);
  fs::path run_dir = make_run_dir(token);
  {
    CleanupStack cleanup;
    ProviderContext context = provider_context(run_dir, token, "192.168.231.0/24", cleanup);
    LibvirtProvider provider;
    provider.set_progress(
        [](const std::string& line) { std::cerr << "libvirt: " << line << "\n"; });

    auto boot_started = SteadyClock::now();
    auto hosts = provider.create({guest_entry("g1"), guest_entry("g2")}, context);
    double boot_seconds = std::chrono::duration<double>(SteadyClock::now() - boot_started).count();
    std::cerr << fmt::format("TIMING two guests to verified SSH: {:.1f} s\n", boot_seconds);
    REQUIRE(hosts.size() == 2);
    CHECK(leftovers(token).size() >= 5);  // 2 domains, network, pool, folder, 2 QEMUs

    std::vector<GuestSshTarget> targets;
    for (const auto& host : hosts) {
      auto* guest = dynamic_cast<LibvirtGuest*>(host.get());
      REQUIRE(guest != nullptr);
      CHECK(guest->facts().at("accelerator") == "tcg");
      CHECK(guest->t_init_s() > 0);
      CHECK(guest->t_init_s() <= boot_seconds + 1);
      CHECK(guest->check_alive().empty());
      std::cerr << fmt::format(
          "TIMING {} T_init {:.1f} s (running {}, ssh {}, host_key {})\n", guest->name(),
          guest->t_init_s(), guest->facts().at("stage_running_s"), guest->facts().at("stage_ssh_s"),
          guest->facts().at("stage_host_key_s"));
      targets.push_back(guest->ssh_target());
    }
    CHECK(targets[0].address == "192.168.231.10");
    CHECK(targets[1].address == "192.168.231.11");

    // Commands over SshHost (strict against the image's host keys): the image boots the build
    // host's kernel, has rdma_rxe, and the guests reach each other on the run's network.
    auto checked = hosts[0]->run(CommandSpec{
        {"sh", "-c",
         "uname -r && modprobe rdma_rxe && grep -c rdma_rxe /proc/modules && ping -c 1 -W 10 " +
             targets[1].address},
        std::chrono::seconds(300),
        {}});
    INFO(checked.out << checked.err);
    REQUIRE(checked.ok());
    CHECK(checked.out.find(image.image.kernel_version) != std::string::npos);
    auto memlock =
        hosts[1]->run(CommandSpec{{"sh", "-c", "ulimit -l"}, std::chrono::seconds(120), {}});
    CHECK(memlock.out == "unlimited\n");

    // The system client agrees with the provider's known_hosts, and refuses without it.
    auto system_ssh = ssh_run(targets[1], "true");
    INFO(system_ssh.output);
    CHECK(system_ssh.ok());
    GuestSshTarget wrong = targets[1];
    wrong.known_hosts = run_dir / "empty_known_hosts";
    std::ofstream(wrong.known_hosts).close();
    CHECK_FALSE(ssh_run(wrong, "true").ok());

    std::vector<std::string> errors;
    cleanup.run_all([&](const std::string& what, const std::string& why) {
      errors.push_back(what + ": " + why);
    });
    CHECK(errors.empty());
  }
  CHECK(leftovers(token).empty());
  fs::remove_all(run_dir);
}

TEST_CASE("Ctrl-C while guests boot stops the wait and teardown leaves nothing", "[libvirt][e2e]") {
  REQUIRE(::geteuid() == 0);
  Daemons daemons;
  std::string token = random_token();
  // As a run does: `ernicctl down` elsewhere on the machine leaves this token alone.
  RunLock lock(token);
  fs::path run_dir = make_run_dir(token);
  struct sigaction action {};
  struct sigaction previous {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous);
  g_interrupted.store(false);
  {
    CleanupStack cleanup;
    ProviderContext context = provider_context(run_dir, token, "192.168.232.0/24", cleanup);
    LibvirtProvider provider;
    provider.set_stop_flag(&g_interrupted);
    int started = 0;
    provider.set_progress([&](const std::string& line) {
      std::cerr << "libvirt: " << line << "\n";
      // Ctrl-C once both domains run, while their kernels boot.
      if (line.find("domain ") != std::string::npos && line.find(" started") != std::string::npos &&
          ++started == 2) {
        ::kill(::getpid(), SIGINT);
      }
    });
    auto interrupted_at = SteadyClock::now();
    CHECK_THROWS_WITH(provider.create({guest_entry("g1"), guest_entry("g2")}, context),
                      Catch::Contains("interrupted while waiting for stage"));
    CHECK(std::chrono::duration<double>(SteadyClock::now() - interrupted_at).count() < 120);
    CHECK(started == 2);
    CHECK_FALSE(leftovers(token).empty());
    cleanup.run_all();
  }
  sigaction(SIGINT, &previous, nullptr);
  CHECK(leftovers(token).empty());
  fs::remove_all(run_dir);
}

// The reduced two-guest sweep of the `ernicctl run`, `up` and `run --attach` cases.
constexpr const char* kSubnet = "192.168.234.0/24";
constexpr const char* kBandwidthSizes = "[4KiB, 64KiB]";

// `ernicctl run scenarios/two-guest-softroce.yaml`, reduced to fit CI.
std::vector<std::string> two_guest_command(const fs::path& work) {
  std::vector<std::string> argv{ERNIC_BINARY};
  const auto args = two_guest_run_args(work, kSubnet, kBandwidthSizes);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

TEST_CASE(
    "ernicctl run two-guest-softroce.yaml: soft-RoCE perftest, pingpong and iperf3 between two "
    "guests into the history, nothing left behind",
    "[libvirt][e2e]") {
  REQUIRE(::geteuid() == 0);
  Daemons daemons;
  fs::path work = make_run_dir("sr" + random_token());
  auto run = run_to_end(two_guest_command(work), "ernicctl run two-guest-softroce (reduced)");
  INFO(run->stdout_text() << run->stderr_text());
  REQUIRE(run->exit_code() == 0);

  nlohmann::json record = last_json_line(work / "history.jsonl");
  const auto& ernic = record["ernicctl"];
  CHECK(ernic["status"] == "passed");
  REQUIRE(ernic["points"].size() == 5);  // bw x2, lat, pingpong, tcp
  for (const auto& point : ernic["points"]) {
    CHECK(point["status"] == "passed");
    CHECK(point["commands"]["client"].get<std::string>().find("192.168.234.10") !=
          std::string::npos);
  }
  // The soft-RoCE device and GID index found by the setup steps are on the perftest lines.
  CHECK(ernic["points"][0]["commands"]["client"].get<std::string>().find("-d rxe0 -x ") !=
        std::string::npos);
  // Bandwidth points run for a duration (-D), so slow TCG guests take no longer.
  CHECK_THAT(ernic["points"][0]["commands"]["client"].get<std::string>(),
             Catch::Contains(" -D 5 ") && !Catch::Contains(" -n "));
  CHECK(record["series"]["bandwidth"].contains("4096"));
  CHECK(record["series"]["bandwidth"].contains("65536"));
  CHECK(record["series"]["latency"]["4096"].get<double>() > 0);
  CHECK(record["badges"]["tcp_bw_GBs"].get<double>() > 0);
  // The accelerator the guests ran under is recorded, and TCG figures are marked.
  REQUIRE(ernic["hosts"].size() == 2);
  std::string accelerator = ernic["hosts"][0]["facts"]["accelerator"];
  CHECK(ernic["accelerator"] == accelerator);
  CHECK(ernic["functional_only"] == (accelerator == "tcg"));
  for (const auto& host : ernic["hosts"]) {
    CHECK(host["facts"]["rdma_device"] == "rxe0");
    CHECK(host["t_init_s"].get<double>() > 0);
  }
  CHECK(leftovers(ernic["run_token"].get<std::string>()).empty());
  fs::remove_all(work);
}

TEST_CASE("Ctrl-C to ernicctl run while its guests boot: exit 130 and nothing left",
          "[libvirt][e2e]") {
  REQUIRE(::geteuid() == 0);
  Daemons daemons;
  fs::path work = make_run_dir("cc" + random_token());
  SpawnOptions options;
  options.argv = two_guest_command(work);
  auto run = Subprocess::spawn(
      options, [](bool /*is_stderr*/, std::string_view data) { std::cerr << data; });
  // Both kernels are booting once both serial consoles have printed something.
  auto give_up = SteadyClock::now() + std::chrono::minutes(10);
  auto booting = [&] {
    fs::path runs = work / "runs";
    if (!fs::exists(runs) || only_run_dir(runs).empty()) {
      return false;
    }
    fs::path dir = only_run_dir(runs);
    auto printing = [&](const char* log) {
      std::error_code ignored;
      return fs::file_size(dir / log, ignored) > 0 && !ignored;
    };
    return printing("guest1.serial.log") && printing("guest2.serial.log");
  };
  while (!booting() && run->running() && SteadyClock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(booting());
  interrupt_and_expect_nothing_left(*run, work, "Ctrl-C to exit");
  fs::remove_all(work);
}

TEST_CASE("up then status --json then ssh then down on two guests", "[libvirt][e2e]") {
  REQUIRE(::geteuid() == 0);
  Daemons daemons;
  fs::path work = make_run_dir("up" + random_token());
  std::string state = (work / "state").string();
  auto ernicctl = [&](std::vector<std::string> args) {
    SpawnOptions options;
    options.argv = {ERNIC_BINARY};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    auto process = Subprocess::spawn(options, {});
    process->wait_until(SteadyClock::now() + std::chrono::minutes(20), false);
    process->finish_output();
    return std::make_tuple(process->exit_code(), process->stdout_text(), process->stderr_text());
  };
  std::vector<std::string> up_args = two_guest_run_args(work, kSubnet, kBandwidthSizes);
  up_args[0] = "up";
  // `up` takes no --output; drop "--output text".
  auto output_flag = std::find(up_args.begin(), up_args.end(), "--output");
  up_args.erase(output_flag, output_flag + 2);
  up_args.insert(up_args.end(), {"--state-dir", state});
  auto started = SteadyClock::now();
  auto [up_code, up_out, up_err] = ernicctl(up_args);
  std::cerr << fmt::format("TIMING ernicctl up (two guests, soft-RoCE): {:.1f} s\n",
                           std::chrono::duration<double>(SteadyClock::now() - started).count());
  INFO(up_out << up_err);
  REQUIRE(up_code == 0);
  nlohmann::json up_state;
  std::ifstream(work / "state" / "up.json") >> up_state;
  std::string token = up_state["run_token"];

  auto [status_code, status_out, status_err] = ernicctl({"status", "--json", "--state-dir", state});
  INFO(status_out << status_err);
  CHECK(status_code == 0);
  auto report = nlohmann::json::parse(status_out);
  REQUIRE(report["hosts"].size() == 2);
  for (const auto& host : report["hosts"]) {
    CHECK(host["state"] == "up");
  }
  // Logged in with the image's key, host keys verified, soft-RoCE set up by `up`.
  auto [ssh_code, ssh_out, ssh_err] = ernicctl({"ssh", "guest2", "--state-dir", state, "--", "cat",
                                                "/sys/class/infiniband/rxe0/ports/1/state"});
  INFO(ssh_out << ssh_err);
  CHECK(ssh_code == 0);
  CHECK_THAT(ssh_out, Catch::Contains("ACTIVE"));
  const auto left_by_up = leftovers(token);
  CHECK_FALSE(left_by_up.empty());

  // The developer's loop on the guests up booted: an attached run boots nothing, tears nothing
  // down, and its samples are all warm.
  std::vector<std::string> attach_args = two_guest_run_args(work, kSubnet, kBandwidthSizes);
  attach_args.insert(attach_args.end(), {"--attach", "--state-dir", state, "--only",
                                         "bw[*size=4KiB]", "--only", "lat[*]"});
  started = SteadyClock::now();
  auto [attach_code, attach_out, attach_err] = ernicctl(attach_args);
  std::cerr << fmt::format("TIMING ernicctl run --attach (two guests, 2 points): {:.1f} s\n",
                           std::chrono::duration<double>(SteadyClock::now() - started).count());
  INFO(attach_out << attach_err);
  CHECK(attach_code == 0);
  nlohmann::json attached = last_json_line(work / "history.jsonl");
  CHECK(attached["ernicctl"]["attached_to"]["up_run_token"] == token);
  REQUIRE(attached["ernicctl"]["points"].size() == 2);
  for (const auto& point : attached["ernicctl"]["points"]) {
    CHECK(point["status"] == "passed");
    for (const auto& sample : point["samples"]) {
      CHECK(sample["warm"] == true);
    }
  }
  CHECK(leftovers(token).size() == left_by_up.size());

  auto [down_code, down_out, down_err] = ernicctl({"down", "--state-dir", state});
  INFO(down_out << down_err);
  CHECK(down_code == 0);
  CHECK_THAT(down_out, Catch::Contains("removed domain ernic-" + token + "-guest1"));
  CHECK(leftovers(token).empty());
  auto [after_code, after_out, after_err] = ernicctl({"status", "--state-dir", state});
  CHECK(after_code == 2);
  fs::remove_all(work);
}

// A QEMU that idles in firmware (its only disk is blank) under a persistent domain named for
// `token`, its disk in the run's overlay folder as a guest's is: what a killed `up` leaves.
void start_idle_domain(const std::string& token) {
  fs::path folder = fs::path("/var/lib/libvirt/images") / ("ernic-" + token);
  fs::create_directories(folder);
  fs::path disk = folder / "blank.img";
  fs::resize_file((std::ofstream(disk), disk), 1 << 20);
  LibvirtConnection connection("qemu:///system");
  std::string xml = fmt::format(R"(<domain type='qemu'>
  <name>ernic-{}-idle</name>
  <memory unit='MiB'>64</memory>
  <os><type arch='x86_64'>hvm</type></os>
  <devices>
    <disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='{}'/>
      <target dev='vda' bus='virtio'/></disk>
  </devices>
</domain>)",
                                token, disk.string());
  virDomainPtr domain = virDomainDefineXML(connection.get(), xml.c_str());
  if (domain == nullptr) {
    FAIL("define: " << libvirt_error_message());
  }
  if (virDomainCreate(domain) != 0) {
    FAIL("start: " << libvirt_error_message());
  }
  virDomainFree(domain);
}

pid_t qemu_of(const std::vector<Leftover>& found) {
  for (const auto& item : found) {
    if (item.kind == "process") {
      return std::stoi(item.name);
    }
  }
  return 0;
}

// libvirt learns of a QEMU's exit asynchronously: a teardown that kills QEMU and then destroys
// the domain (or finds QEMU already dead) raced it and left the domain defined.
TEST_CASE("removing a killed run's leftovers takes the domain whether or not its QEMU still runs",
          "[libvirt][e2e]") {
  REQUIRE(::geteuid() == 0);
  Daemons daemons;
  for (bool kill_qemu_first : {false, true, false, true, false, true}) {
    std::string token = random_token();
    start_idle_domain(token);
    auto scan = find_leftovers({token}, "qemu:///system");
    INFO("kill QEMU first: " << kill_qemu_first);
    pid_t qemu = qemu_of(scan.found);
    REQUIRE(qemu > 0);
    CHECK(scan.found.size() == 3);  // domain, its QEMU, the overlay folder
    if (kill_qemu_first) {
      ::kill(qemu, SIGKILL);
    }
    std::vector<std::string> errors;
    remove_leftovers(scan.found, "qemu:///system",
                     [&](const Leftover& item, const std::string& why) {
                       errors.push_back(item.describe() + ": " + why);
                     });
    CHECK(errors.empty());
    for (const auto& error : errors) {
      std::cerr << error << "\n";
    }
    CHECK(leftovers(token).empty());
    CHECK_FALSE(process_running(qemu));
  }
}

}  // namespace
}  // namespace ernic
