#pragma once

namespace ernic {

// Exit statuses shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // ran, but a point, check or comparison failed
inline constexpr int kExitBadInput = 2;  // scenario, flags or files are wrong; nothing started
inline constexpr int kExitInterrupted = 130;

// CLI11 callbacks return void, so subcommands report their exit status through this.
struct CommandContext {
  int exit_code = kExitOk;
};

}  // namespace ernic
