#include <CLI/CLI.hpp>

#include "common/command_context.h"
#include "emulator_commands.h"
#include "report_commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ernicctl: runs and reports ERNIC emulated RDMA NIC scenarios"};
  ernic::CommandContext context;
  ernic::emulator::register_commands(app, context);
  ernic::reports::register_commands(app, context);
  CLI11_PARSE(app, argc, argv);
  return context.exit_code;
}
