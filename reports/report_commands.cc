#include "report_commands.h"

namespace ernic::reports {

void register_commands(CLI::App& /*app*/, CommandContext& /*context*/) {}

}  // namespace ernic::reports
