#pragma once

#include "emulators/emulator_kind.h"

namespace ernic {

EmulatorKind& no_emulator();
EmulatorKind& embedded_emulator();
EmulatorKind& external_emulator();

}  // namespace ernic
