#include "commands/emulator_commands.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "base/units.h"
#include "commands/perf_command.h"
#include "frontend/guest_region.h"
#include "frontend/verbs_environment.h"
#include "runtime/instance.h"

namespace ernic::emulator {
namespace {

struct EmulatorFlags {
  std::string backend = "loopback";
  std::string socket;
  std::string mac;
  std::string gids;
  std::string stats_file;
  std::string verbs_sysfs;
  std::string verbs_name = "ernic_0";
  std::string guest_region;
  std::string guest_region_size = "128MiB";
  std::string log_file;
  std::string log_level = "info";
  std::string token;
  std::string token_file;
  std::string bind = "127.0.0.1";
  std::string segment = "256KiB";
  unsigned spin_us = 20;
  unsigned mesh_lanes = 3;
  bool mesh_tcp_only = false;
  bool mesh_payloads_inline = false;
  bool mesh_socket_streams = false;
  bool mesh_copy_thread = false;
  std::string protocol_version;
  unsigned heartbeat_timeout_ms = 0;
  unsigned stats_interval_ms = 1000;
  unsigned handshake_timeout_ms = 0;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t\r\n");
    if (first != std::string::npos) {
      out.push_back(item.substr(first, last - first + 1));
    }
  }
  return out;
}

std::string random_mac() {
  std::random_device random;
  return fmt::format("02:e7:{:02x}:{:02x}:{:02x}:{:02x}", random() & 0xff, random() & 0xff,
                     random() & 0xff, random() & 0xff);
}

// Returns the exit status; a non-empty `error` is printed by the caller.
int run(const EmulatorFlags& f) {
  emu::InstanceConfig config;
  std::string error;
  auto backend = emu::parse_backend(f.backend, error);
  if (!backend) {
    std::cerr << "ernicctl emulator: " << error << "\n";
    return kExitBadInput;
  }
  config.backend = *backend;
  if (f.socket.empty()) {
    std::cerr << "ernicctl emulator: --socket PATH is required\n";
    return kExitBadInput;
  }
  config.socket_path = f.socket;
  config.verbs_sysfs = f.verbs_sysfs;
  config.verbs_name = f.verbs_name;
  config.mac = f.mac.empty() ? random_mac() : f.mac;
  if (!emu::link_local_gid(config.mac)) {
    std::cerr << "ernicctl emulator: --mac " << config.mac << " is not a MAC address\n";
    return kExitBadInput;
  }
  std::string gid_text = f.gids;
  if (gid_text.empty()) {
    if (const char* env = std::getenv("ERNIC_TCP_GUEST_GIDS")) {
      gid_text = env;
    }
  }
  for (const auto& gid : split_commas(gid_text)) {
    auto canonical = emu::canonical_gid(gid);
    if (!canonical) {
      std::cerr << "ernicctl emulator: GID '" << gid << "' is neither IPv6 nor IPv4\n";
      return kExitBadInput;
    }
    config.gids.push_back(*canonical);
  }
  if (config.gids.empty()) {
    config.gids.push_back(*emu::link_local_gid(config.mac));
  }
  config.stats_file = f.stats_file;
  config.log_file = f.log_file;
  if (!emu::parse_log_level(f.log_level, config.log_level)) {
    std::cerr << "ernicctl emulator: --log-level must be none, error, warn, info or debug\n";
    return kExitBadInput;
  }
  config.token = f.token;
  if (!f.token_file.empty()) {
    std::ifstream in(f.token_file);
    if (!in) {
      std::cerr << "ernicctl emulator: cannot read token file " << f.token_file << "\n";
      return kExitBadInput;
    }
    std::getline(in, config.token);
  }
  if (config.token.empty()) {
    if (const char* env = std::getenv("ERNIC_MESH_TOKEN")) {
      config.token = env;
    }
  }
  if (config.backend.kind != emu::Backend::Kind::kLoopback && config.token.empty()) {
    std::cerr << "ernicctl emulator: the tcp backend needs a mesh token (--token, --token-file "
                 "or ERNIC_MESH_TOKEN)\n";
    return kExitBadInput;
  }
  config.bind = f.bind;
  config.guest_region = f.guest_region;
  auto region_size = parse_size(f.guest_region_size);
  if (!region_size || *region_size < emu::region::kMinimumSize || *region_size % 4096 != 0) {
    std::cerr << "ernicctl emulator: --guest-region-size must be a multiple of 4KiB, at least "
              << (emu::region::kMinimumSize >> 20) << "MiB\n";
    return kExitBadInput;
  }
  config.guest_region_size = *region_size;
  auto segment = parse_size(f.segment);
  if (!segment || *segment < 4096 || *segment > (4u << 20)) {
    std::cerr << "ernicctl emulator: --segment-size must be between 4KiB and 4MiB\n";
    return kExitBadInput;
  }
  config.segment_size = static_cast<std::uint32_t>(*segment);
  config.spin = std::chrono::microseconds(f.spin_us);
  config.mesh_lanes = f.mesh_lanes;
  config.mesh_tcp_only = f.mesh_tcp_only;
  config.mesh_payloads_inline = f.mesh_payloads_inline;
  config.mesh_socket_streams = f.mesh_socket_streams;
  config.mesh_copy_thread = f.mesh_copy_thread;
  config.heartbeat_timeout = std::chrono::milliseconds(f.heartbeat_timeout_ms);
  config.stats_interval = std::chrono::milliseconds(std::max(10u, f.stats_interval_ms));
  config.handshake_timeout = std::chrono::milliseconds(f.handshake_timeout_ms);
  if (!f.protocol_version.empty()) {
    unsigned major = 0;
    unsigned minor = 0;
    if (std::sscanf(f.protocol_version.c_str(), "%u.%u", &major, &minor) != 2 || major == 0) {
      std::cerr << "ernicctl emulator: --mesh-protocol must be MAJOR.MINOR\n";
      return kExitBadInput;
    }
    config.protocol_major = static_cast<std::uint16_t>(major);
    config.protocol_minor = static_cast<std::uint16_t>(minor);
  }
  try {
    return emu::run_instance(config);
  } catch (const std::exception& e) {
    std::cerr << "ernicctl emulator: " << e.what() << "\n";
    return kExitFailed;
  }
}

// `ernicctl verbs-env DIR`: the environment that points verbs programs at the instance whose
// --verbs-sysfs is DIR, as lines a shell evaluates.
void register_verbs_env(CLI::App& app, CommandContext& context) {
  auto sysfs = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "verbs-env",
      "Print the environment under which unmodified verbs programs (perftest, ibv_rc_pingpong, "
      "qperf, your own) use an embedded instance: eval \"$(ernicctl verbs-env DIR)\"");
  cmd->add_option("sysfs", *sysfs, "the instance's --verbs-sysfs folder")->required();
  cmd->callback([sysfs, &context] {
    const std::filesystem::path dir = std::filesystem::absolute(*sysfs);
    if (!std::filesystem::exists(dir / "class/infiniband_verbs")) {
      std::cerr << "ernicctl verbs-env: " << dir.string()
                << " describes no device: start the instance with --verbs-sysfs " << *sysfs
                << " and wait for its ready line\n";
      context.exit_code = kExitBadInput;
      return;
    }
    const auto environment = emu::verbs_environment(dir.string());
    if (!std::filesystem::exists(environment.preload)) {
      std::cerr << "ernicctl verbs-env: the verbs provider is not built or installed beside "
                   "ernicctl (no "
                << environment.preload << ")\n";
      context.exit_code = kExitFailed;
      return;
    }
    for (const auto& [name, value] : environment.variables()) {
      std::cout << "export " << name << "='" << value << "'\n";
    }
    context.exit_code = 0;
  });
}

}  // namespace

