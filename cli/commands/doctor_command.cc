#include "commands/doctor_command.h"
namespace ernic {
void register_doctor_command(CLI::App&, CommandContext&) {}
}  // namespace ernic
