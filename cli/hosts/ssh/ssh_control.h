#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "hosts/ssh/ssh_connection.h"

namespace ernic {

// A long-lived remote shell on one SSH host that answers the small questions a run asks many
// times (does a socket listen on this port, send this signal to that process group, is this
// program installed) over one channel. A question then costs one round trip on an open
// channel instead of opening a channel and starting a login shell, /bin/sh and a process.
// The shell starts on the first question and ends with the channel; when it has gone (killed
// on the host) the next question starts a new one. Questions from several threads are answered
// one at a time.
class SshControl {
 public:
  explicit SshControl(std::shared_ptr<SshConnection> connection);

  // Each throws SshError when the host does not answer within alive_timeout; an unanswered
  // question also declares the connection lost, since a shell that cannot read a file or run
  // `kill` in that time belongs to a host that is not answering.
  // /proc/net/tcp and /proc/net/tcp6 as the host sees them.
  std::string tcp_tables();
  // Whether `program` is found in the PATH of the host's /bin/sh.
  bool has_program(const std::string& program);
  // Sends SIGname to the process group `pid` (sshd makes every exec a session leader, so the
  // group is the command's), or to the process when it has no group of that id.
  void signal_group(long pid, const std::string& signal_name);

 private:
  struct Answer {
    std::string output;
    int status = -1;
  };
  // Writes one request line, returns the output before "ernic-done STATUS" and the status.
  Answer ask(const std::string& request, const std::string& what);
  Answer ask_locked(const std::string& request);
  void start_locked();

  std::shared_ptr<SshConnection> connection_;
  std::mutex mutex_;
  std::shared_ptr<SshExecChannel> channel_;  // guarded by mutex_
};

}  // namespace ernic