void register_commands(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<EmulatorFlags>();
  CLI::App* cmd = app.add_subcommand("emulator", "Run one embedded ERNIC emulator instance");
  cmd->add_option("--backend", flags->backend,
                  "loopback | tcp:manager:listen:PORT | tcp:worker:HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--socket", flags->socket, "UNIX socket of the client front end")->required();
  cmd->add_option("--mac", flags->mac, "MAC address of the emulated NIC (default: random)");
  cmd->add_option("--gids", flags->gids,
                  "comma-separated GIDs the guest owns (default: $ERNIC_TCP_GUEST_GIDS, else "
                  "the MAC's link-local address)");
  cmd->add_option("--stats-file", flags->stats_file, "rewritten every second, 'key : value'");
  cmd->add_option("--verbs-sysfs", flags->verbs_sysfs,
                  "describe the device here for verbs programs (their SYSFS_PATH; see "
                  "`ernicctl verbs-env`)");
  cmd->add_option("--verbs-name", flags->verbs_name, "the device's name for verbs programs")
      ->capture_default_str();
  cmd->add_option("--guest-region", flags->guest_region,
                  "also serve a QEMU guest through this shared-memory file (its ivshmem-plain "
                  "device's memory; created when missing)");
  cmd->add_option("--guest-region-size", flags->guest_region_size,
                  "size of a --guest-region file this instance creates")
      ->capture_default_str();
  cmd->add_option("--log-file", flags->log_file, "log here instead of stderr");
  cmd->add_option("--log-level", flags->log_level, "none|error|warn|info|debug")
      ->capture_default_str();
  cmd->add_option("--token", flags->token, "shared mesh token");
  cmd->add_option("--token-file", flags->token_file, "file holding the mesh token");
  cmd->add_option("--bind", flags->bind, "address the mesh listens on")->capture_default_str();
  cmd->add_option("--segment-size", flags->segment, "largest mesh data frame")
      ->capture_default_str();
  cmd->add_option("--spin-us", flags->spin_us, "busy-poll this long after activity, 0 = never")
      ->capture_default_str();
  cmd->add_option("--mesh-lanes", flags->mesh_lanes,
                  "extra connections to each mesh peer, QPs spread over them (0 = one connection)")
      ->check(CLI::Range(0u, 8u))
      ->capture_default_str();
  cmd->add_flag("--mesh-tcp-only", flags->mesh_tcp_only,
                "peers on this machine talk TCP too (default: a unix socket, faster)");
  cmd->add_flag("--mesh-payloads-inline", flags->mesh_payloads_inline,
                "peers on this machine get payloads through the socket (default: they copy them "
                "from the sender's shared client memory)");
  cmd->add_flag("--mesh-socket-streams", flags->mesh_socket_streams,
                "peers on this machine read each other's frames from the unix socket (default: "
                "from a ring in shared memory once connected, without system calls while busy)");
  cmd->add_flag("--mesh-copy-thread", flags->mesh_copy_thread,
                "a thread at idle priority copies payloads by reference longer than a turn, so "
                "bulk copies yield the CPU to latency traffic (default: the event loop copies "
                "them, about twice the bulk bandwidth)");
  cmd->add_option("--mesh-protocol", flags->protocol_version)
      ->group("");  // test hook: speak another protocol version
  // Test hooks: short mesh timeouts, so that fault tests need not wait seconds.
  cmd->add_option("--heartbeat-timeout-ms", flags->heartbeat_timeout_ms)->group("");
  // Test hook: tests that follow the counters need not wait a second for each rewrite.
  cmd->add_option("--stats-interval-ms", flags->stats_interval_ms)->group("");
  cmd->add_option("--handshake-timeout-ms", flags->handshake_timeout_ms)->group("");
  cmd->callback([flags, &context] { context.exit_code = run(*flags); });

  emu::perf::register_perf(app, context);
  register_verbs_env(app, context);
}

}  // namespace ernic::emulator
