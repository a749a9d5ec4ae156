#pragma once

#include <string>

#include "hosts/host.h"

namespace ernic {

// This machine, or a network namespace on it: commands are child processes of ernicctl.
class LocalHost : public Host {
 public:
  // `netns` is a namespace name under /run/netns, or "" for this machine's own stack.
  LocalHost(std::string name, std::string address, std::string netns = "");
  ~LocalHost() override;

  const std::string& name() const override { return name_; }
  std::string address() const override { return address_; }
  std::string describe() const override;
  const std::string& netns() const { return netns_; }
  std::map<std::string, std::string> platform_facts() const override {
    if (netns_.empty()) {
      return {};
    }
    return {{"netns", netns_}};
  }

  std::unique_ptr<RunningCommand> start(const CommandSpec& spec, OutputSink* sink) override;
  void upload(std::string_view content, const std::string& path, int mode) override;
  bool is_listening(std::uint16_t port) override;
  bool listens_in_this_machines_stack() const override { return netns_.empty(); }
  std::string check_alive() override;
  bool has_program(const std::string& program) override;

 private:
  std::string name_;
  std::string address_;
  std::string netns_;
  // /proc/net/tcp{,6} opened from inside the namespace: reading them again needs no process.
  int tcp_fd_ = -1;
  int tcp6_fd_ = -1;
};

// Whether `program` is an executable in this machine's PATH (or a path to one).
bool program_in_path(const std::string& program);

// Whether /proc/net/tcp-format text has a socket listening on `port`.
bool proc_net_tcp_listens(std::string_view table, std::uint16_t port);

}  // namespace ernic
