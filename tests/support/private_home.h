#pragma once

#include <pwd.h>

#include <filesystem>
#include <string>
#include <vector>

// Test sshd servers log users in as root on this very machine, so every session would run root's
// real ~/.bashrc (bash sources it for commands sshd starts). On developer and CI machines that
// file runs whatever is installed there (pyenv's rehash takes a lock and waits 60 s for it when a
// killed session left it behind), which makes remote commands slow, noisy and flaky. Tests want
// a clean account, as on a fresh guest: this wraps `argv` so it runs in a private mount
// namespace where root's home directory is `empty_home` instead.
namespace ernic::testing {

inline std::vector<std::string> with_private_home(const std::filesystem::path& empty_home,
                                                  std::vector<std::string> argv) {
  const passwd* root = getpwuid(0);
  std::string home = root != nullptr && root->pw_dir != nullptr ? root->pw_dir : "/root";
  std::filesystem::create_directories(empty_home);
  std::filesystem::permissions(empty_home, std::filesystem::perms::owner_all);
  std::vector<std::string> wrapped{"unshare",
                                   "--mount",
                                   "--propagation",
                                   "private",
                                   "sh",
                                   "-c",
                                   "mount --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"",
                                   "sh",
                                   empty_home.string(),
                                   home};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

}  // namespace ernic::testing
