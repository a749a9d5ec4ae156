#include "runtime/instance.h"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "base/durable_file.h"
#include "engine/engine.h"
#include "engine/local_fabric.h"
#include "frontend/shm_server.h"
#include "frontend/verbs_device.h"
#include "mesh/mesh_fabric.h"
#include "runtime/event_loop.h"
#include "runtime/scheduling.h"
#include "runtime/traffic_scheduling.h"

namespace ernic::emu {

std::optional<Backend> parse_backend(const std::string& text, std::string& error) {
  Backend b;
  if (text == "loopback" || text.starts_with("loopback:")) {
    return b;
  }
  auto parse_port = [&](const std::string& s) -> std::optional<std::uint16_t> {
    try {
      std::size_t used = 0;
      const unsigned long v = std::stoul(s, &used);
      if (used == s.size() && v <= 65535) {
        return static_cast<std::uint16_t>(v);
      }
    } catch (...) {
    }
    error = fmt::format("bad port '{}' in backend '{}'", s, text);
    return std::nullopt;
  };
  if (text.starts_with("tcp:manager:listen:")) {
    auto port = parse_port(text.substr(19));
    if (!port) {
      return std::nullopt;
    }
    b.kind = Backend::Kind::kTcpManager;
    b.port = *port;
    return b;
  }
  if (text.starts_with("tcp:worker:")) {
    const std::string rest = text.substr(11);
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      error = fmt::format("backend '{}' needs tcp:worker:HOST:PORT", text);
      return std::nullopt;
    }
    auto port = parse_port(rest.substr(colon + 1));
    if (!port) {
      return std::nullopt;
    }
    b.kind = Backend::Kind::kTcpWorker;
    b.host = rest.substr(0, colon);
    b.port = *port;
    return b;
  }
  error = fmt::format(
      "backend '{}' is not supported by the embedded emulator (use loopback, "
      "tcp:manager:listen:PORT or tcp:worker:HOST:PORT)",
      text);
  return std::nullopt;
}

std::optional<std::string> canonical_gid(const std::string& text) {
  unsigned char bytes[16];
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET6, text.c_str(), bytes) == 1) {
    inet_ntop(AF_INET6, bytes, out, sizeof out);
    return std::string(out);
  }
  if (inet_pton(AF_INET, text.c_str(), bytes) == 1) {
    inet_ntop(AF_INET, bytes, out, sizeof out);
    return std::string(out);
  }
  return std::nullopt;
}

std::optional<std::string> link_local_gid(const std::string& mac) {
  unsigned int m[6];
  char tail = 0;
  if (std::sscanf(mac.c_str(), "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5],
                  &tail) != 6) {
    return std::nullopt;
  }
  const std::string text = fmt::format("fe80::{:x}:{:x}:{:x}:{:x}", ((m[0] ^ 2u) << 8) | m[1],
                                       (m[2] << 8) | 0xffu, 0xfe00u | m[3], (m[4] << 8) | m[5]);
  return canonical_gid(text);
}

