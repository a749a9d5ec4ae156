// `ernicctl up / status / logs / stats / ssh / down`: a developer's environment left running.
// One file per subcommand; what they share (the state directory) is in bringup_state.h.
#include "commands/bringup/bringup_state.h"
#include "commands/commands.h"

namespace ernic {

void register_bringup_commands(CLI::App& app, CommandContext& context) {
  register_up_command(app, context);
  register_status_command(app, context);
  register_logs_and_stats_commands(app, context);
  register_ssh_command(app, context);
  register_down_command(app, context);
}

}  // namespace ernic
