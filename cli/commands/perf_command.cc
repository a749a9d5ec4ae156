#include "commands/perf_command.h"

#include <cstdlib>
#include <iostream>
#include <optional>

#include "base/units.h"
#include "perf/load_generator.h"

namespace ernic::emu::perf {
namespace {

struct PerfFlags {
  std::string mode;
  std::string server;
  std::string socket;
  std::string in_loop;
  std::string gid;
  std::string token;
  std::string peer_socket;
  std::string size;
  bool all_sizes = false;
  std::uint64_t iterations = 0;
  std::uint32_t tx_depth = 0;
  std::uint32_t qps = 1;
  bool report_gbits = false;
  std::uint16_t port = 18515;
  bool verify = false;
  std::string json;
  std::string bind = "127.0.0.1";
  int timeout = 60;
  double idle_seconds = 2.0;
  int duration_seconds = 0;
  bool report_per_second = false;
  bool report_histogram = false;
};

// perftest's rules for the duration and reporting flags; empty when they fit together.
std::string check_reporting(const PerfFlags& f, Mode mode) {
  if (f.duration_seconds < 0 || f.duration_seconds > 86400) {
    return "-D must be between 1 and 86400 seconds";
  }
  if (f.duration_seconds > 0 && f.iterations != 0) {
    return "give -n (iterations) or -D (duration), not both";
  }
  if (f.duration_seconds > 0 && f.all_sizes) {
    return "duration mode (-D) runs one message size: -a is not supported with it";
  }
  if (f.report_per_second && (mode != Mode::kBandwidth || f.duration_seconds == 0)) {
    return "--report-per-second is for bandwidth tests in duration mode (-D)";
  }
  if (f.report_histogram && mode != Mode::kLatency) {
    return "-H (--report-histogram) is for latency tests";
  }
  return "";
}

// --in-loop's instance; an empty `error` when it can run.
std::optional<InstanceConfig> in_loop_instance(const PerfFlags& f, std::string& error) {
  InstanceConfig config;
  auto backend = parse_backend(f.in_loop, error);
  if (!backend || backend->kind == Backend::Kind::kLoopback) {
    error = backend ? "--in-loop needs a mesh backend (tcp:manager:listen:PORT or "
                      "tcp:worker:HOST:PORT)"
                    : "--in-loop: " + error;
    return std::nullopt;
  }
  config.backend = *backend;
  const auto gid = canonical_gid(f.gid);
  if (!gid) {
    error = f.gid.empty() ? "--in-loop needs --gid (the GID the peer addresses this side by)"
                          : "--gid '" + f.gid + "' is neither IPv6 nor IPv4";
    return std::nullopt;
  }
  config.gids = {*gid};
  config.token = f.token;
  if (const char* env = std::getenv("ERNIC_MESH_TOKEN"); config.token.empty() && env) {
    config.token = env;
  }
  if (config.token.empty()) {
    error = "--in-loop needs a mesh token (--token or ERNIC_MESH_TOKEN)";
    return std::nullopt;
  }
  // The table on stdout is the output; what ends the test is its error on stderr (a worker
  // retrying its manager would otherwise log every attempt).
  config.log_level = LogLevel::kError;
  return config;
}

int run(const PerfFlags& f) {
  const bool baseline = f.mode == "tcp_pingpong" || f.mode == "relay_floor";
  const bool in_loop_test = !f.in_loop.empty() && f.mode != "micro" && !baseline;
  if (!f.in_loop.empty() && (!in_loop_test || !f.socket.empty())) {
    std::cerr << "ernicctl perf: --in-loop runs the instance of a perftest test (send_bw ... "
                 "read_lat) in this process, instead of --socket\n";
    return kExitBadInput;
  }
  if (f.socket.empty() && !baseline && !in_loop_test) {
    std::cerr << "ernicctl perf: --socket PATH (the instance to attach to) is required\n";
    return kExitBadInput;
  }
  if (f.mode == "micro") {
    MicroOptions m;
    m.socket = f.socket;
    m.peer_socket = f.peer_socket;
    m.iterations = f.iterations == 0 ? 2000 : f.iterations;
    m.idle_seconds = f.idle_seconds;
    return run_micro(m, std::cout, std::cerr);
  }
  if (baseline) {
    auto size = parse_size(f.size.empty() ? "4096" : f.size);
    if (!size || *size == 0 || *size > (64u << 20)) {
      std::cerr << "ernicctl perf: -s must be a size between 1 byte and 64 MiB\n";
      return kExitBadInput;
    }
    if (f.iterations > 1000000) {
      std::cerr << "ernicctl perf: -n must be at most 1000000 for " << f.mode << "\n";
      return kExitBadInput;
    }
    const std::uint64_t iterations = f.iterations == 0 ? 2000 : f.iterations;
    return f.mode == "tcp_pingpong" ? run_tcp_pingpong(*size, iterations, std::cout, std::cerr)
                                    : run_relay_floor(*size, iterations, std::cout, std::cerr);
  }
  PerfOptions o;
  const auto underscore = f.mode.find('_');
  const std::string verb = f.mode.substr(0, underscore);
  const std::string mode = underscore == std::string::npos ? "" : f.mode.substr(underscore + 1);
  if ((verb != "send" && verb != "write" && verb != "read") || (mode != "bw" && mode != "lat")) {
    std::cerr << "ernicctl perf: unknown test '" << f.mode
              << "' (send_bw, write_bw, read_bw, send_lat, write_lat, read_lat, micro, "
                 "tcp_pingpong or relay_floor)\n";
    return kExitBadInput;
  }
  o.verb = verb == "send" ? Verb::kSend : verb == "write" ? Verb::kWrite : Verb::kRead;
  o.mode = mode == "bw" ? Mode::kBandwidth : Mode::kLatency;
  if (const std::string problem = check_reporting(f, o.mode); !problem.empty()) {
    std::cerr << "ernicctl perf: " << problem << "\n";
    return kExitBadInput;
  }
  o.duration_seconds = f.duration_seconds;
  o.report_per_second = f.report_per_second;
  o.report_histogram = f.report_histogram;
  o.socket = f.socket;
  if (in_loop_test) {
    std::string error;
    o.in_loop = in_loop_instance(f, error);
    if (!o.in_loop) {
      std::cerr << "ernicctl perf: " << error << "\n";
      return kExitBadInput;
    }
  }
  if (f.all_sizes) {
    for (std::uint64_t s = 2; s <= (8u << 20); s *= 2) {
      o.sizes.push_back(s);
    }
  } else {
    auto size = parse_size(f.size.empty() ? (o.mode == Mode::kBandwidth ? "65536" : "2") : f.size);
    if (!size || *size == 0 || *size > (1ull << 30)) {
      std::cerr << "ernicctl perf: -s must be a size between 1 byte and 1 GiB\n";
      return kExitBadInput;
    }
    o.sizes.push_back(*size);
  }
  o.iterations = f.iterations != 0 ? f.iterations : (o.mode == Mode::kBandwidth ? 5000 : 1000);
  o.tx_depth = f.tx_depth != 0 ? f.tx_depth : (o.mode == Mode::kBandwidth ? 128 : 1);
  if (o.tx_depth > 1024 || f.qps == 0 || f.qps > 64 || o.iterations > (1ull << 32)) {
    std::cerr << "ernicctl perf: -t must be at most 1024, -q between 1 and 64\n";
    return kExitBadInput;
  }
  o.qps = f.qps;
  o.report_gbits = f.report_gbits;
  o.port = f.port;
  o.verify = f.verify;
  o.json = f.json;
  o.server = f.server;
  o.bind = f.bind;
  o.timeout_seconds = f.timeout;
  return run_load_generator(o, std::cout, std::cerr);
}

}  // namespace

void register_perf(CLI::App& app, CommandContext& context) {
  auto f = std::make_shared<PerfFlags>();
  CLI::App* cmd = app.add_subcommand(
      "perf", "perftest-equivalent load generator attached to an embedded emulator instance");
  cmd->add_option(
         "test", f->mode,
         "send_bw | write_bw | read_bw | send_lat | write_lat | read_lat | micro | tcp_pingpong | "
         "relay_floor")
      ->required();
  cmd->add_option("server", f->server, "server address: run as the client");
  cmd->add_option("--socket", f->socket, "socket of the instance to attach to");
  cmd->add_option("--in-loop", f->in_loop,
                  "run an instance in this process on this mesh backend (tcp:manager:listen:PORT "
                  "or tcp:worker:HOST:PORT) instead of attaching to one through --socket");
  cmd->add_option("--gid", f->gid, "--in-loop: the instance's GID");
  cmd->add_option("--token", f->token, "--in-loop: the mesh token (else ERNIC_MESH_TOKEN)");
  cmd->add_option("--peer-socket", f->peer_socket,
                  "micro: a second instance for the mesh round trip");
  cmd->add_option("-s,--size", f->size, "message size");
  cmd->add_flag("-a,--all", f->all_sizes, "all sizes from 2 bytes to 8 MiB");
  cmd->add_option("-n,--iters", f->iterations, "iterations per size (and QP)");
  cmd->add_option("-D,--duration", f->duration_seconds,
                  "duration mode: run SECONDS (a quarter warm-up, a quarter cool-down, the middle "
                  "measured), one size; the server serves until the client ends");
  cmd->add_flag("--report-per-second,--report_per_second", f->report_per_second,
                "bandwidth with -D: a table row per measured second, then the summary row");
  cmd->add_flag("-H,--report-histogram", f->report_histogram,
                "latency (client): every measured iteration's latency before its row");
  cmd->add_option("-t,--tx-depth", f->tx_depth, "work requests in flight per QP");
  cmd->add_option("-q,--qp", f->qps, "number of QPs")->capture_default_str();
  cmd->add_flag("--report_gbits,--report-gbits", f->report_gbits, "bandwidth in Gb/sec");
  cmd->add_option("-p,--port", f->port, "out-of-band TCP port")->capture_default_str();
  cmd->add_flag("--verify", f->verify, "check every byte that arrives");
  cmd->add_option("--json", f->json, "write every sample to this JSON file");
  cmd->add_option("--bind", f->bind, "server: address of the out-of-band listener")
      ->capture_default_str();
  cmd->add_option("--timeout", f->timeout, "seconds without progress before giving up")
      ->capture_default_str();
  cmd->add_option("--idle-seconds", f->idle_seconds, "micro: how long to watch the idle CPU")
      ->capture_default_str();
  cmd->callback([f, &context] { context.exit_code = run(*f); });
}

}  // namespace ernic::emu::perf
