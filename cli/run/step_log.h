#pragma once

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "hosts/host.h"

namespace ernic {

// The log of one step of a run: every command with its host, its output as it arrives (each
// line prefixed by the command's role and stream), its exit status and duration.
class StepLog {
 public:
  // An empty `path` keeps nothing (the dry run).
  StepLog(std::filesystem::path path, const std::string& title);
  ~StepLog();
  const std::filesystem::path& path() const { return path_; }

  // A sink for one command's output, e.g. role "server" or "client".
  OutputSink* sink(const std::string& role);
  void command(const std::string& role, const Host& host, const CommandSpec& spec);
  void result(const std::string& role, const CommandResult& result);
  void note(const std::string& text);

 private:
  class RoleSink;
  void write_lines(const std::string& role, OutputStream stream, std::string_view data,
                   std::string& pending);

  std::filesystem::path path_;
  std::mutex mutex_;
  std::ofstream out_;
  std::vector<std::unique_ptr<RoleSink>> sinks_;
};

}  // namespace ernic
