#include "emulator_commands.h"

namespace ernic::emulator {

void register_commands(CLI::App& /*app*/, CommandContext& /*context*/) {}

}  // namespace ernic::emulator
