#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include "hosts/host.h"

namespace ernic {

// A connection, authentication or protocol failure. The message names the host and the cause
// ("ssh to g1 (root@10.0.0.5:22): connection refused").
class SshError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class HostKeyPolicy {
  kStrict,     // the key must already be in known_hosts
  kAcceptNew,  // unknown keys are added; a changed key is still refused
  kIgnore,     // no verification at all (a warning is printed)
};

std::string_view host_key_policy_name(HostKeyPolicy policy);
std::optional<HostKeyPolicy> parse_host_key_policy(std::string_view text);

// Where to log in: one hop.
struct SshEndpoint {
  std::string host;
  std::uint16_t port = 22;
  std::string user;           // empty: the local user name
  std::filesystem::path key;  // empty: the SSH agent, then ~/.ssh/id_*

  // "root@10.0.0.5:22"
  std::string display() const;
};

struct SshConnectOptions {
  std::string label;  // the scenario's host name, for errors
  SshEndpoint target;
  // Reached through this jump host (a direct-tcpip channel of a session to it; see SshTunnel).
  std::optional<SshEndpoint> jump;
  std::filesystem::path known_hosts;  // empty: ~/.ssh/known_hosts
  // The jump host's key is verified against this one; empty: known_hosts.
  std::filesystem::path jump_known_hosts;
  HostKeyPolicy host_key_policy = HostKeyPolicy::kStrict;
  std::chrono::milliseconds connect_timeout{10000};
  // Interval of SSH-level keepalives and of the TCP keepalive probes; zero disables both.
  std::chrono::milliseconds keepalive{5000};
  // Bound of check_alive() and of every protocol exchange on the open session (opening a
  // channel, writing to one): a host that does not answer within it is declared gone.
  std::chrono::milliseconds alive_timeout{5000};
  // Receives warnings (host_key_policy ignore); stderr when empty.
  std::function<void(const std::string&)> warn;
};

class SshConnection;
class SshTunnel;

// One exec channel: a remote command's output, exit status and end. Output callbacks run on
// whichever thread is processing the connection's packets, with the connection locked.
class SshExecChannel {
 public:
  SshExecChannel(const SshExecChannel&) = delete;
  SshExecChannel& operator=(const SshExecChannel&) = delete;
  ~SshExecChannel();

  // Waits until the remote side closed the channel (the command ended and its output is in)
  // or the deadline passes. Returns whether it closed.
  bool wait_closed(Clock::time_point deadline);
  // Waits until a complete line of stdout or stderr matches, the channel closes or the deadline
  // passes.
  bool wait_for_line(const std::regex& pattern, Clock::time_point deadline);
  bool closed();
  // The remote process id, announced by the command wrapper; 0 until known.
  long remote_pid();
  // Waits until the wrapper announced the process id, the channel closes or the deadline passes;
  // returns the id or 0.
  long wait_remote_pid(Clock::time_point deadline);
  // Takes the next complete line of stdout (without its newline) off the output, waiting for it
  // until the deadline or until the channel closes. For request/answer channels (SshControl),
  // whose stdout is consumed as it is read.
  std::optional<std::string> next_line(Clock::time_point deadline);

  // Sends `data` to the command's stdin, then EOF when `last`.
  void write(std::string_view data, bool last);

  struct Outcome {
    std::optional<int> exit_status;
    int exit_signal = 0;  // 0 when none
    std::string signal_name;
    std::string out;
    std::string err;
    std::string lost;  // why the channel ended without the command ending, if it did
  };
  Outcome outcome();

 private:
  friend class SshConnection;
  friend struct SshChannelCallbacks;
  SshExecChannel(std::shared_ptr<SshConnection> connection, OutputSink* sink, bool announces_pid);
  void attach_callbacks(ssh_channel raw);

  void on_data(std::string_view data, bool is_stderr);
  void on_exit_status(int status);
  void on_exit_signal(const char* name);
  void on_close();
  void on_lost(const std::string& reason);

  std::shared_ptr<SshConnection> connection_;
  OutputSink* sink_;
  bool announces_pid_;
  ssh_channel channel_ = nullptr;  // guarded by the connection's mutex
  ssh_channel_callbacks_struct callbacks_{};

  std::mutex mutex_;
  std::condition_variable changed_;
  bool closed_ = false;
  Outcome outcome_;
  std::string pid_line_;  // the wrapper's first stderr line, until complete
  bool pid_line_done_ = false;
  long pid_ = 0;
};

// A connected, authenticated libssh session with one I/O thread that processes incoming
// packets for every channel. libssh sessions are not thread safe, so every call into the
// session happens with mutex_ held; commands in parallel are channels of this one session.
class SshConnection : public std::enable_shared_from_this<SshConnection> {
 public:
  // Connects, verifies the host key and authenticates; throws SshError.
  static std::shared_ptr<SshConnection> open(const SshConnectOptions& options);
  ~SshConnection();
  SshConnection(const SshConnection&) = delete;
  SshConnection& operator=(const SshConnection&) = delete;

  // Runs `command` (a shell command line for the remote login shell) on a new channel.
  // `announces_pid`: the command's first stderr line is "ernic-pid:N" (see wrap_command) and is
  // not passed on. Throws SshError when the channel cannot be opened.
  std::shared_ptr<SshExecChannel> exec(const std::string& command, OutputSink* sink,
                                       bool announces_pid, std::chrono::milliseconds timeout = {});

  // One round trip to the server within `limit`; when it goes unanswered the connection is
  // declared lost. Throws SshError with the reason.
  void ping(std::chrono::milliseconds limit);

  // Empty while usable; otherwise why the connection is gone.
  std::string lost_reason();
  // Marks the connection gone (e.g. a probe went unanswered) and ends every channel.
  void declare_lost(const std::string& reason);
  const SshConnectOptions& options() const { return options_; }
  // "ssh to g1 (root@10.0.0.5:22)", "ssh to g1 (root@10.0.0.5:22 via jump host root@gw:22)"
  std::string who() const;

 private:
  friend class SshExecChannel;
  explicit SshConnection(SshConnectOptions options);
  void connect();
  void io_loop();
  void wake();
  void lose_locked(const std::string& reason);
  // The error for a failed channel request started at `started`; an unanswered one (it used up
  // `limit`) or a closed session loses the connection.
  SshError failure_locked(const char* what, Clock::time_point started,
                          std::chrono::milliseconds limit);
  void release(SshExecChannel& channel);
  void write(SshExecChannel& channel, std::string_view data, bool last);

  SshConnectOptions options_;
  std::mutex mutex_;
  ssh_session session_ = nullptr;
  ssh_event event_ = nullptr;
  std::unique_ptr<SshTunnel> tunnel_;  // the first hop, with a jump host
  std::vector<SshExecChannel*> channels_;
  std::string lost_;
  bool stopping_ = false;
  int wake_pipe_[2] = {-1, -1};
  std::thread io_thread_;
};

// The command line that runs argv under the wrapper SshConnection::exec(announces_pid=true)
// expects: it prints the process id (also the process group, since sshd makes every exec its
// own session) and then execs argv with env added.
std::string wrap_command(const CommandSpec& spec);

}  // namespace ernic
