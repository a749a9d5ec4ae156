#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hosts/ssh/ssh_connection.h"
#include "hosts/ssh/ssh_host.h"

// Real sshd servers and network namespaces for tests (and for the end-to-end `ernicctl run`
// over SSH). Everything created here is removed by the destructors, also when a test fails.
// Needs root.
namespace ernic::testing {

// Runs argv (no shell), returns its exit status; `output` gets stdout and stderr.
int run_program(const std::vector<std::string>& argv, std::string* output = nullptr);
// Like run_program, but throws std::runtime_error with the output when the exit status is not 0.
std::string run_checked(const std::vector<std::string>& argv);

// Starts argv in the background with stdout and stderr going to `output_file`.
pid_t start_program(const std::vector<std::string>& argv, const std::filesystem::path& output_file);
// Waits for a started program until `timeout`; returns its exit status, or -1 when it still runs.
int wait_program(pid_t pid, std::chrono::milliseconds timeout);

// A started ernicctl that a failed REQUIRE must not leave running: if it has not been waited
// for when the test ends, it is interrupted as by Ctrl-C (so it tears down what it made before
// the fixtures remove the machines under it), and killed after 30 s.
class InterruptAtExit {
 public:
  explicit InterruptAtExit(pid_t pid) : pid_(pid) {}
  ~InterruptAtExit();
  InterruptAtExit(const InterruptAtExit&) = delete;
  InterruptAtExit& operator=(const InterruptAtExit&) = delete;

 private:
  pid_t pid_;
};

// A network namespace joined to the caller's namespace by a veth pair:
// outside_address()/24 on this side, inside_address()/24 in the namespace, lo up.
class TestNamespace {
 public:
  // `tag`: a few letters that make the name readable ("ernic-t<pid>-<tag>").
  explicit TestNamespace(const std::string& tag);
  ~TestNamespace();
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;

  const std::string& name() const { return name_; }
  const std::string& inside_address() const { return inside_; }
  const std::string& outside_address() const { return outside_; }
  // An address in the namespace's subnet that nobody has.
  std::string unused_address() const;
  const std::string& outside_interface() const { return veth_outside_; }
  const std::string& inside_interface() const { return veth_inside_; }
  // Runs argv inside the namespace (ip netns exec); returns the exit status.
  int exec(const std::vector<std::string>& argv, std::string* output = nullptr) const;

 private:
  std::string name_;
  std::string veth_outside_;
  std::string veth_inside_;
  std::string subnet_;  // "10.A.B."
  std::string outside_;
  std::string inside_;
};

// A veth pair between two namespaces, on a /24 of its own: `a` gets a_address(), `b`
// b_address(). Neither end is reachable from the caller's namespace, so it stands for a network
// between two remote machines (the emulator's mesh, a jump host's side network).
class NamespaceLink {
 public:
  NamespaceLink(const TestNamespace& a, const TestNamespace& b);
  ~NamespaceLink();
  NamespaceLink(const NamespaceLink&) = delete;
  NamespaceLink& operator=(const NamespaceLink&) = delete;

  const std::string& a_address() const { return a_address_; }
  const std::string& b_address() const { return b_address_; }

 private:
  std::string a_name_;
  std::string veth_a_;
  std::string a_address_;
  std::string b_address_;
};

struct SshdOptions {
  std::string netns;                         // empty: the caller's namespace
  std::string listen_address = "127.0.0.1";  // the namespace's address for netns servers
  std::uint16_t port = 0;                    // 0: 22 in a namespace, a free port otherwise
  // Logins go through PAM with a private /etc/security and /etc/pam.d (via /etc/netns/NS, which
  // `ip netns exec` bind-mounts over /etc), whose sshd service runs only pam_limits: what a
  // login on a guest does with limits.d. Needs netns.
  bool pam_limits = false;
};

// One sshd with its own config, host key and authorized client key, all in a temp directory.
class SshdServer {
 public:
  explicit SshdServer(SshdOptions options);
  ~SshdServer();
  SshdServer(const SshdServer&) = delete;
  SshdServer& operator=(const SshdServer&) = delete;

  std::uint16_t port() const { return port_; }
  const std::string& address() const { return options_.listen_address; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& directory() const { return directory_; }
  // The private key authorized to log in as root.
  std::filesystem::path client_key() const { return directory_ / "client_key"; }
  // "[10.1.2.2]:22 ssh-ed25519 AAAA..." (no brackets for port 22).
  const std::string& known_hosts_line() const { return known_hosts_line_; }
  // A file holding known_hosts_line().
  std::filesystem::path known_hosts_file() const { return directory_ / "known_hosts"; }
  // Connection options for this server: root, the client key, its known_hosts, strict policy,
  // short timeouts.
  SshConnectOptions connect_options(const std::string& label) const;
  // Where /etc/security of this server's logins lives (pam_limits); empty without pam_limits.
  std::filesystem::path private_etc() const;

  // SIGSTOP (true) or SIGCONT (false) to sshd and every session process: a host that hangs.
  void freeze(bool frozen);
  // Process ids of sshd's session processes and everything they started.
  std::vector<pid_t> session_processes() const;

 private:
  void write_config();
  void stop();

  SshdOptions options_;
  std::filesystem::path directory_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::string known_hosts_line_;
  bool created_etc_netns_ = false;
};

// A namespace with its own sshd, reached over the veth pair: the host most tests log in to.
struct SshdInNamespace {
  TestNamespace ns{"ssh"};
  SshdServer sshd{SshdOptions{ns.name(), ns.inside_address(), 0, false}};
  SshHost connect(const std::string& label = "g1") const {
    return SshHost(label, ns.inside_address(), sshd.connect_options(label));
  }
};

// Seconds from `start` until now.
double seconds_since(Clock::time_point start);
// The message of the SshError `action` throws; empty when it throws none.
std::string error_of(const std::function<void()>& action);

// Whether a process whose command line is exactly `argv` exists (checks /proc).
bool process_running(const std::vector<std::string>& argv);

}  // namespace ernic::testing
