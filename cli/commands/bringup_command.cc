// `ernicctl up / status / logs / stats / ssh / down`: a developer's environment left running.
//
// `up` is `run` without points: the executor brings up instances and hosts, applies setup, and
// leaves everything running instead of tearing it down. What exists is written to
// STATE_DIR/up.json (for these commands) and STATE_DIR/instances.json (rocm-ernic's manifest, for
// their playbooks). `down` finds everything by the run's token, so it also cleans up after a
// run that was killed.
#include <fmt/format.h>
#include <libvirt/libvirt.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "commands/commands.h"
#include "common/interrupt.h"
#include "common/units.h"
#include "hosts/libvirt_connection.h"
#include "plan/plan.h"
#include "run/executor.h"
#include "run/leftovers.h"
#include "run/status.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kDefaultLibvirtUri = "qemu:///system";

std::string default_state_dir() {
  const char* run_dir = std::getenv("ERNIC_RUN_DIR");
  return run_dir != nullptr && *run_dir != '\0' ? run_dir : "/run/ernicctl";
}

struct StateFlags {
  std::string state_dir = default_state_dir();
};

fs::path state_file(const StateFlags& flags) {
  return fs::path(flags.state_dir) / "up.json";
}

// Written beside the target and renamed, so a reader never sees half a file.
void write_atomically(const fs::path& path, const json& content) {
  fs::create_directories(path.parent_path());
  fs::path temporary = path;
  temporary += ".tmp";
  {
    std::ofstream out(temporary);
    out << content.dump(2) << "\n";
    if (!out) {
      throw std::runtime_error("cannot write " + temporary.string());
    }
  }
  fs::rename(temporary, path);
}

std::optional<json> read_state(const StateFlags& flags) {
  std::ifstream in(state_file(flags));
  if (!in) {
    return std::nullopt;
  }
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error(
        fmt::format("{} is not valid JSON ({}): remove it or run ernicctl down",
                    state_file(flags).string(), e.what()));
  }
}

bool process_alive(long pid) {
  return process_running(static_cast<pid_t>(pid));
}

// The harness's manifest: instances[].id and instances[].vm.{vm_name,ssh_port,ssh_user} are what
// their playbooks read.
json harness_manifest(const Scenario& scenario, const RunResult& result) {
  json manifest =
      result.instances.is_null() ? json{{"instances", json::array()}} : result.instances;
  for (auto& instance : manifest["instances"]) {
    for (const auto& spec : scenario.hosts) {
      if (!spec.config["instance"] || spec.config["instance"].as<int>() != instance["id"]) {
        continue;
      }
      json vm = {
          {"vm_name", spec.name}, {"ssh_port", 22}, {"ssh_user", "root"}, {"attached", true}};
      for (const auto& host : result.hosts) {
        if (host.name != spec.name) {
          continue;
        }
        vm["address"] = host.address;
        if (auto it = host.facts.find("domain"); it != host.facts.end()) {
          vm["vm_name"] = it->second;
        }
        if (auto it = host.facts.find("ssh_user"); it != host.facts.end()) {
          vm["ssh_user"] = it->second;
        }
      }
      instance["vm"] = vm;
    }
  }
  return manifest;
}

std::string libvirt_uri_of(const json& state) {
  for (const auto& host : state["hosts"]) {
    if (host["facts"].contains("uri")) {
      return host["facts"]["uri"];
    }
  }
  return kDefaultLibvirtUri;
}

// --- up -----------------------------------------------------------------------------------

struct UpFlags : StateFlags {
  std::string scenario;
  std::vector<std::string> sets;
  std::string runs_dir = "runs";
};

