#include "sshd_fixture.h"
#include "base/file_text.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "hosts/local_host.h"
#include "private_home.h"
#include "process_tree.h"
#include "run/port_block.h"

extern char** environ;

namespace ernic::testing {
namespace {

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

pid_t spawn(const std::vector<std::string>& argv, int output_fd) {
  std::vector<char*> args;
  for (const auto& word : argv) {
    args.push_back(const_cast<char*>(word.c_str()));
  }
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (output_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, output_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, output_fd, 2);
  }
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  return pid;
}

std::vector<pid_t> descendants_of(pid_t root) {
  std::vector<pid_t> found;
  std::vector<pid_t> pending{root};
  while (!pending.empty() && found.size() < 10000) {
    pid_t next = pending.back();
    pending.pop_back();
    for (pid_t child : children_of(next)) {
      found.push_back(child);
      pending.push_back(child);
    }
  }
  return found;
}

// A port from a block no concurrent test process or ernicctl run holds, below the kernel's
// ephemeral range, so that no outgoing connection of another program takes it before sshd binds.
std::uint16_t free_port() {
  static PortBlock block;
  return block.take();
}

bool listens_in(pid_t pid, std::uint16_t port) {
  return proc_net_tcp_listens(read_file_text(fmt::format("/proc/{}/net/tcp", pid)), port);
}

std::atomic<int> namespace_counter{0};

}  // namespace

