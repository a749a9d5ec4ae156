#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/config_value.h"

namespace ernic {

// `emulator: {kind: external}`: the rocm-ernic server started as a manager and workers. The
// pieces below are pure so that command lines can be checked without starting anything.

// fe80:: address a guest with this MAC gets by EUI-64 (U/L bit flipped, ff:fe inserted),
// written the way the server compares it: 02:a0:d1:00:00:01 -> fe80::a0:d1ff:fe00:1.
// Throws std::invalid_argument for a malformed MAC.
std::string eui64_link_local(const std::string& mac);

struct ExternalSettings {
  std::string binary;
  int instances = 2;
  int mesh_port = 6320;
  std::string bind = "127.0.0.1";    // manager address workers connect to
  std::filesystem::path socket_dir;  // empty: a short per-run directory under /tmp
  std::string log_level = "info";
  std::chrono::milliseconds ready_timeout{30000};
  std::chrono::milliseconds stop_timeout{5000};
  std::string ready_pattern = "realized";
  bool tap = false;
  std::string tap_bridge = "ernicbr0";
  std::string tap_prefix = "ernic-tap";
  std::vector<std::string> guests;  // guest IPv4 per instance; missing ones are 192.168.200.{10*id}
  std::vector<std::string> extra_args;
};

// Reads the `emulator:` section's typed values.
ExternalSettings parse_external_settings(const Config& config);

struct ExternalInstancePlan {
  int id = 0;
  std::string role;  // manager | worker
  std::string mac;
  std::string guest_ip;
  std::string gids;  // ERNIC_TCP_GUEST_GIDS
  std::string tap;   // empty without tap
  std::filesystem::path socket, log, stats;
  std::filesystem::path console;  // what the server prints on stdout and stderr
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::string on;  // the host it is placed on (the list form); empty for `instances: N`
};

// Command line and environment of every instance. Sockets go to `socket_dir`, logs and stats to
// `log_dir`.
std::vector<ExternalInstancePlan> plan_external_instances(const ExternalSettings& settings,
                                                          const std::filesystem::path& socket_dir,
                                                          const std::filesystem::path& log_dir);

// Where the sockets go: `socket_dir`, or a short per-run directory under /tmp.
std::filesystem::path external_socket_dir(const ExternalSettings& settings,
                                          const std::string& run_token);
// Throws when a socket path is longer than a UNIX socket allows (107 bytes).
void check_socket_paths(const std::vector<ExternalInstancePlan>& plans);

}  // namespace ernic
