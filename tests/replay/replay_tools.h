#pragma once

// Test helper: installs the replay program (replay.cc) under the real tools' names in a fresh
// temporary directory and writes the recordings it replays. Everything is removed when the
// object goes away.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "run/port_block.h"

namespace ernic::testing {

inline const std::vector<std::string>& replayed_tool_names() {
  static const std::vector<std::string> names = {"ib_send_bw",      "ib_write_bw",  "ib_read_bw",
                                                 "ib_send_lat",     "ib_write_lat", "ib_read_lat",
                                                 "ibv_rc_pingpong", "fio"};
  return names;
}

inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read " + path.string());
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A TCP port nobody listens on right now, from a block of ports no concurrent ernicctl run or
// test process holds, below the kernel's ephemeral range (so no outgoing connection takes it).
inline std::uint16_t unused_tcp_port() {
  static PortBlock block;
  return block.take();
}

class ReplayTools {
 public:
  ReplayTools() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ernic-replay-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    root_ = pattern;
    std::filesystem::create_directory(bin_dir());
    std::filesystem::create_directory(script_dir());
    for (const std::string& name : replayed_tool_names()) {
      std::filesystem::create_symlink(ERNIC_REPLAY_BINARY, bin_dir() / name);
    }
  }
  ~ReplayTools() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  ReplayTools(const ReplayTools&) = delete;
  ReplayTools& operator=(const ReplayTools&) = delete;

  std::filesystem::path bin_dir() const { return root_ / "bin"; }
  std::filesystem::path script_dir() const { return root_ / "script"; }
  // PATH with the replayed tools first.
  std::string path() const {
    const char* inherited = std::getenv("PATH");
    return bin_dir().string() + ":" + (inherited ? inherited : "/usr/bin:/bin");
  }
  std::vector<std::pair<std::string, std::string>> environment() const {
    return {{"PATH", path()}, {"ERNIC_REPLAY_DIR", script_dir().string()}};
  }

  // `name` is "<role>.<kind>" or "<tool>.<role>.<kind>", e.g. "ib_write_bw.client.stdout".
  void record(const std::string& name, const std::string& content) const {
    std::ofstream out(script_dir() / name, std::ios::binary | std::ios::trunc);
    out << content;
  }
  void record_sample(const std::string& name, const std::string& sample) const {
    record(name, read_text_file(std::filesystem::path(ERNIC_SAMPLES_DIR) / sample));
  }
  void clear_recordings() const {
    for (const auto& entry : std::filesystem::directory_iterator(script_dir())) {
      std::filesystem::remove(entry.path());
    }
  }

  // "<tool> <role> <args...>" per run, in order.
  std::vector<std::string> invocations() const {
    std::vector<std::string> lines;
    std::ifstream in(script_dir() / "invocations.log");
    for (std::string line; std::getline(in, line);) {
      lines.push_back(line);
    }
    return lines;
  }

 private:
  std::filesystem::path root_;
};

// Sets PATH and ERNIC_REPLAY_DIR in this process for its lifetime, for code under test that
// runs tools with the inherited environment (the local host provider).
class ScopedReplayEnvironment {
 public:
  explicit ScopedReplayEnvironment(const ReplayTools& tools) {
    const char* path = std::getenv("PATH");
    saved_path_ = path ? path : "";
    ::setenv("PATH", tools.path().c_str(), 1);
    ::setenv("ERNIC_REPLAY_DIR", tools.script_dir().c_str(), 1);
  }
  ~ScopedReplayEnvironment() {
    ::setenv("PATH", saved_path_.c_str(), 1);
    ::unsetenv("ERNIC_REPLAY_DIR");
  }
  ScopedReplayEnvironment(const ScopedReplayEnvironment&) = delete;
  ScopedReplayEnvironment& operator=(const ScopedReplayEnvironment&) = delete;

 private:
  std::string saved_path_;
};

}  // namespace ernic::testing