int up(const UpFlags& flags) {
  Interrupt::install();
  if (auto state = read_state(flags)) {
    std::cerr << fmt::format("{} says scenario {} is up (run {}); run `ernicctl down` first\n",
                             state_file(flags).string(), (*state)["scenario"].get<std::string>(),
                             (*state)["run_token"].get<std::string>());
    return kExitBadInput;
  }
  auto scenario = load_or_report(flags.scenario, flags.sets);
  if (!scenario) {
    return kExitBadInput;
  }
  Plan plan = make_plan(*scenario);
  RunOptions options;
  options.runs_dir = flags.runs_dir;
  options.bring_up_only = true;
  std::optional<RunResult> executed = execute_plan(plan, options, false);
  if (!executed) {
    return kExitBadInput;
  }
  const RunResult& result = *executed;
  if (!result.left_running) {
    std::cerr << fmt::format("up failed: {}; everything was torn down (logs: {})\n",
                             result.fatal_error.empty() ? "see the step logs" : result.fatal_error,
                             result.run_dir.string());
    return result.status == RunStatus::kIncomplete ? kExitInterrupted : kExitFailed;
  }
  json hosts = json::array();
  for (const auto& host : result.hosts) {
    hosts.push_back({{"name", host.name},
                     {"provider", host.provider},
                     {"address", host.address},
                     {"facts", host.facts}});
  }
  json manifest = harness_manifest(*scenario, result);
  json state = {{"scenario", fs::absolute(scenario->file).string()},
                {"name", scenario->name},
                {"run_token", result.run_token},
                {"run_dir", fs::absolute(result.run_dir).string()},
                {"hosts", hosts},
                {"instances", manifest["instances"]}};
  write_atomically(fs::path(flags.state_dir) / "instances.json", manifest);
  write_atomically(state_file(flags), state);
  fmt::print("\n{} is up (run {}):\n", scenario->name, result.run_token);
  for (const auto& host : result.hosts) {
    fmt::print("  host {:<10} {:<9} {}\n", host.name, host.provider, host.address);
  }
  for (const auto& instance : manifest["instances"]) {
    fmt::print("  instance {} {:<8} pid {}  {}\n", instance["id"].get<int>(),
               instance["role"].get<std::string>(), instance["pid"].get<long>(),
               instance["socket"].get<std::string>());
  }
  fmt::print("state: {}\n`ernicctl status`, `ernicctl ssh HOST`, `ernicctl down` when done\n",
             state_file(flags).string());
  return kExitOk;
}

// --- status -------------------------------------------------------------------------------

json current_status(const json& state) {
  json report = {{"name", state["name"]},
                 {"run_token", state["run_token"]},
                 {"run_dir", state["run_dir"]},
                 {"hosts", json::array()},
                 {"instances", json::array()}};
  bool all_up = true;
  std::unique_ptr<LibvirtConnection> libvirt;
  for (const auto& host : state["hosts"]) {
    std::string condition = "unknown";
    const json& facts = host["facts"];
    if (facts.contains("netns")) {
      condition = fs::exists("/run/netns/" + facts["netns"].get<std::string>()) ? "up" : "gone";
    } else if (facts.contains("domain")) {
      try {
        if (!libvirt) {
          libvirt = std::make_unique<LibvirtConnection>(libvirt_uri_of(state));
        }
        virDomainPtr domain =
            virDomainLookupByName(libvirt->get(), facts["domain"].get<std::string>().c_str());
        condition = domain == nullptr ? "gone" : virDomainIsActive(domain) == 1 ? "up" : "stopped";
        if (domain != nullptr) {
          virDomainFree(domain);
        }
      } catch (const std::exception& e) {
        condition = "unknown";
      }
    } else if (host["provider"] == "embedded" || host["provider"] == "local") {
      condition = "up";  // this machine
    }
    all_up = all_up && condition != "gone" && condition != "stopped";
    report["hosts"].push_back({{"name", host["name"]},
                               {"provider", host["provider"]},
                               {"address", host["address"]},
                               {"state", condition}});
  }
  for (const auto& instance : state["instances"]) {
    bool running = process_alive(instance["pid"].get<long>());
    bool socket = fs::exists(instance["socket"].get<std::string>());
    std::string condition = running && socket ? "up" : running ? "no socket" : "gone";
    all_up = all_up && condition == "up";
    report["instances"].push_back({{"id", instance["id"]},
                                   {"role", instance["role"]},
                                   {"pid", instance["pid"]},
                                   {"socket", instance["socket"]},
                                   {"state", condition}});
  }
  report["up"] = all_up;
  return report;
}

