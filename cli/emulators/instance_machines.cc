#include "emulators/instance_machines.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <thread>

#include "base/durable_file.h"
#include "base/edit_distance.h"
#include "hosts/ssh/ssh_host.h"
#include "supervisor.h"

namespace ernic {
namespace fs = std::filesystem;

std::shared_ptr<const ObjectSchema> placement_schema(std::string program_key,
                                                     std::string program_description,
                                                     std::string bind_description) {
  return std::make_shared<const ObjectSchema>(ObjectSchema{
      .description = "One instance, in id order (the first is the manager)",
      .fields = {
          {.name = "on",
           .kind = ValueKind::kString,
           .description = "Host of the scenario that runs it (through that host's connection), "
                          "or local: this machine",
           .default_text = kThisMachine},
          {.name = "bind", .kind = ValueKind::kIpv4, .description = std::move(bind_description)},
          {.name = std::move(program_key),
           .kind = ValueKind::kString,
           .description = std::move(program_description)},
      }});
}

std::vector<Placement> placements_of(const Config& emulator, const std::string& program_key) {
  std::vector<Placement> placements;
  for (const Config& entry : emulator.objects("instances")) {
    placements.push_back(Placement{.id = static_cast<int>(placements.size()) + 1,
                                   .on = entry.text("on", kThisMachine),
                                   .bind = entry.text("bind", ""),
                                   .program = entry.text(program_key, "")});
  }
  return placements;
}

std::vector<std::string> placement_hosts_of(const std::vector<Placement>& placements) {
  std::vector<std::string> hosts;
  for (const auto& placement : placements) {
    if (!placement.local() && std::find(hosts.begin(), hosts.end(), placement.on) == hosts.end()) {
      hosts.push_back(placement.on);
    }
  }
  return hosts;
}

void check_placements(const Config& emulator, const std::vector<std::string>& host_names,
                      Diagnostics& out) {
  std::vector<std::string> known = host_names;
  known.emplace_back(kThisMachine);
  for (const Config& entry : emulator.objects("instances")) {
    const std::string on = entry.text("on", kThisMachine);
    if (std::find(known.begin(), known.end(), on) != known.end()) {
      continue;
    }
    std::string message = fmt::format("no host named '{}' to run the instance on", on);
    if (auto guess = closest_match(on, known); !guess.empty()) {
      message += fmt::format("; did you mean '{}'?", guess);
    }
    out.push_back(entry.diagnostic("on", message));
  }
}

Host& placement_host(const Placement& placement, const EmulatorContext& context,
                     Host& this_machine) {
  if (placement.local()) {
    return this_machine;
  }
  Host* host = context.host ? context.host(placement.on) : nullptr;
  if (host == nullptr) {
    throw std::logic_error(fmt::format("host {} of emulator instance {} was not created first",
                                       placement.on, placement.id));
  }
  return *host;
}

std::string machine_dir(const std::string& base, const std::string& on) {
  if (on == kThisMachine) {
    return base;
  }
  std::string safe;
  for (char c : on.substr(0, 24)) {
    safe += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  }
  return fmt::format("{}-{}", base, safe);
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

InstanceTraffic traffic_of(const std::map<std::string, std::string>& stats) {
  auto counter = [&stats](const char* key) -> std::uint64_t {
    auto it = stats.find(key);
    return it == stats.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
  };
  return {counter("total_bytes_sent"), counter("total_bytes_received")};
}

CommandResult run_to_end(Host& host, std::vector<std::string> argv,
                         std::chrono::milliseconds timeout) {
  auto command =
      host.start(CommandSpec{.argv = std::move(argv), .timeout = timeout, .env = {}}, nullptr);
  const auto deadline = Clock::now() + timeout;
  while (command->running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return command->wait(Clock::now());
}

// Teardown of one machine's directory: the kept files into the run directory, then the
// directory (token, sockets, a copied program) removed.
void collect_and_remove(Host& host, const std::string& on, const std::string& dir,
                        const fs::path& kept, const std::vector<std::string>& files) {
  std::string missed;
  for (const auto& file : files) {
    CommandResult read = run_to_end(host, {"cat", file});
    std::string why = read.ok()
                          ? write_file_durably_or_reason(kept / fs::path(file).filename(), read.out,
                                                         {.durability = Durability::kDerived})
                          : read.describe();
    if (!why.empty()) {
      missed += fmt::format("{}{} ({})", missed.empty() ? "" : ", ", file, why);
    }
  }
  CommandResult removed = run_to_end(host, {"rm", "-rf", dir});
  if (!removed.ok()) {
    throw std::runtime_error(
        fmt::format("rm -rf {} on {}: {}{}", dir, on, removed.describe(), trimmed(removed.err)));
  }
  if (!missed.empty()) {
    throw std::runtime_error(fmt::format("could not copy from {}: {}", on, missed));
  }
}

void prepare_machine_dir(Host& host, const std::string& on, const std::string& dir,
                         const fs::path& kept, std::function<std::vector<std::string>()> kept_files,
                         CleanupStack& cleanup) {
  CommandResult made = run_to_end(host, {"mkdir", "-p", "-m", "0700", dir});
  if (!made.ok()) {
    throw std::runtime_error(
        fmt::format("cannot create {} on {}: {} {}", dir, on, made.describe(), trimmed(made.err)));
  }
  cleanup.push(fmt::format("copy the emulator instances' files on {} into {} and remove {}", on,
                           kept.string(), dir),
               [&host, on, dir, kept, kept_files = std::move(kept_files)] {
                 collect_and_remove(host, on, dir, kept, kept_files());
               });
}

namespace {

// Whether the pid still is the instance: it runs, with the socket among its arguments.
constexpr const char* kIsOurs =
    "ours() { kill -s 0 \"$1\" 2>/dev/null && tr '\\000' '\\n' </proc/\"$1\"/cmdline | "
    "grep -qxF -- \"$2\"; }; ";

CommandResult checked(Host& host, std::vector<std::string> argv, const std::string& what) {
  CommandResult result = run_to_end(host, std::move(argv));
  if (!result.ok()) {
    throw std::runtime_error(
        fmt::format("{} on {}: {} {}", what, host.name(), result.describe(), trimmed(result.err)));
  }
  return result;
}

}  // namespace

std::unique_ptr<Host> reconnect(const RemoteInstance& remote) {
  return std::make_unique<SshHost>(remote.on, remote.address, remote.ssh);
}

std::string remote_condition(Host& host, const RemoteInstance& remote) {
  CommandResult result = checked(
      host,
      {"sh", "-c",
       std::string(kIsOurs) +
           "if ours \"$1\" \"$2\"; then if [ -S \"$2\" ]; then echo up; else echo 'no socket'; "
           "fi; else echo gone; fi",
       "sh", std::to_string(remote.pid), remote.socket},
      fmt::format("checking {}", remote.describe()));
  return trimmed(result.out);
}

std::map<std::string, std::string> remote_stats(Host& host, const std::string& stats) {
  CommandResult read = run_to_end(host, {"cat", stats}, std::chrono::seconds(5));
  return read.ok() ? emu::Supervisor::parse_stats(read.out) : std::map<std::string, std::string>{};
}

bool stop_remote_group(Host& host, pid_t pid, const std::string& socket,
                       std::chrono::milliseconds grace) {
  const long ticks = std::max<long>(1, static_cast<long>(grace.count() / 50));
  CommandResult result =
      checked(host,
              {"sh", "-c",
               std::string(kIsOurs) +
                   "ours \"$1\" \"$2\" || { echo gone; exit 0; }; "
                   "kill -s TERM -- -\"$1\" 2>/dev/null || kill -s TERM \"$1\"; i=0; "
                   "while kill -s 0 -- -\"$1\" 2>/dev/null && [ $i -lt \"$3\" ]; do sleep 0.05; "
                   "i=$((i+1)); done; kill -s KILL -- -\"$1\" 2>/dev/null; echo stopped",
               "sh", std::to_string(pid), socket, std::to_string(ticks)},
              fmt::format("stopping the emulator instance with pid {}", pid));
  return trimmed(result.out) == "stopped";
}

pid_t start_detached(Host& host, const std::vector<std::string>& argv, const std::string& log) {
  std::vector<std::string> command = {
      "sh", "-c", "log=$1; shift; setsid \"$@\" >\"$log\" 2>&1 </dev/null & echo $!", "sh", log};
  command.insert(command.end(), argv.begin(), argv.end());
  CommandResult started = checked(host, std::move(command), "starting " + argv.front());
  try {
    return static_cast<pid_t>(std::stol(trimmed(started.out)));
  } catch (const std::exception&) {
    throw std::runtime_error(fmt::format("starting {} on {} printed no pid: '{}'", argv.front(),
                                         host.name(), trimmed(started.out)));
  }
}

void InstanceLog::on_output(OutputStream /*stream*/, std::string_view data) {
  std::lock_guard lock(mutex_);
  out_.write(data.data(), static_cast<std::streamsize>(data.size()));
  out_.flush();
  if (head_.size() < 64 * 1024) {
    head_.append(data);
  }
}

std::string InstanceLog::head() {
  std::lock_guard lock(mutex_);
  return head_;
}

}  // namespace ernic
