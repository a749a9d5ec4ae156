#include "emulators/instance_machines.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <thread>

#include "common/edit_distance.h"

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

namespace {

// Teardown of one machine's directory: the kept files into the run directory, then the
// directory (token, sockets, a copied program) removed.
void collect_and_remove(Host& host, const std::string& on, const std::string& dir,
                        const fs::path& kept, const std::vector<std::string>& files) {
  std::string missed;
  for (const auto& file : files) {
    CommandResult read = run_to_end(host, {"cat", file});
    if (read.ok()) {
      std::ofstream(kept / fs::path(file).filename()) << read.out;
    } else {
      missed += fmt::format("{}{} ({})", missed.empty() ? "" : ", ", file, read.describe());
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

}  // namespace

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
