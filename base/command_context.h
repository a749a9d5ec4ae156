#pragma once

namespace ernic {

struct Platform;

// Exit statuses shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // ran, but a point, check or comparison failed
inline constexpr int kExitBadInput = 2;  // scenario, flags or files are wrong; nothing started
// A run's record could not be saved to its history: CI must not count it as a success, and the
// message names where the record still is (`ernicctl history append` adds it later).
inline constexpr int kExitRecordNotSaved = 3;
inline constexpr int kExitInterrupted = 130;

// CLI11 callbacks return void, so subcommands report their exit status through this.
struct CommandContext {
  int exit_code = kExitOk;
  // The components scenarios are made of, assembled by main (platform/platform.h).
  const Platform* platform = nullptr;
};

}  // namespace ernic