int status_command(const StateFlags& flags, bool as_json) {
  auto state = read_state(flags);
  if (!state) {
    if (as_json) {
      std::cout << json{{"up", false}, {"hosts", json::array()}, {"instances", json::array()}}
                << "\n";
    } else {
      std::cerr << fmt::format("nothing is up ({} does not exist): ernicctl up SCENARIO\n",
                               state_file(flags).string());
    }
    return kExitBadInput;
  }
  json report = current_status(*state);
  if (as_json) {
    std::cout << report.dump(2) << "\n";
  } else {
    fmt::print("{} (run {}): {}\n", report["name"].get<std::string>(),
               report["run_token"].get<std::string>(),
               report["up"].get<bool>() ? "up" : "partly down");
    for (const auto& host : report["hosts"]) {
      fmt::print("  host {:<10} {:<9} {:<16} {}\n", host["name"].get<std::string>(),
                 host["provider"].get<std::string>(), host["address"].get<std::string>(),
                 host["state"].get<std::string>());
    }
    for (const auto& instance : report["instances"]) {
      fmt::print("  instance {} {:<8} pid {:<8} {}\n", instance["id"].get<int>(),
                 instance["role"].get<std::string>(), instance["pid"].get<long>(),
                 instance["state"].get<std::string>());
    }
  }
  return report["up"].get<bool>() ? kExitOk : kExitFailed;
}

// --- logs and stats -----------------------------------------------------------------------

std::optional<json> instance_of(const StateFlags& flags, int id) {
  auto state = read_state(flags);
  if (!state) {
    std::cerr << fmt::format("nothing is up ({} does not exist)\n", state_file(flags).string());
    return std::nullopt;
  }
  for (const auto& instance : (*state)["instances"]) {
    if (instance["id"] == id) {
      return instance;
    }
  }
  std::cerr << fmt::format("no instance {}: the run has {}\n", id, (*state)["instances"].size());
  return std::nullopt;
}

int logs_command(const StateFlags& flags, int id, int lines) {
  auto instance = instance_of(flags, id);
  if (!instance) {
    return kExitBadInput;
  }
  std::ifstream in((*instance)["log"].get<std::string>());
  if (!in) {
    std::cerr << fmt::format("cannot read {}\n", (*instance)["log"].get<std::string>());
    return kExitFailed;
  }
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

// The stats file has `key : value` lines, rewritten every second by the instance.
std::map<std::string, std::string> read_stats(const fs::path& file) {
  std::map<std::string, std::string> values;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto colon = line.find(" : ");
    if (colon != std::string::npos) {
      values[line.substr(0, colon)] = line.substr(colon + 3);
    }
  }
  return values;
}

int stats_command(const StateFlags& flags, int id, bool summary) {
  auto instance = instance_of(flags, id);
  if (!instance) {
    return kExitBadInput;
  }
  fs::path file = (*instance)["stats"].get<std::string>();
  auto values = read_stats(file);
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
             (*instance)["role"].get<std::string>(), bytes("bytes_sent"), bytes("bytes_received"),
             value("completions"), value("errors"), value("qps"));
  return kExitOk;
}

// --- ssh ----------------------------------------------------------------------------------

