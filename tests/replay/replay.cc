// A stand-in for perftest's ib_* tools, ibv_rc_pingpong and fio in driver tests, and the only
// place one is used: tests install this program under the real tools' names in a temporary
// directory put first on PATH, and it replays recorded outputs.
//
// It reads its script from the directory named by ERNIC_REPLAY_DIR. For each kind of file it
// looks for "<tool>.<role>.<kind>" first, then "<role>.<kind>" (tool is the name it was run
// as, role is "server" or "client"):
//   stdout, stderr   copied to the stream of that name (missing: nothing is printed)
//   exit             the exit status, as text (missing: 0)
//   delay_ms         milliseconds to wait before printing (missing: 0)
//   accept_timeout_ms  how long a server waits for its client (missing: 60000)
// Every run appends "<tool> <role> <args...>" to ERNIC_REPLAY_DIR/invocations.log.
//
// Like the real tools, a server listens on the TCP port given with -p (perftest's 18515 when
// there is none), waits for the client to connect and close, and only then prints, so that a
// driver detects readiness by the listening port. A client connects to SERVER -p PORT first
// (an unreachable server is not an error: the recording decides the outcome), prints, then
// closes the connection. fio is always a client and connects to nothing.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// Short options of perftest and ibv_rc_pingpong that take no value; every other "-x" takes one.
const std::set<std::string> kFlagsWithoutValue = {"-a", "-b", "-e", "-F", "-h", "-H", "-N",
                                                  "-o", "-O", "-P", "-R", "-V", "-z"};

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Script {
  std::string dir;
  std::string tool;
  std::string role;

  std::optional<std::string> file(const std::string& kind) const {
    if (auto specific = read_file(dir + "/" + tool + "." + role + "." + kind)) {
      return specific;
    }
    return read_file(dir + "/" + role + "." + kind);
  }

  long number(const std::string& kind, long fallback) const {
    auto text = file(kind);
    return text ? std::strtol(text->c_str(), nullptr, 10) : fallback;
  }
};

void write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

void log_invocation(const Script& script, int argc, char** argv) {
  std::string line = script.tool + " " + script.role;
  for (int i = 1; i < argc; ++i) {
    line += " ";
    line += argv[i];
  }
  line += "\n";
  int fd = ::open((script.dir + "/invocations.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    write_all(fd, line);
    ::close(fd);
  }
}

// The positional argument (the server's address) of a client command line, if any.
std::optional<std::string> server_address(int argc, char** argv) {
  if (argc < 2) {
    return std::nullopt;
  }
  std::string last = argv[argc - 1];
  if (last.empty() || last[0] == '-') {
    return std::nullopt;
  }
  if (argc >= 3) {
    std::string previous = argv[argc - 2];
    bool takes_value =
        previous.size() == 2 && previous[0] == '-' && kFlagsWithoutValue.count(previous) == 0;
    if (takes_value) {
      return std::nullopt;
    }
  }
  return last;
}

int port_argument(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "-p") == 0 || std::strcmp(argv[i], "--port") == 0) {
      return std::atoi(argv[i + 1]);
    }
  }
  return 18515;
}

int connect_to(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* each = found; each != nullptr && fd < 0; each = each->ai_next) {
    fd = ::socket(each->ai_family, each->ai_socktype | SOCK_CLOEXEC, each->ai_protocol);
    if (fd >= 0 && ::connect(fd, each->ai_addr, each->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

// Listens on `port`, waits for one client and for it to close. False (after a message) when
// the port cannot be used or nobody comes within the limit.
bool serve_one_client(int port, std::chrono::milliseconds limit) {
  // IPv4 on all addresses, as perftest and ibv_rc_pingpong do with their defaults.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  int bound = ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address);
  if (bound != 0 || ::listen(listener, 1) != 0) {
    std::fprintf(stderr, "replay: cannot listen on port %d: %s\n", port, std::strerror(errno));
    return false;
  }
  pollfd waiting{listener, POLLIN, 0};
  if (::poll(&waiting, 1, static_cast<int>(limit.count())) != 1) {
    std::fprintf(stderr, "replay: no client connected to port %d within %lld ms\n", port,
                 static_cast<long long>(limit.count()));
    return false;
  }
  int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(listener);
  if (client >= 0) {
    char buffer[256];
    pollfd reading{client, POLLIN, 0};
    // The client closes once it has printed; the server prints after it, like perftest.
    while (::poll(&reading, 1, static_cast<int>(limit.count())) == 1 &&
           ::read(client, buffer, sizeof buffer) > 0) {
    }
    ::close(client);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* dir = std::getenv("ERNIC_REPLAY_DIR");
  std::string tool = argv[0];
  if (auto slash = tool.rfind('/'); slash != std::string::npos) {
    tool = tool.substr(slash + 1);
  }
  if (dir == nullptr || *dir == '\0') {
    std::fprintf(stderr, "replay: ERNIC_REPLAY_DIR is not set (run as %s)\n", tool.c_str());
    return 127;
  }
  std::optional<std::string> address = server_address(argc, argv);
  bool is_server = tool != "fio" && !address;
  Script script{dir, tool, is_server ? "server" : "client"};
  log_invocation(script, argc, argv);

  long accept_limit_ms = script.number("accept_timeout_ms", 60000);
  int connection = -1;
  if (is_server) {
    if (!serve_one_client(port_argument(argc, argv), std::chrono::milliseconds(accept_limit_ms))) {
      return 1;
    }
  } else if (address) {
    connection = connect_to(*address, port_argument(argc, argv));
  }

  if (long delay = script.number("delay_ms", 0); delay > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  }
  if (auto out = script.file("stdout")) {
    write_all(STDOUT_FILENO, *out);
  }
  if (auto err = script.file("stderr")) {
    write_all(STDERR_FILENO, *err);
  }
  if (connection >= 0) {
    ::close(connection);
  }
  return static_cast<int>(script.number("exit", 0));
}
