#include "commands/bringup/bringup_state.h"

#include <fmt/format.h>

#include "run/record.h"

#include <cstdlib>
#include <iostream>
#include <stdexcept>

namespace ernic {
namespace fs = std::filesystem;

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// A link `link` -> `target`, replacing whatever a killed `up` may have left under that name.
void replace_link(const fs::path& target, const fs::path& link) {
  std::error_code ignored;
  fs::remove(link, ignored);
  fs::create_symlink(target, link);
}

}  // namespace

std::string StateFlags::default_state_dir() {
  std::string run_dir = environment("ERNIC_RUN_DIR");
  return run_dir.empty() ? "/run/ernicctl" : run_dir;
}

fs::path state_file(const StateFlags& flags) {
  return fs::path(flags.state_dir) / "up.json";
}

fs::path manifest_file(const StateFlags& flags) {
  return fs::path(flags.state_dir) / "instances.json";
}

fs::path instance_log_dir(const StateFlags& flags, const std::string& log_dir) {
  if (!log_dir.empty()) {
    return log_dir;
  }
  std::string from_environment = environment("ERNIC_LOG_DIR");
  return from_environment.empty() ? fs::path(flags.state_dir) / "logs" : fs::path(from_environment);
}

std::optional<UpState> read_state(const StateFlags& flags) {
  try {
    return read_up_state(state_file(flags));
  } catch (const JsonFieldError& e) {
    throw std::runtime_error(fmt::format("{}: remove it or run ernicctl down", e.what()));
  }
}

std::optional<UpState> read_state_or_say(const StateFlags& flags) {
  auto state = read_state(flags);
  if (!state) {
    std::cerr << fmt::format("nothing is up ({} does not exist)\n", state_file(flags).string());
  }
  return state;
}

void note_attached_run(const StateFlags& flags, const RunResult& result) {
  auto state = read_state(flags);
  if (!state) {
    return;
  }
  state->attached_runs = state->attached_runs.value_or(0) + 1;
  state->last_attached_run = AttachedRunNote{.run_dir = fs::absolute(result.run_dir).string(),
                                             .started = iso8601(result.started),
                                             .status = to_string(result.status)};
  write_up_state(state_file(flags), *state);
}

InstanceLinks link_instance_files(const std::vector<ManifestInstance>& instances,
                                  const fs::path& state_dir, const fs::path& log_dir) {
  InstanceLinks result;
  for (const auto& instance : instances) {
    if (instance.remote) {
      continue;  // its files are on its machine
    }
    std::string id = std::to_string(instance.id);
    for (const auto& [target, link] : {std::pair{instance.stats, state_dir / (id + ".stats")},
                                       std::pair{instance.log, log_dir / (id + ".log")}}) {
      if (target.empty()) {
        continue;
      }
      try {
        fs::create_directories(link.parent_path());
        replace_link(fs::absolute(target), link);
        result.links.push_back(fs::absolute(link).string());
      } catch (const std::exception& e) {
        result.problems.push_back(fmt::format("cannot link {}: {}", link.string(), e.what()));
      }
    }
  }
  return result;
}

void remove_instance_files(const UpState& state) {
  std::error_code ignored;
  for (const auto& link : state.instance_files.value_or(std::vector<std::string>{})) {
    fs::remove(link, ignored);
  }
  if (state.log_dir_created.value_or(false) && state.log_dir) {
    fs::remove(*state.log_dir, ignored);  // only when now empty
  }
}

void add_state_option(CLI::App* command, StateFlags& flags) {
  command
      ->add_option("--state-dir", flags.state_dir,
                   "Where up.json and instances.json live (default $ERNIC_RUN_DIR, else "
                   "/run/ernicctl)")
      ->capture_default_str();
}

void run_guarded(CommandContext& context, const std::function<int()>& body) {
  try {
    context.exit_code = body();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    context.exit_code = kExitFailed;
  }
}

}  // namespace ernic