int ssh_command(const StateFlags& flags, const std::string& name,
                const std::vector<std::string>& command) {
  auto state = read_state(flags);
  if (!state) {
    std::cerr << fmt::format("nothing is up ({} does not exist)\n", state_file(flags).string());
    return kExitBadInput;
  }
  for (const auto& host : (*state)["hosts"]) {
    if (host["name"] != name) {
      continue;
    }
    const json& facts = host["facts"];
    std::vector<std::string> argv;
    if (facts.contains("netns")) {
      argv = {"ip", "netns", "exec", facts["netns"].get<std::string>()};
      if (command.empty()) {
        const char* shell = std::getenv("SHELL");
        argv.push_back(shell != nullptr && *shell != '\0' ? shell : "/bin/sh");
      }
    } else if (facts.contains("ssh_key")) {
      argv = {"ssh",
              "-i",
              facts["ssh_key"].get<std::string>(),
              "-o",
              "UserKnownHostsFile=" + facts["ssh_known_hosts"].get<std::string>(),
              "-o",
              "GlobalKnownHostsFile=/dev/null",
              "-o",
              "StrictHostKeyChecking=yes",
              "-l",
              facts["ssh_user"].get<std::string>(),
              host["address"].get<std::string>()};
    } else {
      std::cerr << fmt::format("{} is a {} host: nothing to log in to\n", name,
                               host["provider"].get<std::string>());
      return kExitBadInput;
    }
    argv.insert(argv.end(), command.begin(), command.end());
    std::vector<char*> raw;
    for (auto& word : argv) {
      raw.push_back(word.data());
    }
    raw.push_back(nullptr);
    std::cout.flush();
    ::execvp(raw[0], raw.data());
    std::cerr << fmt::format("cannot run {}: {}\n", argv[0], std::strerror(errno));
    return kExitFailed;
  }
  std::cerr << fmt::format("no host {} in run {}\n", name,
                           (*state)["run_token"].get<std::string>());
  return kExitBadInput;
}

// --- down ---------------------------------------------------------------------------------

// The instances `up` recorded, when they still run: found by name only if their sockets are in
// the run's default directory, and an external server may have been given another one. A pid
// counts only while its command line still names the instance's socket (pids get reused).
void add_recorded_instances(const json& state, LeftoverScan& scan) {
  std::string token = state["run_token"];
  if (scan.live_tokens.contains(token)) {
    return;
  }
  for (const auto& instance : state.value("instances", json::array())) {
    if (!instance.contains("pid") || !instance.contains("socket")) {
      continue;
    }
    auto pid = instance["pid"].get<pid_t>();
    std::string pid_text = std::to_string(pid);
    bool found = std::any_of(scan.found.begin(), scan.found.end(), [&](const Leftover& item) {
      return item.kind == "process" && item.name == pid_text;
    });
    if (!found && process_running(pid) &&
        process_command_line(pid).find(instance["socket"].get<std::string>()) !=
            std::string::npos) {
      scan.found.insert(scan.found.begin(), Leftover{token, "process", pid_text});
    }
  }
}

int down_command(const StateFlags& flags, bool list_only) {
  auto state = read_state(flags);
  std::string uri = state ? libvirt_uri_of(*state) : kDefaultLibvirtUri;
  // Everything of the run `up` started, and of every run whose ernicctl is gone.
  LeftoverScan scan = find_leftovers({}, uri);
  if (state) {
    add_recorded_instances(*state, scan);
  }
  for (const auto& note : scan.notes) {
    std::cerr << "note: " << note << "\n";
  }
  for (const auto& token : scan.live_tokens) {
    std::cerr << fmt::format("left alone: run {} is still going\n", token);
  }
  if (list_only) {
    for (const auto& item : scan.found) {
      fmt::print("{}  {}\n", item.token, item.describe());
    }
    return kExitOk;
  }
  int failures = 0;
  std::set<std::string> failed;
  remove_leftovers(scan.found, uri, [&](const Leftover& item, const std::string& why) {
    ++failures;
    failed.insert(item.describe());
    std::cerr << fmt::format("could not remove {}: {}\n", item.describe(), why);
  });
  for (const auto& item : scan.found) {
    if (!failed.contains(item.describe())) {
      fmt::print("removed {} (run {})\n", item.describe(), item.token);
    }
  }
  if (state) {
    std::error_code ignored;
    fs::remove(fs::path(flags.state_dir) / "instances.json", ignored);
    fs::remove(state_file(flags), ignored);
  }
  fmt::print("down: {} removed{}\n", scan.found.size() - static_cast<std::size_t>(failures),
             failures > 0 ? fmt::format(", {} could not be", failures) : "");
  return failures > 0 ? kExitFailed : kExitOk;
}

template <typename Body>
void guarded(CommandContext& context, Body body) {
  try {
    context.exit_code = body();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    context.exit_code = kExitFailed;
  }
}

void add_state_option(CLI::App* cmd, StateFlags& flags) {
  cmd->add_option("--state-dir", flags.state_dir,
                  "Where up.json and instances.json live (default $ERNIC_RUN_DIR, else "
                  "/run/ernicctl)")
      ->capture_default_str();
}

}  // namespace