namespace {

struct Counters {
  const Engine* engine_queues;  // per-QP counters
  std::function<std::string()> connection;
  const EngineStats* engine;
  const MeshStats* mesh;
  const ShmFrontEnd* front;
  const EventLoop* loop;
  const TrafficScheduling* traffic;  // null: the loop keeps the kernel's scheduling
};

// The keys rocm-ernic's own `ernicctl stats --summary` reads from its server's stats file,
// meaning the same: the device's totals, what its front end served, and one section per QP.
// Their section lines are indented, so readers of this instance's own `key : value` lines (the
// supervisor's) keep them apart.
std::string rocm_ernic_counters(const Counters& c) {
  const EngineStats& e = *c.engine;
  std::string text;
  text += fmt::format("connection : {}\n", c.connection ? c.connection() : "none");
  text += fmt::format("total_bytes_sent : {}\n", e.bytes_sent);
  text += fmt::format("total_bytes_received : {}\n", e.bytes_received);
  text += fmt::format("total_bytes_rdma_read : {}\n", e.rdma_read_bytes);
  text += fmt::format("total_bytes_rdma_write : {}\n", e.rdma_write_bytes);
  text += fmt::format("commands : {}\n", c.front == nullptr ? 0 : c.front->commands());
  text += fmt::format("interrupts : {}\n", c.front == nullptr ? 0 : c.front->interrupts());
  // No function-level reset reaches an embedded instance: it has no PCI function to reset.
  text += "flr_reset_count : 0\n";
  if (c.engine_queues == nullptr) {
    return text;
  }
  text += "Per-QP Statistics:\n";
  for (const auto& [qpn, q] : c.engine_queues->qp_stats()) {
    text += fmt::format("  QP {}:\n", qpn);
    text += fmt::format("    bytes_sent : {}\n", q.bytes_sent);
    text += fmt::format("    bytes_received : {}\n", q.bytes_received);
    text += fmt::format("    bytes_rdma_read : {}\n", q.bytes_rdma_read);
    text += fmt::format("    bytes_rdma_write : {}\n", q.bytes_rdma_write);
    text += fmt::format("    wqes_processed : {}\n", q.wqes_processed);
    text += fmt::format("    cqes_posted : {}\n", q.cqes_posted);
  }
  return text;
}

// Returns why the file could not be written (out of descriptors, disk full), or "".
std::string write_stats(const std::string& path, const Counters& c) {
  if (path.empty()) {
    return {};
  }
  const EngineStats& e = *c.engine;
  std::string text;
  text += fmt::format("bytes_sent : {}\n", e.bytes_sent);
  text += fmt::format("bytes_received : {}\n", e.bytes_received);
  text += fmt::format("rdma_write_bytes : {}\n", e.rdma_write_bytes);
  text += fmt::format("rdma_read_bytes : {}\n", e.rdma_read_bytes);
  text += fmt::format("qps : {}\n", e.qps);
  text += fmt::format("completions : {}\n", e.completions);
  text += fmt::format("errors : {}\n", e.completion_errors);
  text += fmt::format("rnr_retries : {}\n", e.rnr_retries);
  text += fmt::format("naks_sent : {}\n", e.naks_sent);
  text += fmt::format("clients : {}\n", c.front == nullptr ? 0 : c.front->clients());
  if (c.front != nullptr && c.front->guest_region() != nullptr) {
    text += fmt::format("guest_region : {}\n", c.front->guest_region()->path());
    text += fmt::format("guest_clients : {}\n", c.front->guest_clients());
    text +=
        fmt::format("guest_region_bytes_registered : {}\n", c.front->guest_region()->heap_in_use());
  }
  if (c.mesh != nullptr) {
    text += fmt::format("mesh_peers : {}\n", c.mesh->peers);
    text += fmt::format("mesh_wire_bytes_sent : {}\n", c.mesh->wire_bytes_sent);
    text += fmt::format("mesh_lanes : {}\n", c.mesh->lanes);
    text += fmt::format("mesh_local_lanes : {}\n", c.mesh->local_lanes);
    text += fmt::format("mesh_ring_streams : {}\n", c.mesh->ring_streams);
    text += fmt::format("mesh_ring_wakeups : {}\n", c.mesh->ring_wakeups);
    text += fmt::format("mesh_bytes_by_reference : {}\n", c.mesh->bytes_by_reference);
    text += fmt::format("mesh_peer_regions : {}\n", c.mesh->peer_regions);
    text += fmt::format("mesh_copies_elsewhere : {}\n", c.mesh->copies_elsewhere);
    text += fmt::format("mesh_copies_rescued : {}\n", c.mesh->copies_rescued);
    text += fmt::format("mesh_max_referenced_in_flight : {}\n", c.mesh->max_referenced_in_flight);
    text += fmt::format("mesh_wire_bytes_received : {}\n", c.mesh->wire_bytes_received);
    text += fmt::format("mesh_read_calls : {}\n", c.mesh->read_calls);
    text += fmt::format("mesh_malformed_frames : {}\n", c.mesh->malformed_frames);
    text += fmt::format("mesh_refused_peers : {}\n", c.mesh->refused_peers);
    text += fmt::format("mesh_nodes_lost : {}\n", c.mesh->nodes_lost);
    text += fmt::format("mesh_max_read_turn_bytes : {}\n", c.mesh->max_read_turn_bytes);
    text += fmt::format("mesh_max_write_turn_bytes : {}\n", c.mesh->max_write_turn_bytes);
    text += fmt::format("mesh_max_bytes_ahead_of_small_frame : {}\n",
                        c.mesh->max_bytes_ahead_of_small_frame);
  }
  // Yields between turns that lost the CPU for more than a millisecond (EventLoop::kSlowYield).
  text += fmt::format("loop_slow_yields : {}\n", c.loop->slow_yields());
  // Written on the loop's thread: the slice is the loop's.
  text += fmt::format("loop_slice_us : {}\n", time_slice().count());
  text += fmt::format("loop_scheduling : {}\n",
                      c.traffic == nullptr ? "kernel" : to_string(c.traffic->mode()));
  text += fmt::format("loop_latency_periods : {}\n",
                      c.traffic == nullptr ? 0 : c.traffic->latency_periods());
  // Rewritten every interval and read by `ernicctl stats`: replaced whole, never synced.
  // Last: its per-QP sections end the file.
  text += rocm_ernic_counters(c);
  return write_file_durably_or_reason(path, text, {.durability = Durability::kDerived});
}

// Lets the instance use every descriptor the hard limit allows: each mesh connection and
// client needs some, and at the limit it degrades (refuses) rather than fails.
void raise_descriptor_limit(Logger& log) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == limit.rlim_max) {
    return;
  }
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    log.debug("ernic: descriptor limit raised from {} to {}", before, limit.rlim_cur);
  } else {
    log.warn("ernic: cannot raise the descriptor limit from {}: {}", before, std::strerror(errno));
  }
}

