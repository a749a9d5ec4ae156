#pragma once

namespace ernic {

struct Platform;

// Exit statuses shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // ran, but a point, check or comparison failed
inline constexpr int kExitBadInput = 2;  // scenario, flags or files are wrong; nothing started
inline constexpr int kExitInterrupted = 130;

// CLI11 callbacks return void, so subcommands report their exit status through this.
struct CommandContext {
  int exit_code = kExitOk;
  // The components scenarios are made of, assembled by main (platform/platform.h).
  const Platform* platform = nullptr;
};

}  // namespace ernic
