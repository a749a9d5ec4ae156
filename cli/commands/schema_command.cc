#include <iostream>

#include "base/command_context.h"
#include "commands/commands.h"
#include "scenario/scenario_json_schema.h"

namespace ernic {

void register_schema_command(CLI::App& app, CommandContext& context) {
  CLI::App* cmd =
      app.add_subcommand("schema", "Print the scenario JSON Schema (scenarios/schema.json)");
  cmd->callback(
      [&context] { std::cout << scenario_json_schema(*context.platform).dump(2) << "\n"; });
}

}  // namespace ernic