// SIGTERM and SIGINT arrive on the returned descriptor (the event loop reads them); a client
// that goes away mid-write does not kill the instance.
int take_termination_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
}

// The backend as the ready line names it.
std::string backend_description(const InstanceConfig& config, const MeshFabric* mesh) {
  return config.backend.kind == Backend::Kind::kLoopback ? "loopback"
         : config.backend.kind == Backend::Kind::kTcpManager
             ? fmt::format("tcp manager on port {}", mesh->listen_port())
             : fmt::format("tcp worker of {}:{}", config.backend.host, config.backend.port);
}

// Keeps the stats file current, logging when updating it starts or stops failing.
class StatsFile {
 public:
  StatsFile(const std::string& path, Counters counters, Logger& log)
      : path_(path), counters_(counters), log_(log) {}

  void update() {
    written_at_ = std::chrono::steady_clock::now();
    written_traffic_ = traffic_count();
    const std::string error = write_stats(path_, counters_);
    if (!error.empty() && !failing_) {
      log_.error("ernic: stats file not updated: {}", error);
    } else if (error.empty() && failing_) {
      log_.info("ernic: stats file updated again");
    }
    failing_ = !error.empty();
  }

  // Rewrites the file when traffic stopped since it was last written, at most every 10 ms: the
  // loop calls this before it blocks, so a point's counters are whole when its program exits,
  // without waiting for the next periodic rewrite (a second later).
  void update_if_traffic_stopped() {
    constexpr auto kAtMostEvery = std::chrono::milliseconds(10);
    if (traffic_count() != written_traffic_ &&
        std::chrono::steady_clock::now() - written_at_ >= kAtMostEvery) {
      update();
    }
  }

 private:
  // Moves with every byte and completion: unchanged, the file on disk is current.
  std::uint64_t traffic_count() const {
    return counters_.engine->bytes_sent + counters_.engine->bytes_received +
           counters_.engine->completions;
  }

  const std::string& path_;
  Counters counters_;
  Logger& log_;
  bool failing_ = false;
  std::chrono::steady_clock::time_point written_at_{};
  std::uint64_t written_traffic_ = 0;
};

}  // namespace

EngineConfig engine_config(const InstanceConfig& config) {
  EngineConfig e;
  e.max_segment = config.segment_size;
  return e;
}

MeshConfig mesh_config(const InstanceConfig& config) {
  MeshConfig mc;
  mc.role = config.backend.kind == Backend::Kind::kTcpManager ? MeshConfig::Role::kManager
                                                              : MeshConfig::Role::kWorker;
  mc.manager_host = config.backend.host;
  mc.port = config.backend.port;
  mc.bind = config.bind;
  mc.token = config.token;
  mc.gids = config.gids;
  mc.mac = config.mac;
  mc.extra_lanes = config.mesh_lanes;
  mc.local_sockets = !config.mesh_tcp_only;
  mc.payloads_by_reference = !config.mesh_payloads_inline;
  mc.local_rings = !config.mesh_socket_streams;
  mc.copies_elsewhere = config.mesh_copy_thread;
  if (config.heartbeat_timeout.count() > 0) {
    mc.heartbeat_timeout = config.heartbeat_timeout;
    mc.heartbeat_interval = std::min(mc.heartbeat_interval, config.heartbeat_timeout / 4);
  }
  if (config.handshake_timeout.count() > 0) {
    mc.handshake_timeout = config.handshake_timeout;
  }
  if (config.protocol_major != 0) {
    mc.version_major = config.protocol_major;
    mc.version_minor = config.protocol_minor;
  }
  return mc;
}

