#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frontend/guest_region.h"
#include "runtime/log.h"

namespace ernic::emu {

// `--backend` of the real server, as far as the embedded emulator implements it.
struct Backend {
  enum class Kind { kLoopback, kTcpManager, kTcpWorker };
  Kind kind = Kind::kLoopback;
  std::string host;  // worker: the manager's address
  std::uint16_t port = 0;
};
// Parses "loopback[:...]", "tcp:manager:listen:PORT", "tcp:worker:HOST:PORT". Returns nullopt
// and sets `error` otherwise.
std::optional<Backend> parse_backend(const std::string& text, std::string& error);

// "fe80::a0:d1ff:fe00:1" style canonical text for an IPv6 or IPv4 GID; nullopt if it is neither.
std::optional<std::string> canonical_gid(const std::string& text);
// The IPv6 link-local GID a MAC gives by EUI-64.
std::optional<std::string> link_local_gid(const std::string& mac);

struct InstanceConfig {
  Backend backend;
  std::string socket_path;
  std::string mac;
  std::vector<std::string> gids;
  std::string stats_file;
  // Where the instance describes its device for libibverbs (SYSFS_PATH), empty for nowhere,
  // and the device's name there (frontend/verbs_device.h).
  std::string verbs_sysfs;
  std::string verbs_name = "ernic_0";
  // A QEMU guest's shared-memory file the instance serves too (frontend/guest_region.h), empty
  // for none, and the size it is created with when missing.
  std::string guest_region;
  std::uint64_t guest_region_size = region::kDefaultSize;
  std::string log_file;
  LogLevel log_level = LogLevel::kInfo;
  std::string token;
  std::string bind = "127.0.0.1";
  std::uint32_t segment_size = 256u << 10;
  std::chrono::microseconds spin{20};
  std::uint32_t mesh_lanes = 3;       // MeshConfig::extra_lanes
  bool mesh_tcp_only = false;         // not MeshConfig::local_sockets
  bool mesh_payloads_inline = false;  // not MeshConfig::payloads_by_reference
  bool mesh_socket_streams = false;   // not MeshConfig::local_rings
  bool mesh_copy_thread = false;      // MeshConfig::copies_elsewhere
  // 0: the mesh's defaults (3 s, 5 s); tests shorten them.
  std::chrono::milliseconds heartbeat_timeout{0};
  std::chrono::milliseconds stats_interval{1000};  // how often the stats file is rewritten
  std::chrono::milliseconds handshake_timeout{0};
  std::uint16_t protocol_major = 0;  // 0: the current version (tests override)
  std::uint16_t protocol_minor = 0;
};

// The line a supervisor waits for; logged once when the socket exists.
inline constexpr const char* kReadyLine = "ernic: device realized, instance ready";

struct MeshConfig;
struct EngineConfig;
// What the instance's mesh fabric and engine are configured with.
MeshConfig mesh_config(const InstanceConfig& config);
EngineConfig engine_config(const InstanceConfig& config);

// Runs one instance until SIGTERM/SIGINT. Returns the process exit status.
int run_instance(const InstanceConfig& config);

}  // namespace ernic::emu
