// `ernicctl logs N` and `ernicctl stats N [--summary]`: one emulator instance's log and its
// statistics file, as rocm-ernic's helper prints them (read over SSH for an instance `up` placed
// on another machine).
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "base/units.h"
#include "commands/bringup/bringup_state.h"
#include "emulators/instance_machines.h"
#include "supervisor.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

std::optional<ManifestInstance> instance_of(const StateFlags& flags, int id) {
  auto state = read_state_or_say(flags);
  if (!state) {
    return std::nullopt;
  }
  if (const ManifestInstance* instance = state->find_instance(id)) {
    return *instance;
  }
  std::cerr << fmt::format("no instance {}: the run has {}\n", id, state->instances.size());
  return std::nullopt;
}

enum class InstanceFile { kLog, kStats };

// The instance's log or its stats file, here or on its machine; nothing when unreadable.
std::optional<std::string> instance_file(const ManifestInstance& instance, InstanceFile which) {
  if (instance.remote) {
    const RemoteInstance& remote = *instance.remote;
    CommandResult read = run_to_end(
        *reconnect(remote), {"cat", which == InstanceFile::kLog ? remote.log : remote.stats});
    return read.ok() ? std::optional(read.out) : std::nullopt;
  }
  std::ifstream in(which == InstanceFile::kLog ? instance.log : instance.stats);
  if (!in) {
    return std::nullopt;
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int logs(const StateFlags& flags, int id, int lines) {
  auto instance = instance_of(flags, id);
  if (!instance) {
    return kExitBadInput;
  }
  auto text = instance_file(*instance, InstanceFile::kLog);
  if (!text) {
    std::cerr << fmt::format("cannot read {}{}\n", instance->log,
                             instance->remote ? " on " + instance->remote->on : "");
    return kExitFailed;
  }
  std::istringstream in(*text);
  std::vector<std::string> kept;
  for (std::string line; std::getline(in, line);) {
    kept.push_back(line);
  }
  std::size_t first = lines > 0 && kept.size() > static_cast<std::size_t>(lines)
                          ? kept.size() - static_cast<std::size_t>(lines)
                          : 0;
  for (std::size_t i = first; i < kept.size(); ++i) {
    std::cout << kept[i] << "\n";
  }
  return kExitOk;
}

int stats(const StateFlags& flags, int id, bool summary) {
  auto instance = instance_of(flags, id);
  if (!instance) {
    return kExitBadInput;
  }
  fs::path file = instance->stats;
  // `key : value` lines, rewritten every second by the instance.
  auto values =
      emu::Supervisor::parse_stats(instance_file(*instance, InstanceFile::kStats).value_or(""));
  if (values.empty()) {
    std::cerr << fmt::format("no statistics in {} yet\n", file.string());
    return kExitFailed;
  }
  if (!summary) {
    for (const auto& [key, value] : values) {
      fmt::print("{} : {}\n", key, value);
    }
    return kExitOk;
  }
  auto bytes = [&](const char* key) {
    return values.contains(key) ? format_size(std::strtoull(values[key].c_str(), nullptr, 10))
                                : std::string("?");
  };
  auto value = [&](const char* key) {
    return values.contains(key) ? values[key] : std::string("?");
  };
  fmt::print("instance {} ({}): sent {}, received {}, completions {}, errors {}, qps {}\n", id,
             instance->role, bytes("bytes_sent"), bytes("bytes_received"), value("completions"),
             value("errors"), value("qps"));
  return kExitOk;
}

}  // namespace

void register_logs_and_stats_commands(CLI::App& app, CommandContext& context) {
  auto logs_flags = std::make_shared<StateFlags>();
  auto logs_id = std::make_shared<int>(1);
  auto lines = std::make_shared<int>(0);
  CLI::App* logs_command = app.add_subcommand("logs", "Print an emulator instance's log");
  logs_command->add_option("instance", *logs_id, "Instance number (1 = the manager)")
      ->capture_default_str();
  logs_command->add_option("-n,--lines", *lines, "Only the last N lines");
  add_state_option(logs_command, *logs_flags);
  logs_command->callback([logs_flags, logs_id, lines, &context] {
    run_guarded(context, [&] { return logs(*logs_flags, *logs_id, *lines); });
  });

  auto stats_flags = std::make_shared<StateFlags>();
  auto stats_id = std::make_shared<int>(1);
  auto summary = std::make_shared<bool>(false);
  CLI::App* stats_command = app.add_subcommand("stats", "Print an emulator instance's statistics");
  stats_command->add_option("instance", *stats_id, "Instance number (1 = the manager)")
      ->capture_default_str();
  stats_command->add_flag("--summary", *summary, "One line: bytes, completions, errors, QPs");
  add_state_option(stats_command, *stats_flags);
  stats_command->callback([stats_flags, stats_id, summary, &context] {
    run_guarded(context, [&] { return stats(*stats_flags, *stats_id, *summary); });
  });
}

}  // namespace ernic
