#include "hosts/libvirt/libvirt_readiness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <libssh/libssh.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "hosts/ssh/ssh_jump.h"

namespace ernic {
namespace {

struct SessionCloser {
  void operator()(ssh_session session) const {
    ssh_disconnect(session);
    ssh_free(session);
  }
};
struct KeyFreer {
  void operator()(ssh_key key) const { ssh_key_free(key); }
};
using Session = std::unique_ptr<std::remove_pointer_t<ssh_session>, SessionCloser>;
using Key = std::unique_ptr<std::remove_pointer_t<ssh_key>, KeyFreer>;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits for the server's identification line on a connected socket.
std::string read_banner(int fd, const std::string& address, std::uint16_t port, int wait_ms) {
  pollfd ready{fd, POLLIN, 0};
  if (::poll(&ready, 1, wait_ms) != 1) {
    return fmt::format("{}:{} accepted but sent no SSH banner", address, port);
  }
  char banner[64] = {};
  ssize_t got = ::recv(fd, banner, sizeof banner - 1, 0);
  if (got < 4 || std::strncmp(banner, "SSH-", 4) != 0) {
    return fmt::format("{}:{} answered without an SSH banner", address, port);
  }
  return {};
}

// A tunnel from the jump host to the guest's address:port, or why there is none.
std::unique_ptr<SshTunnel> open_probe_tunnel(const SshConnectOptions& via,
                                             const std::string& address, std::uint16_t port,
                                             std::string& why) {
  try {
    return SshTunnel::open(via, address, port, fmt::format("probe of {}:{}", address, port));
  } catch (const SshError& error) {
    why = error.what();
    return nullptr;
  }
}

}  // namespace

std::string probe_ssh_banner(const std::string& address, std::uint16_t port,
                             std::chrono::milliseconds timeout, const SshConnectOptions* via) {
  int wait_ms = static_cast<int>(timeout.count());
  if (via != nullptr && via->jump) {
    std::string why;
    auto tunnel = open_probe_tunnel(*via, address, port, why);
    if (!tunnel) {
      return why;
    }
    Fd tunnelled(tunnel->release_fd());
    return read_banner(tunnelled.get(), address, port, wait_ms);
  }
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(port);
  if (::inet_pton(AF_INET, address.c_str(), &target.sin_addr) != 1) {
    return fmt::format("{} is not an IPv4 address", address);
  }
  Fd socket_fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (socket_fd.get() < 0) {
    return fmt::format("socket: {}", std::strerror(errno));
  }
  if (::connect(socket_fd.get(), reinterpret_cast<sockaddr*>(&target), sizeof target) != 0) {
    if (errno != EINPROGRESS) {
      return fmt::format("connect to {}:{}: {}", address, port, std::strerror(errno));
    }
    pollfd fd{socket_fd.get(), POLLOUT, 0};
    if (::poll(&fd, 1, wait_ms) != 1) {
      return fmt::format("connect to {}:{}: no answer", address, port);
    }
    int error = 0;
    socklen_t length = sizeof error;
    ::getsockopt(socket_fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      return fmt::format("connect to {}:{}: {}", address, port, std::strerror(error));
    }
  }
  return read_banner(socket_fd.get(), address, port, wait_ms);
}

std::string verify_host_key_and_login(const std::string& address, std::uint16_t port,
                                      const std::vector<HostKey>& expected, const std::string& user,
                                      const std::filesystem::path& private_key,
                                      std::chrono::milliseconds timeout,
                                      const SshConnectOptions* via) {
  if (expected.empty()) {
    return "the image has no saved host keys to verify the guest against";
  }
  std::unique_ptr<SshTunnel> tunnel;  // outlives the session that runs over it
  if (via != nullptr && via->jump) {
    std::string why;
    tunnel = open_probe_tunnel(*via, address, port, why);
    if (!tunnel) {
      return why;
    }
  }
  Session session(ssh_new());
  if (!session) {
    return "ssh_new failed";
  }
  long timeout_s = std::max<long>(1, static_cast<long>(timeout.count() / 1000));
  unsigned int port_number = port;
  int no = 0;
  ssh_options_set(session.get(), SSH_OPTIONS_HOST, address.c_str());
  ssh_options_set(session.get(), SSH_OPTIONS_PORT, &port_number);
  ssh_options_set(session.get(), SSH_OPTIONS_USER, user.c_str());
  ssh_options_set(session.get(), SSH_OPTIONS_TIMEOUT, &timeout_s);
  // Verification is against the image's keys below, never the user's ~/.ssh/known_hosts.
  ssh_options_set(session.get(), SSH_OPTIONS_KNOWNHOSTS, "/dev/null");
  ssh_options_set(session.get(), SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
  ssh_options_set(session.get(), SSH_OPTIONS_PROCESS_CONFIG, &no);
  if (tunnel) {
    socket_t tunnelled = tunnel->release_fd();  // the session closes it
    ssh_options_set(session.get(), SSH_OPTIONS_FD, &tunnelled);
  }
  if (ssh_connect(session.get()) != SSH_OK) {
    return fmt::format("SSH connect to {}:{}: {}", address, port, ssh_get_error(session.get()));
  }
  ssh_key raw_server_key = nullptr;
  if (ssh_get_server_publickey(session.get(), &raw_server_key) != SSH_OK) {
    return fmt::format("{}:{} presented no host key", address, port);
  }
  Key server_key(raw_server_key);
  bool matched = false;
  for (const auto& host_key : expected) {
    ssh_key raw_expected = nullptr;
    if (ssh_pki_import_pubkey_base64(host_key.base64.c_str(),
                                     ssh_key_type_from_name(host_key.type.c_str()),
                                     &raw_expected) != SSH_OK) {
      continue;
    }
    Key expected_key(raw_expected);
    if (ssh_key_cmp(server_key.get(), expected_key.get(), SSH_KEY_CMP_PUBLIC) == 0) {
      matched = true;
      break;
    }
  }
  if (!matched) {
    return fmt::format(
        "HOST KEY MISMATCH: {}:{} presented a {} key that is not one of the image's {} saved host "
        "keys (another machine answers at this address, or the image was rebuilt)",
        address, port, ssh_key_type_to_char(ssh_key_type(server_key.get())), expected.size());
  }
  ssh_key raw_private = nullptr;
  if (ssh_pki_import_privkey_file(private_key.c_str(), nullptr, nullptr, nullptr, &raw_private) !=
      SSH_OK) {
    return fmt::format("cannot read the image's private key {}", private_key.string());
  }
  Key private_key_handle(raw_private);
  if (ssh_userauth_publickey(session.get(), nullptr, private_key_handle.get()) !=
      SSH_AUTH_SUCCESS) {
    return fmt::format("host key verified, but {} cannot log in with {}: {}", user,
                       private_key.string(), ssh_get_error(session.get()));
  }
  return {};
}

}  // namespace ernic
