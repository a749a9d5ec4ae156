// ernicctl: one binary for running, bringing up and reporting ERNIC scenarios. Each component
// adds its own subcommands; this file only puts them together.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <iostream>

#include "base/command_context.h"
#include "base/version.h"
#include "builtin_platform.h"
#include "commands/commands.h"
#include "commands/doctor_command.h"
#include "commands/emulator_commands.h"
#include "commands/image_command.h"
#include "commands/overview.h"
#include "report_commands.h"
#include "scenario/platform.h"

int main(int argc, char** argv) {
  CLI::App app{"ernicctl: runs, brings up and reports ERNIC emulated RDMA NIC scenarios"};
  app.set_version_flag(
      "--version", fmt::format("ernicctl {} ({})", ernic::ernic_version(), ernic::ernic_git_sha()));
  app.require_subcommand(0, 1);  // none: the overview below, not CLI11's one-line error
  const ernic::Platform platform = ernic::builtin_platform();
  ernic::CommandContext context;
  context.platform = &platform;
  ernic::register_run_command(app, context);
  ernic::register_bringup_commands(app, context);
  ernic::register_validate_command(app, context);
  ernic::register_parse_command(app, context);
  ernic::register_schema_command(app, context);
  ernic::register_image_command(app, context);
  ernic::register_doctor_command(app, context);
  ernic::emulator::register_commands(app, context);
  ernic::reports::register_commands(app, context);
  ernic::register_completion_command(app, context);  // last: it reads every other command
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      std::cout << ernic::command_overview(app, ernic::quickstart_path(argv[0]));
      return ernic::kExitBadInput;
    }
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : ernic::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "ernicctl: " << e.what() << "\n";
    return ernic::kExitFailed;
  }
  return context.exit_code;
}
