#include "commands/doctor_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "commands/doctor_checks.h"
#include "commands/doctor_probe.h"
#include "commands/doctor_targets.h"
#include "hosts/ssh/ssh_host.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

struct DoctorFlags {
  bool json = false;
  bool no_start = false;
  bool fix = false;
  std::vector<std::string> hosts;
  std::string scenario;
  DoctorSshFlags ssh;
};

// One machine's checks, as printed.
struct MachineReport {
  std::string host;     // the name given, "" for this machine
  std::string address;  // "root@10.0.0.5:22"
  std::vector<DoctorCheck> checks;

  bool ready() const {
    return std::none_of(checks.begin(), checks.end(), [](const DoctorCheck& check) {
      return check.level == DoctorCheck::Level::kMissing;
    });
  }
};

MachineReport check_remote(const DoctorTarget& target, const DoctorOptions& options) {
  MachineReport report{target.name, target.options.target.display(), {}};
  try {
    SshHost host(target.name, target.options.target.host, target.options);
    HostDoctorProbe probe(host);
    report.checks = run_doctor_checks(probe, options);
  } catch (const std::exception& error) {
    // Unreachable, refused, unknown host key, failed authentication: the machine's one check.
    report.checks = {{"ssh", DoctorCheck::Level::kMissing, error.what(),
                      "make `ssh` reach it with the same settings (--ssh-user, --ssh-key, "
                      "--known-hosts, --host-key-policy; see docs/hosts-ssh.md)"}};
  }
  return report;
}

// Every remote machine at once: each costs a key exchange and a few dozen round trips.
std::vector<MachineReport> check_remotes(const std::vector<DoctorTarget>& targets,
                                         const DoctorOptions& options) {
  std::vector<MachineReport> reports(targets.size());
  std::vector<std::jthread> workers;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    workers.emplace_back([&, i] { reports[i] = check_remote(targets[i], options); });
  }
  workers.clear();
  return reports;
}

nlohmann::json checks_json(const std::vector<DoctorCheck>& checks) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& check : checks) {
    out.push_back({{"check", check.name},
                   {"level", doctor_level_name(check.level)},
                   {"detail", check.detail},
                   {"fix", check.fix}});
  }
  return out;
}

void print_checks(const std::vector<DoctorCheck>& checks) {
  for (const auto& check : checks) {
    std::cout << fmt::format("{:<8} {:<15} {}\n", doctor_level_name(check.level), check.name,
                             check.detail);
    if (!check.fix.empty()) {
      std::cout << fmt::format("{:<8} {:<15} fix: {}\n", "", "", check.fix);
    }
  }
}

// No HOST: this machine, printed (and given as JSON) as it always was.
int report_this_machine(const MachineReport& report, bool as_json) {
  if (as_json) {
    std::cout
        << nlohmann::json{{"checks", checks_json(report.checks)}, {"ready", report.ready()}}.dump(2)
        << "\n";
  } else {
    print_checks(report.checks);
    std::cout << (report.ready() ? "This machine has what scenarios need.\n"
                                 : "Some of what scenarios need is missing (see fix: lines).\n");
  }
  return report.ready() ? kExitOk : kExitFailed;
}

int report_machines(const std::vector<MachineReport>& reports, bool as_json) {
  bool ready = std::all_of(reports.begin(), reports.end(),
                           [](const MachineReport& report) { return report.ready(); });
  if (as_json) {
    nlohmann::json machines = nlohmann::json::array();
    for (const auto& report : reports) {
      machines.push_back({{"host", report.host},
                          {"address", report.address},
                          {"checks", checks_json(report.checks)},
                          {"ready", report.ready()}});
    }
    std::cout << nlohmann::json{{"machines", machines}, {"ready", ready}}.dump(2) << "\n";
    return ready ? kExitOk : kExitFailed;
  }
  for (const auto& report : reports) {
    std::cout << fmt::format("== {} ({})\n", report.host, report.address);
    print_checks(report.checks);
    std::cout << (report.ready()
                      ? fmt::format("{} has what scenarios need.\n\n", report.host)
                      : fmt::format("{} lacks some of what scenarios need (see fix: lines).\n\n",
                                    report.host));
  }
  std::cout << (ready ? "Every machine has what scenarios need.\n"
                      : "Some machines lack what scenarios need.\n");
  return ready ? kExitOk : kExitFailed;
}

