#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "perf/load_generator.h"

namespace ernic::emu::perf {
namespace {

// Moves exactly `length` bytes, busy-polling a non-blocking socket (no wake-ups at all).
void busy_io(int fd, std::byte* data, std::size_t length, bool sending,
             std::chrono::steady_clock::time_point deadline) {
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n = sending ? send(fd, data + done, length - done, MSG_DONTWAIT | MSG_NOSIGNAL)
                              : recv(fd, data + done, length - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      throw std::runtime_error("TCP ping-pong peer failed");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("TCP ping-pong timed out");
    }
  }
}

}  // namespace

int run_tcp_pingpong(std::uint64_t size, std::uint64_t iterations, std::ostream& out,
                     std::ostream& err) {
  try {
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    socklen_t len = sizeof addr;
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error(std::string("cannot listen on loopback: ") + std::strerror(errno));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::exception_ptr echo_error;
    std::thread echo([&] {
      try {
        const int fd = accept(listener, nullptr, nullptr);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        std::vector<std::byte> buffer(size);
        for (std::uint64_t i = 0; i < iterations + 100; ++i) {
          busy_io(fd, buffer.data(), size, false, deadline);
          busy_io(fd, buffer.data(), size, true, deadline);
        }
        close(fd);
      } catch (...) {
        echo_error = std::current_exception();
      }
    });
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error(std::string("cannot connect on loopback: ") + std::strerror(errno));
    }
    std::vector<std::byte> buffer(size, std::byte{0x5a});
    std::vector<double> rtt;
    for (std::uint64_t i = 0; i < iterations + 100; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      busy_io(fd, buffer.data(), size, true, deadline);
      busy_io(fd, buffer.data(), size, false, deadline);
      if (i >= 100) {  // warm-up excluded
        rtt.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
      }
    }
    close(fd);
    echo.join();
    close(listener);
    if (echo_error) {
      std::rethrow_exception(echo_error);
    }
    std::sort(rtt.begin(), rtt.end());
    out << fmt::format(
        " tcp busy-poll ping-pong, {} B, loopback : round trip median {:.2f} usec, p99 {:.2f} "
        "usec, "
        "min {:.2f} usec ({} samples)\n",
        size, rtt[rtt.size() / 2], rtt[rtt.size() * 99 / 100], rtt.front(), rtt.size());
    return 0;
  } catch (const std::exception& e) {
    err << "ernicctl perf tcp_pingpong: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ernic::emu::perf