int run_program(const std::vector<std::string>& argv, std::string* output) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_t pid = -1;
  try {
    pid = spawn(argv, pipe_fds[1]);
  } catch (...) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    throw;
  }
  close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  ssize_t count;
  while ((count = read(pipe_fds[0], buffer, sizeof buffer)) > 0) {
    text.append(buffer, static_cast<std::size_t>(count));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (output != nullptr) {
    *output = text;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string run_checked(const std::vector<std::string>& argv) {
  std::string output;
  int status = run_program(argv, &output);
  if (status != 0) {
    std::string line;
    for (const auto& word : argv) {
      line += word + " ";
    }
    throw std::runtime_error(fmt::format("{}failed ({}): {}", line, status, output));
  }
  return output;
}

pid_t start_program(const std::vector<std::string>& argv,
                    const std::filesystem::path& output_file) {
  int fd = open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw std::runtime_error("cannot create " + output_file.string());
  }
  pid_t pid = spawn(argv, fd);
  close(fd);
  return pid;
}

int wait_program(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

InterruptAtExit::~InterruptAtExit() {
  // 0: our child and still running; a program already waited for is no child of ours (ECHILD).
  if (waitpid(pid_, nullptr, WNOHANG) != 0) {
    return;
  }
  ::kill(pid_, SIGINT);
  if (wait_program(pid_, std::chrono::seconds(30)) == -1) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

TestNamespace::TestNamespace(const std::string& tag) {
  int index = namespace_counter++;
  int pid = static_cast<int>(getpid());
  name_ = fmt::format("ernic-t{}-{}{}", pid, tag, index);
  // veth names have at most 15 characters.
  veth_outside_ = fmt::format("et{}o{}", pid % 1000000, index % 100);
  veth_inside_ = fmt::format("et{}i{}", pid % 1000000, index % 100);
  subnet_ = fmt::format("10.{}.{}.", 150 + pid % 100, (pid / 100 + index) % 250 + 1);
  outside_ = subnet_ + "1";
  inside_ = subnet_ + "2";
  run_program({"ip", "netns", "del", name_});
  run_program({"ip", "link", "del", veth_outside_});
  try {
    run_checked({"ip", "netns", "add", name_});
    run_checked({"ip", "link", "add", veth_outside_, "type", "veth", "peer", "name", veth_inside_});
    run_checked({"ip", "link", "set", veth_inside_, "netns", name_});
    run_checked({"ip", "addr", "add", outside_ + "/24", "dev", veth_outside_});
    run_checked({"ip", "link", "set", veth_outside_, "up"});
    run_checked({"ip", "-n", name_, "addr", "add", inside_ + "/24", "dev", veth_inside_});
    run_checked({"ip", "-n", name_, "link", "set", veth_inside_, "up"});
    run_checked({"ip", "-n", name_, "link", "set", "lo", "up"});
  } catch (...) {
    run_program({"ip", "link", "del", veth_outside_});
    run_program({"ip", "netns", "del", name_});
    throw;
  }
}

TestNamespace::~TestNamespace() {
  run_program({"ip", "link", "del", veth_outside_});
  run_program({"ip", "netns", "del", name_});
}

std::string TestNamespace::unused_address() const {
  return subnet_ + "77";
}

int TestNamespace::exec(const std::vector<std::string>& argv, std::string* output) const {
  std::vector<std::string> full{"ip", "netns", "exec", name_};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_program(full, output);
}

NamespaceLink::NamespaceLink(const TestNamespace& a, const TestNamespace& b) : a_name_(a.name()) {
  const int index = namespace_counter++;
  const int pid = static_cast<int>(getpid());
  veth_a_ = fmt::format("el{}a{}", pid % 1000000, index % 100);
  const std::string veth_b = fmt::format("el{}b{}", pid % 1000000, index % 100);
  // 10.50-149.x: apart from TestNamespace's 10.150-249.x subnets.
  const std::string subnet =
      fmt::format("10.{}.{}.", 50 + pid % 100, (pid / 100 + index) % 250 + 1);
  a_address_ = subnet + "1";
  b_address_ = subnet + "2";
  try {
    run_checked({"ip", "-n", a.name(), "link", "add", veth_a_, "type", "veth", "peer", "name",
                 veth_b, "netns", b.name()});
    run_checked({"ip", "-n", a.name(), "addr", "add", a_address_ + "/24", "dev", veth_a_});
    run_checked({"ip", "-n", a.name(), "link", "set", veth_a_, "up"});
    run_checked({"ip", "-n", b.name(), "addr", "add", b_address_ + "/24", "dev", veth_b});
    run_checked({"ip", "-n", b.name(), "link", "set", veth_b, "up"});
  } catch (...) {
    run_program({"ip", "-n", a_name_, "link", "del", veth_a_});
    throw;
  }
}

NamespaceLink::~NamespaceLink() {
  run_program({"ip", "-n", a_name_, "link", "del", veth_a_});
}

SshdServer::SshdServer(SshdOptions options) : options_(std::move(options)) {
  char pattern[] = "/tmp/ernic-sshd-XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  directory_ = pattern;
  try {
    port_ = options_.port != 0 ? options_.port : !options_.netns.empty() ? 22 : free_port();
    // sshd insists on its privilege separation directory.
    std::filesystem::create_directories("/run/sshd");
    run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ernic-test-host", "-f",
                 (directory_ / "host_key").string()});
    run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ernic-test-client", "-f",
                 client_key().string()});
    std::filesystem::copy_file(directory_ / "client_key.pub", directory_ / "authorized_keys");
    std::istringstream host_public(read_file_text(directory_ / "host_key.pub"));
    std::string key_type, key_blob;
    host_public >> key_type >> key_blob;
    std::string host_part = port_ == 22 ? options_.listen_address
                                        : fmt::format("[{}]:{}", options_.listen_address, port_);
    known_hosts_line_ = fmt::format("{} {} {}", host_part, key_type, key_blob);
    write_file(known_hosts_file(), known_hosts_line_ + "\n");
    write_config();

    std::vector<std::string> argv;
    if (!options_.netns.empty()) {
      argv = {"ip", "netns", "exec", options_.netns};
    }
    std::vector<std::string> sshd = with_private_home(
        directory_ / "home",
        {"/usr/sbin/sshd", "-D", "-e", "-f", (directory_ / "sshd_config").string()});
    argv.insert(argv.end(), sshd.begin(), sshd.end());
    int log_fd =
        open((directory_ / "sshd.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    pid_ = spawn(argv, log_fd);
    close(log_fd);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!listens_in(pid_, port_)) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("sshd exited: " + read_file_text(directory_ / "sshd.log"));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("sshd did not listen within 10 s: " +
                                 read_file_text(directory_ / "sshd.log"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (...) {
    stop();
    throw;
  }
}

void SshdServer::write_config() {
  std::string config = fmt::format(
      "Port {}\n"
      "ListenAddress {}\n"
      "HostKey {}\n"
      "PidFile {}\n"
      "AuthorizedKeysFile {}\n"
      "PasswordAuthentication no\n"
      "KbdInteractiveAuthentication no\n"
      "PubkeyAuthentication yes\n"
      "PermitRootLogin prohibit-password\n"
      "UsePAM {}\n"
      "StrictModes no\n"
      "PrintMotd no\n"
      "LogLevel ERROR\n",
      port_, options_.listen_address, (directory_ / "host_key").string(),
      (directory_ / "sshd.pid").string(), (directory_ / "authorized_keys").string(),
      options_.pam_limits ? "yes" : "no");
  write_file(directory_ / "sshd_config", config);
  if (!options_.pam_limits) {
    return;
  }
  if (options_.netns.empty()) {
    throw std::runtime_error("pam_limits needs a namespace (its /etc/netns directory)");
  }
  std::filesystem::path etc = private_etc();
  if (!std::filesystem::exists("/etc/netns")) {
    created_etc_netns_ = true;
  }
  std::filesystem::create_directories(etc);
  std::filesystem::copy("/etc/security", etc / "security",
                        std::filesystem::copy_options::recursive);
  std::filesystem::copy("/etc/pam.d", etc / "pam.d", std::filesystem::copy_options::recursive);
  // Public-key logins; the session part applies limits.d like a guest's login does.
  write_file(etc / "pam.d" / "sshd",
             "auth required pam_permit.so\n"
             "account required pam_permit.so\n"
             "session required pam_limits.so\n"
             "password required pam_deny.so\n");
}

std::filesystem::path SshdServer::private_etc() const {
  if (!options_.pam_limits) {
    return {};
  }
  return std::filesystem::path("/etc/netns") / options_.netns;
}

SshConnectOptions SshdServer::connect_options(const std::string& label) const {
  SshConnectOptions options;
  options.label = label;
  options.target.host = options_.listen_address;
  options.target.port = port_;
  options.target.user = "root";
  options.target.key = client_key();
  options.known_hosts = known_hosts_file();
  options.host_key_policy = HostKeyPolicy::kStrict;
  options.connect_timeout = std::chrono::seconds(5);
  options.keepalive = std::chrono::seconds(2);
  options.alive_timeout = std::chrono::seconds(2);
  return options;
}

std::vector<pid_t> SshdServer::session_processes() const {
  return pid_ > 0 ? descendants_of(pid_) : std::vector<pid_t>{};
}

void SshdServer::freeze(bool frozen) {
  if (pid_ <= 0) {
    return;
  }
  int signal_number = frozen ? SIGSTOP : SIGCONT;
  kill(pid_, signal_number);
  for (pid_t child : descendants_of(pid_)) {
    kill(child, signal_number);
  }
}

void SshdServer::stop() {
  if (pid_ > 0) {
    // Session processes outlive the listener; they are ours too.
    std::vector<pid_t> sessions = descendants_of(pid_);
    kill(pid_, SIGKILL);
    for (pid_t child : sessions) {
      kill(child, SIGKILL);
    }
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::error_code ignored;
  if (options_.pam_limits && !options_.netns.empty()) {
    std::filesystem::remove_all(private_etc(), ignored);
    if (created_etc_netns_) {
      std::filesystem::remove("/etc/netns", ignored);  // only when empty
    }
  }
  if (!directory_.empty()) {
    std::filesystem::remove_all(directory_, ignored);
  }
}

SshdServer::~SshdServer() {
  stop();
}

bool process_running(const std::vector<std::string>& argv) {
  std::string wanted;
  for (const auto& word : argv) {
    wanted += word;
    wanted.push_back('\0');
  }
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) {
      continue;
    }
    if (read_file_text(entry.path() / "cmdline") == wanted) {
      return true;
    }
  }
  return false;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const SshError& error) {
    return error.what();
  }
  return "";
}

}  // namespace ernic::testing
