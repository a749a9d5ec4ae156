#include "runtime/in_loop_device.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace ernic::emu {

InLoopDevice::InLoopDevice(const InstanceConfig& config, std::chrono::seconds startup)
    : gids_(config.gids),
      loop_(config.spin),
      mesh_(loop_, log_, mesh_config(config)),
      engine_(mesh_, engine_config(config)) {
  if (config.backend.kind == Backend::Kind::kLoopback) {
    throw std::invalid_argument("an instance in the load generator's loop needs a mesh backend");
  }
  log_.open(config.log_file, config.log_level);
  // The mesh writes to its peers with writev, which raises SIGPIPE on a connection the peer
  // closed; an instance process ignores it (run_instance), and so must the process that holds
  // one: a lost peer is the mesh's to report, not a signal that kills the load generator.
  signal(SIGPIPE, SIG_IGN);
  mesh_.attach(engine_);
  loop_.set_deadline_source([this] { return engine_.next_deadline(); },
                            [this] { engine_.advance_timers(); });
  loop_.set_after_work([this] { mesh_.flush(); });
  mesh_.start([this] { ready_ = true; },
              [this](const std::string& why) {
                if (fatal_.empty()) {
                  fatal_ = why;
                }
              });
  if (!run_until([this] { return ready_; }, std::chrono::steady_clock::now() + startup)) {
    throw std::runtime_error(
        fmt::format("the instance did not join the mesh within {} s", startup.count()));
  }
}

InLoopDevice::~InLoopDevice() {
  // Before the memory goes: frames the mesh still queues may point into it.
  mesh_.shutdown();
  for (auto [address, size] : mappings_) {
    munmap(address, size);
  }
}

Device::Memory InLoopDevice::allocate(std::size_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw std::runtime_error(
        fmt::format("cannot allocate {} bytes: {}", size, std::strerror(errno)));
  }
  mappings_.emplace_back(p, size);
  return {static_cast<std::byte*>(p), size, static_cast<std::uint32_t>(mappings_.size())};
}

MemoryKeys InLoopDevice::reg_mr(std::uint32_t pd, const Memory& memory, std::size_t offset,
                                std::size_t length, std::uint32_t access) {
  if (offset > memory.size || length > memory.size - offset) {
    throw std::invalid_argument("the region lies outside the allocated memory");
  }
  std::byte* host = memory.data + offset;
  return engine_.reg_mr(pd, host, reinterpret_cast<std::uint64_t>(host), length, access);
}

std::uint32_t InLoopDevice::create_cq() {
  const std::uint32_t cq = engine_.create_cq();
  engine_.set_completion_handler(cq, [this, cq](const emu::Completion& c) {
    completions_[cq].push_back(
        {c.wr_id, c.qpn, c.byte_len, c.imm, static_cast<std::uint8_t>(c.status),
         static_cast<std::uint8_t>(c.opcode), c.has_imm, std::chrono::steady_clock::now()});
    ++completions_waiting_;
  });
  return cq;
}

// What the work request queued goes out now, as an instance's front end has it written after
// the doorbell's turn.
void InLoopDevice::post_send(std::uint32_t qpn, const SendWr& wr) {
  engine_.post_send(qpn, wr);
  mesh_.flush();
}

std::size_t InLoopDevice::poll_cq(std::uint32_t cq, std::span<Completion> out) {
  auto& queue = completions_[cq];
  std::size_t n = 0;
  for (; n < out.size() && !queue.empty(); ++n) {
    out[n] = queue.front();
    queue.pop_front();
  }
  completions_waiting_ -= n;
  return n;
}

bool InLoopDevice::wait(std::chrono::microseconds, std::chrono::milliseconds timeout) {
  return run_until([this] { return completions_waiting_ > 0; },
                   std::chrono::steady_clock::now() + timeout);
}

bool InLoopDevice::wait_until(const std::function<bool()>& ready, std::chrono::microseconds,
                              std::chrono::milliseconds timeout) {
  return run_until(ready, std::chrono::steady_clock::now() + timeout);
}

bool InLoopDevice::wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
  bool readable = false;
  loop_.add_fd(fd, EPOLLIN, [&readable](std::uint32_t) { readable = true; });
  try {
    run_until([&readable] { return readable; }, deadline);
  } catch (...) {
    loop_.remove_fd(fd);
    throw;
  }
  loop_.remove_fd(fd);
  return readable;
}

bool InLoopDevice::run_until(const std::function<bool()>& done,
                             std::chrono::steady_clock::time_point deadline) {
  const bool met = loop_.run_until([&] { return !fatal_.empty() || done(); }, deadline);
  if (!fatal_.empty()) {
    throw std::runtime_error("the instance failed: " + fatal_);
  }
  return met;
}

}  // namespace ernic::emu