int run_instance(const InstanceConfig& config) {
  Logger log;
  log.open(config.log_file, config.log_level);
  raise_descriptor_limit(log);
  const int signal_fd = take_termination_signals();

  EventLoop loop(config.spin);
  int exit_status = 0;

  std::unique_ptr<LocalHub> hub;
  std::unique_ptr<MeshFabric> mesh;
  Fabric* fabric = nullptr;
  if (config.backend.kind == Backend::Kind::kLoopback) {
    hub = std::make_unique<LocalHub>();
    fabric = &hub->add_node(0, config.gids);
  } else {
    mesh = std::make_unique<MeshFabric>(loop, log, mesh_config(config));
    fabric = mesh.get();
  }
  Engine engine(*fabric, engine_config(config));
  if (hub) {
    hub->attach(0, engine);
    loop.add_poller({[&hub] { return hub->deliver(4096) > 0; }, [&hub] { return hub->idle(); }});
  } else {
    mesh->attach(engine);
  }
  ShmFrontEnd front(loop, engine, log,
                    {[fabric] { return fabric->local_node(); }, config.gids, config.mac});
  if (mesh) {
    mesh->share_memory_from(front);
  }
  loop.set_deadline_source([&engine] { return engine.next_deadline(); },
                           [&engine] { engine.advance_timers(); });
  loop.set_after_work([&] {
    // Wake a waiting client before writing the frames: on a delivered SEND or WRITE the frame
    // is the acknowledgement, which nobody waits for yet, and its write (a wake-up of the peer
    // instance) came first on the path of every latency test (write_lat 34.3 -> 31.8 us).
    front.notify();
    if (mesh) {
      mesh->flush();
    }
  });
  loop.add_fd(signal_fd, EPOLLIN, [&](std::uint32_t) {
    signalfd_siginfo info{};
    [[maybe_unused]] auto ignored = read(signal_fd, &info, sizeof info);
    log.info("ernic: signal {} received, stopping", info.ssi_signo);
    loop.stop();
  });
  // With bulk copies on the idle-priority thread, what is left on this one is light: it takes
  // a short slice while it carries latency traffic and steps back while it carries only bulk.
  std::optional<TrafficScheduling> traffic;
  if (config.mesh_copy_thread) {
    traffic.emplace([&engine] { return engine.stats().latency_requests; },
                    TrafficScheduling::for_calling_thread(), EventLoop::Clock::now());
    loop.add_poller({[&traffic] {
                       traffic->observe(EventLoop::Clock::now());
                       return false;
                     },
                     nullptr});
  }
  StatsFile stats(config.stats_file,
                  {&engine,
                   [&] {
                     return fmt::format("{} ({} peers)", backend_description(config, mesh.get()),
                                        mesh ? mesh->stats().peers : 0);
                   },
                   &engine.stats(), mesh ? &mesh->stats() : nullptr, &front, &loop,
                   traffic ? &*traffic : nullptr},
                  log);
  auto update_stats = [&stats] { stats.update(); };
  front.set_on_detach(update_stats);
  loop.add_poller({[] { return false; },
                   [&stats] {
                     stats.update_if_traffic_stopped();
                     return true;
                   }});
  std::function<void()> stats_tick = [&] {
    update_stats();
    loop.add_timer(EventLoop::Clock::now() + config.stats_interval, stats_tick);
  };

  std::unique_ptr<GuestRegionFile> guest_region;
  auto on_ready = [&] {
    try {
      front.listen(config.socket_path);
      if (!config.guest_region.empty()) {
        guest_region =
            std::make_unique<GuestRegionFile>(config.guest_region, config.guest_region_size);
        front.serve_guest_region(*guest_region);
      }
    } catch (const std::exception& e) {
      log.error("ernic: {}", e.what());
      exit_status = 1;
      loop.stop();
      return;
    }
    if (!config.verbs_sysfs.empty()) {
      try {
        verbs_device::write_sysfs(
            config.verbs_sysfs,
            {config.verbs_name, config.socket_path, config.guest_region, config.mac, config.gids});
      } catch (const std::exception& e) {
        log.error("ernic: cannot describe the device for verbs programs: {}", e.what());
        exit_status = 1;
        loop.stop();
        return;
      }
    }
    stats_tick();
    if (mesh) {
      // `ernicctl stats` right after `up` shows the mesh as it is, not as it was a second ago.
      mesh->on_peers_changed(update_stats);
    }
    log.info("{} (node {}, backend {}, socket {}, GIDs {}, MAC {})", kReadyLine,
             fabric->local_node(), backend_description(config, mesh.get()), config.socket_path,
             fmt::join(config.gids, ","), config.mac);
  };
  try {
    if (mesh) {
      mesh->start(on_ready, [&](const std::string& why) {
        log.error("ernic: {}", why);
        exit_status = 1;
        loop.stop();
      });
    } else {
      on_ready();
    }
    loop.run();
  } catch (const std::exception& e) {
    log.error("ernic: {}", e.what());
    exit_status = 1;
  }
  front.close_all();
  front.set_on_detach({});
  if (!config.verbs_sysfs.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(config.verbs_sysfs, ignored);
  }
  if (mesh) {
    mesh->shutdown();
  }
  stats.update();
  close(signal_fd);
  log.info("ernic: instance stopped");
  return exit_status;
}

}  // namespace ernic::emu
