#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ernic::emu::perf {

// The out-of-band TCP exchange between the two load generators (perftest's port 18515): text
// lines, each side's QP numbers, GIDs, keys and addresses, and the barriers between sizes.
class OobChannel {
 public:
  // How the channel waits for its socket: the load generator waits through its device
  // (Device::wait_readable), so that an instance in its own loop keeps running meanwhile.
  // Returns whether `fd` became readable before `deadline`.
  using Waiter = std::function<bool(int fd, std::chrono::steady_clock::time_point deadline)>;

  // Server side: listens on `bind`:`port`; the caller then announces readiness and accepts.
  static OobChannel listen(const std::string& bind, std::uint16_t port, Waiter waiter);
  void accept(std::chrono::seconds timeout);
  // Client side. Throws with perftest's wording when the server is not there.
  static OobChannel connect(const std::string& host, std::uint16_t port, Waiter waiter);

  OobChannel(OobChannel&& other) noexcept;
  OobChannel& operator=(OobChannel&&) = delete;
  ~OobChannel();

  void send_line(const std::string& line);
  // Throws when the peer closed or nothing arrived within `timeout`.
  std::string receive_line(std::chrono::seconds timeout = std::chrono::seconds(60));
  // A line that has already arrived, without waiting; throws when the peer closed.
  std::optional<std::string> try_receive_line();

 private:
  explicit OobChannel(Waiter waiter) : waiter_(std::move(waiter)) {}
  std::optional<std::string> take_line();
  void read_some();  // one recv() into the buffer; throws when the peer closed
  bool readable(int fd, std::chrono::seconds timeout);
  int listen_fd_ = -1;
  int fd_ = -1;
  std::string buffer_;
  Waiter waiter_;
};

}  // namespace ernic::emu::perf
