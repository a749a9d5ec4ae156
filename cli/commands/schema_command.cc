#include <iostream>

#include "commands/commands.h"
#include "scenario/scenario_loader.h"

namespace ernic {

void register_schema_command(CLI::App& app, CommandContext& /*context*/) {
  CLI::App* cmd =
      app.add_subcommand("schema", "Print the scenario JSON Schema (scenarios/schema.json)");
  cmd->callback([] { std::cout << scenario_json_schema().dump(2) << "\n"; });
}

}  // namespace ernic