void register_bringup_commands(CLI::App& app, CommandContext& context) {
  auto up_flags = std::make_shared<UpFlags>();
  CLI::App* up_cmd = app.add_subcommand(
      "up", "Start a scenario's instances and hosts, apply setup, and leave them running");
  up_cmd->add_option("scenario", up_flags->scenario, "Scenario YAML file")
      ->required()
      ->check(CLI::ExistingFile);
  up_cmd->add_option("--set", up_flags->sets, "Override a key as `run --set` does");
  up_cmd->add_option("--runs-dir", up_flags->runs_dir, "Where the run directory goes")
      ->capture_default_str();
  add_state_option(up_cmd, *up_flags);
  up_cmd->callback([up_flags, &context] { guarded(context, [&] { return up(*up_flags); }); });

  auto status_flags = std::make_shared<StateFlags>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* status_cmd = app.add_subcommand(
      "status", "What `ernicctl up` left running and whether it still runs (exit 0 when all)");
  status_cmd->add_flag("--json", *as_json, "Print JSON");
  add_state_option(status_cmd, *status_flags);
  status_cmd->callback([status_flags, as_json, &context] {
    guarded(context, [&] { return status_command(*status_flags, *as_json); });
  });

  auto logs_flags = std::make_shared<StateFlags>();
  auto logs_id = std::make_shared<int>(1);
  auto lines = std::make_shared<int>(0);
  CLI::App* logs_cmd = app.add_subcommand("logs", "Print an emulator instance's log");
  logs_cmd->add_option("instance", *logs_id, "Instance number (1 = the manager)")
      ->capture_default_str();
  logs_cmd->add_option("-n,--lines", *lines, "Only the last N lines");
  add_state_option(logs_cmd, *logs_flags);
  logs_cmd->callback([logs_flags, logs_id, lines, &context] {
    guarded(context, [&] { return logs_command(*logs_flags, *logs_id, *lines); });
  });

  auto stats_flags = std::make_shared<StateFlags>();
  auto stats_id = std::make_shared<int>(1);
  auto summary = std::make_shared<bool>(false);
  CLI::App* stats_cmd = app.add_subcommand("stats", "Print an emulator instance's statistics");
  stats_cmd->add_option("instance", *stats_id, "Instance number (1 = the manager)")
      ->capture_default_str();
  stats_cmd->add_flag("--summary", *summary, "One line: bytes, completions, errors, QPs");
  add_state_option(stats_cmd, *stats_flags);
  stats_cmd->callback([stats_flags, stats_id, summary, &context] {
    guarded(context, [&] { return stats_command(*stats_flags, *stats_id, *summary); });
  });

  auto ssh_flags = std::make_shared<StateFlags>();
  auto host_name = std::make_shared<std::string>();
  auto command = std::make_shared<std::vector<std::string>>();
  CLI::App* ssh_cmd = app.add_subcommand(
      "ssh",
      "Open a shell on a host `up` started (guests: ssh with the image's key and host "
      "keys; namespaces: a shell inside)");
  ssh_cmd->add_option("host", *host_name, "Host name from the scenario")->required();
  ssh_cmd->add_option("command", *command, "A command to run instead of a shell (after --)");
  add_state_option(ssh_cmd, *ssh_flags);
  ssh_cmd->callback([ssh_flags, host_name, command, &context] {
    guarded(context, [&] { return ssh_command(*ssh_flags, *host_name, *command); });
  });

  auto down_flags = std::make_shared<StateFlags>();
  auto list_only = std::make_shared<bool>(false);
  CLI::App* down_cmd = app.add_subcommand(
      "down",
      "Remove what `up` started, and whatever killed runs left (processes, namespaces, "
      "domains, networks, pools, socket directories); live runs are left alone");
  down_cmd->add_flag("--list", *list_only, "Only print what would be removed");
  add_state_option(down_cmd, *down_flags);
  down_cmd->callback([down_flags, list_only, &context] {
    guarded(context, [&] { return down_command(*down_flags, *list_only); });
  });
}

}  // namespace ernic
