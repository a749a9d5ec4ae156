#include "commands/doctor_command.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands/doctor_checks.h"

namespace ernic {
namespace {

struct DoctorFlags {
  bool json = false;
  bool no_start = false;
  bool fix = false;
};

int run_doctor(const DoctorFlags& flags, const Platform& platform) {
  DoctorOptions options;
  options.platform = &platform;
  options.start_daemons = !flags.no_start;
  options.apply_fixes = flags.fix;
  auto checks = run_doctor_checks(options);
  bool missing = false;
  for (const auto& check : checks) {
    missing = missing || check.level == DoctorCheck::Level::kMissing;
  }
  if (flags.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& check : checks) {
      out.push_back({{"check", check.name},
                     {"level", doctor_level_name(check.level)},
                     {"detail", check.detail},
                     {"fix", check.fix}});
    }
    std::cout << nlohmann::json{{"checks", out}, {"ready", !missing}}.dump(2) << "\n";
  } else {
    for (const auto& check : checks) {
      std::cout << fmt::format("{:<8} {:<15} {}\n", doctor_level_name(check.level), check.name,
                               check.detail);
      if (!check.fix.empty()) {
        std::cout << fmt::format("{:<8} {:<15} fix: {}\n", "", "", check.fix);
      }
    }
    std::cout << (missing ? "Some of what scenarios need is missing (see fix: lines).\n"
                          : "This machine has what scenarios need.\n");
  }
  return missing ? kExitFailed : kExitOk;
}

}  // namespace

void register_doctor_command(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<DoctorFlags>();
  auto* doctor = app.add_subcommand(
      "doctor", "Check this machine for what scenarios need, and say how to fix each gap");
  doctor->add_flag("--json", flags->json, "Print the checks as JSON");
  doctor->add_flag("--no-start", flags->no_start,
                   "Do not start virtlogd/libvirtd when they are not running");
  doctor->add_flag("--fix", flags->fix,
                   "Apply the safe fixes (socket buffer sysctls, libvirt's dnsmasq folder)");
  doctor->callback(
      [flags, &context] { context.exit_code = run_doctor(*flags, *context.platform); });
}

}  // namespace ernic
