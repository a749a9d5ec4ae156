#pragma once

#include <memory>
#include <string>

#include "hosts/host.h"
#include "hosts/ssh/ssh_connection.h"
#include "hosts/ssh/ssh_control.h"

namespace ernic {

// A host reached over SSH: one libssh session, a channel per command. Commands from several
// threads run in parallel on the one session (see SshConnection). Every command runs under a
// small remote wrapper that announces its process id, so a timeout or stop() kills the remote
// process group instead of merely closing the channel. Readiness polls, program lookups and
// those signals go through one long-lived control shell (SshControl): a round trip each, no
// channel or process per call.
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
  // is_listening() and has_program() ask the control shell and throw SshError when the host
  // does not answer within alive_timeout, rather than give an answer they do not have.
  bool is_listening(std::uint16_t port) override;
  // One round trip on the session (opening a channel, which starts no process), bounded by
  // alive_timeout; a host that does not answer in time is declared gone and every running
  // command on it ends.
  std::string check_alive() override;
  bool has_program(const std::string& program) override;

  // A second, independent login to the same host: what a new user session sees (limits.d,
  // PAM). The memlock step verifies through it.
  std::unique_ptr<SshHost> open_new_session() const;
  const SshConnectOptions& options() const { return options_; }

 private:
  std::string name_;
  std::string address_;
  SshConnectOptions options_;
  std::shared_ptr<SshConnection> connection_;
  std::shared_ptr<SshControl> control_;
};

}  // namespace ernic