// The machines the HOST arguments and --scenario name; nullopt (after saying why) when one
// cannot be read.
std::optional<std::vector<DoctorTarget>> read_targets(const DoctorFlags& flags,
                                                      const Platform& platform) {
  std::vector<DoctorTarget> targets;
  try {
    for (const std::string& host : flags.hosts) {
      targets.push_back(doctor_target(host, flags.ssh));
    }
    if (!flags.scenario.empty()) {
      auto loaded = load_scenario(platform, flags.scenario, {});
      if (!loaded.scenario) {
        print_load_diagnostics(loaded, flags.scenario, std::cerr);
        return std::nullopt;
      }
      auto from_scenario = doctor_targets_of(*loaded.scenario, flags.ssh);
      targets.insert(targets.end(), from_scenario.begin(), from_scenario.end());
      if (from_scenario.empty()) {
        std::cerr << fmt::format(
            "{}: no ssh hosts and no libvirt hosts with a remote URI: its hosts are on this "
            "machine\n",
            flags.scenario);
      }
    }
  } catch (const std::exception& error) {
    std::cerr << "ernicctl doctor: " << error.what() << "\n";
    return std::nullopt;
  }
  return targets;
}

int run_doctor(const DoctorFlags& flags, const Platform& platform) {
  DoctorOptions options;
  options.platform = &platform;
  options.start_daemons = !flags.no_start;
  options.apply_fixes = flags.fix;
  auto targets = read_targets(flags, platform);
  if (!targets) {
    return kExitBadInput;
  }
  if (targets->empty()) {  // a scenario whose every host is here
    LocalDoctorProbe probe;
    return report_this_machine({"", "", run_doctor_checks(probe, options)}, flags.json);
  }
  if (flags.fix) {
    std::cerr << "ernicctl doctor: --fix applies fixes only on this machine (run ernicctl "
                 "doctor --fix there); the remote machines get their fix: lines\n";
  }
  return report_machines(check_remotes(*targets, options), flags.json);
}

}  // namespace

void register_doctor_command(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<DoctorFlags>();
  auto* doctor = app.add_subcommand(
      "doctor",
      "Check this machine (or remote ones over SSH) for what scenarios need, and say how to fix "
      "each gap");
  doctor->add_option("hosts", flags->hosts,
                     "Remote machines to check instead, each [user@]host[:port], reached over "
                     "SSH like the ssh hosts of a scenario");
  doctor->add_option("--scenario", flags->scenario,
                     "Check the machines a scenario reaches: its ssh hosts (with their own ssh "
                     "settings) and the machines of its libvirt hosts' remote URIs");
  doctor->add_option("--ssh-user", flags->ssh.user, "User to log in as (ssh.user)");
  doctor->add_option("--ssh-key", flags->ssh.key, "Private key file (ssh.key)");
  doctor->add_option("--known-hosts", flags->ssh.known_hosts,
                     "known_hosts file the host keys are verified against (ssh.known_hosts)");
  doctor->add_option("--host-key-policy", flags->ssh.host_key_policy,
                     "strict, accept-new or ignore (ssh.host_key_policy; default strict)");
  doctor->add_option("--connect-timeout", flags->ssh.connect_timeout,
                     "Limit for connecting and logging in, e.g. 5s (ssh.connect_timeout)");
  doctor->add_flag("--json", flags->json, "Print the checks as JSON");
  doctor->add_flag("--no-start", flags->no_start,
                   "Do not start virtlogd/libvirtd when they are not running (this machine)");
  doctor->add_flag("--fix", flags->fix,
                   "Apply the safe fixes (socket buffer sysctls, libvirt's dnsmasq folder; this "
                   "machine only)");
  doctor->callback(
      [flags, &context] { context.exit_code = run_doctor(*flags, *context.platform); });
}

}  // namespace ernic
