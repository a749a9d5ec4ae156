// `ernicctl down`: removes what `up` started, and whatever killed runs left. Everything a run
// creates carries its token, so run/leftovers.cc finds it without a state; the state adds the
// instances `up` recorded (their sockets may be anywhere) and the files it linked.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "commands/bringup/bringup_state.h"
#include "run/leftovers.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// This machine's libvirt daemon, and every one the state's guests live under (their `uri`
// facts): a remote host keeps what a killed run made there until `down` asks it.
std::vector<std::string> libvirt_uris_of(const std::optional<json>& state) {
  std::vector<std::string> uris{"qemu:///system"};
  if (state) {
    for (const auto& host : state->value("hosts", json::array())) {
      if (host.contains("facts") && host["facts"].contains("uri")) {
        uris.push_back(host["facts"]["uri"]);
      }
    }
  }
  return uris;
}

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

int down(const StateFlags& flags, bool list_only) {
  auto state = read_state(flags);
  // Everything of the run `up` started, and of every run whose ernicctl is gone.
  LeftoverScan scan = find_leftovers({}, libvirt_uris_of(state));
  if (state) {
    add_recorded_instances(*state, scan);
  }
  for (const auto& note : scan.notes) {
    std::cerr << "note: " << note << "\n";
  }
  for (const auto& error : scan.errors) {
    std::cerr << "error: " << error << "\n";
  }
  for (const auto& token : scan.live_tokens) {
    std::cerr << fmt::format("left alone: run {} is still going\n", token);
  }
  if (list_only) {
    for (const auto& item : scan.found) {
      fmt::print("{}  {}\n", item.token, item.describe());
    }
    return scan.errors.empty() ? kExitOk : kExitFailed;
  }
  int failures = 0;
  std::set<std::string> failed;
  remove_leftovers(scan.found, "qemu:///system", [&](const Leftover& item, const std::string& why) {
    ++failures;
    failed.insert(item.describe());
    std::cerr << fmt::format("could not remove {}: {}\n", item.describe(), why);
  });
  for (const auto& item : scan.found) {
    if (!failed.contains(item.describe())) {
      fmt::print("removed {} (run {})\n", item.describe(), item.token);
    }
  }
  if (state && !scan.errors.empty()) {
    // It names the hosts not reached: the next `down` tries them again.
    std::cerr << fmt::format("state kept in {}: run `ernicctl down` again once they answer\n",
                             state_file(flags).string());
  } else if (state) {
    remove_instance_files(*state);
    std::error_code ignored;
    fs::remove(manifest_file(flags), ignored);
    fs::remove(state_file(flags), ignored);
  }
  fmt::print("down: {} removed{}\n", scan.found.size() - static_cast<std::size_t>(failures),
             failures > 0 ? fmt::format(", {} could not be", failures) : "");
  return failures > 0 || !scan.errors.empty() ? kExitFailed : kExitOk;
}

}  // namespace

void register_down_command(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<StateFlags>();
  auto list_only = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand(
      "down",
      "Remove what `up` started, and whatever killed runs left (processes, namespaces, "
      "domains, networks, pools, socket directories); live runs are left alone");
  command->add_flag("--list", *list_only, "Only print what would be removed");
  add_state_option(command, *flags);
  command->callback([flags, list_only, &context] {
    run_guarded(context, [&] { return down(*flags, *list_only); });
  });
}

}  // namespace ernic
