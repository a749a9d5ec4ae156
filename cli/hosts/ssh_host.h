#pragma once

#include <memory>
#include <string>

#include "hosts/host.h"
#include "hosts/ssh_connection.h"

namespace ernic {

// A host reached over SSH: one libssh session, a channel per command. Commands from several
// threads run in parallel on the one session (see SshConnection). Every command runs under a
// small remote wrapper that announces its process id, so a timeout or stop() kills the remote
// process group through a second channel instead of merely closing the channel.
class SshHost : public Host {
 public:
  // Connects right away; throws SshError naming the host and the cause.
  SshHost(std::string name, std::string address, SshConnectOptions options);
  ~SshHost() override;

  const std::string& name() const override { return name_; }
  std::string address() const override { return address_; }
  std::string describe() const override;

  std::unique_ptr<RunningCommand> start(const CommandSpec& spec, OutputSink* sink) override;
  void upload(std::string_view content, const std::string& path, int mode) override;
  // is_listening() and has_program() throw SshError when the host does not answer, rather
  // than give an answer they do not have.
  bool is_listening(std::uint16_t port) override;
  // Opens a channel and runs `true`, bounded by alive_timeout; a host that does not answer in
  // time is declared gone and every running command on it ends.
  std::string check_alive() override;
  bool has_program(const std::string& program) override;

  // A second, independent login to the same host: what a new user session sees (limits.d,
  // PAM). The memlock step verifies through it.
  std::unique_ptr<SshHost> open_new_session() const;
  const SshConnectOptions& options() const { return options_; }

 private:
  void throw_if_unanswered(const CommandResult& result, const std::string& what);

  std::string name_;
  std::string address_;
  SshConnectOptions options_;
  std::shared_ptr<SshConnection> connection_;
};

}  // namespace ernic
