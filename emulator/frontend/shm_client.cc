#include "frontend/shm_client.h"

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "engine/wire.h"
#include "frontend/fd_passing.h"
#include "frontend/shm_messages.h"

namespace ernic::emu {

ShmClient::ShmClient(const std::string& socket_path) : path_(socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error("socket path too long: " + socket_path);
  }
  std::strcpy(addr.sun_path, socket_path.c_str());
  socket_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (connect(socket_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string why = std::strerror(errno);
    close(socket_);
    throw std::runtime_error(
        fmt::format("cannot attach to the ERNIC instance at {}: {}", socket_path, why));
  }
  ByteWriter w;
  w.u32(shm::kProtocolVersion);
  std::vector<int> fds;
  auto body = call(shm::Op::kOpen, w.bytes(), {}, &fds);
  if (fds.size() != 3) {
    for (int fd : fds) {
      close(fd);
    }
    close(socket_);
    throw std::runtime_error("the instance did not hand over its rings");
  }
  void* p = mmap(nullptr, sizeof(shm::Area), PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
  close(fds[0]);
  if (p == MAP_FAILED) {
    throw std::runtime_error(std::string("cannot map the rings: ") + std::strerror(errno));
  }
  area_ = static_cast<shm::Area*>(p);
  doorbell_fd_ = fds[1];
  completion_fd_ = fds[2];
  ByteReader r(body);
  node_ = r.u32();
  instance_pid_ = static_cast<pid_t>(r.u32());
  mac_ = r.str();
  const std::uint16_t count = r.u16();
  for (std::uint16_t i = 0; i < count; ++i) {
    gids_.push_back(r.str());
  }
}

ShmClient::~ShmClient() {
  for (auto [p, size] : mappings_) {
    munmap(p, size);
  }
  if (area_ != nullptr) {
    munmap(area_, sizeof(shm::Area));
  }
  for (int fd : {doorbell_fd_, completion_fd_, socket_}) {
    if (fd >= 0) {
      close(fd);
    }
  }
}

std::vector<std::byte> ShmClient::call(shm::Op op, const std::basic_string<std::byte>& body,
                                       std::span<const int> fds, std::vector<int>* received) {
  ByteWriter w;
  w.u32(static_cast<std::uint32_t>(op));
  w.raw(body);
  if (!send_message(socket_, w.bytes(), fds)) {
    throw std::runtime_error(
        fmt::format("the ERNIC instance at {} went away: {}", path_, std::strerror(errno)));
  }
  std::vector<std::byte> data;
  std::vector<int> got;
  const long n = receive_message(socket_, data, got);
  if (n <= 0) {
    throw std::runtime_error(fmt::format("the ERNIC instance at {} closed the connection", path_));
  }
  if (received != nullptr) {
    *received = got;
  } else {
    for (int fd : got) {
      close(fd);
    }
  }
  ByteReader r(data);
  const std::uint32_t status = r.u32();
  const std::string error = r.str();
  if (status != 0) {
    throw VerbsError(error);
  }
  const std::size_t body_start = 4 + 2 + error.size();  // status u32, error string
  return {data.begin() + static_cast<long>(body_start), data.end()};
}

ShmClient::Memory ShmClient::allocate(std::size_t size) {
  const int fd = memfd_create("ernic-buffer", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) {
      close(fd);
    }
    throw std::runtime_error("cannot create shared memory of " + std::to_string(size) +
                             " bytes: " + why);
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    throw std::runtime_error(std::string("cannot map shared memory: ") + std::strerror(errno));
  }
  ByteWriter w;
  w.u64(size);
  const int fds[] = {fd};
  std::vector<std::byte> body;
  try {
    body = call(shm::Op::kRegisterMemory, w.bytes(), fds);
  } catch (...) {
    close(fd);
    munmap(p, size);
    throw;
  }
  close(fd);
  mappings_.emplace_back(p, size);
  ByteReader r(body);
  return {static_cast<std::byte*>(p), size, r.u32()};
}

std::uint32_t ShmClient::alloc_pd() {
  auto body = call(shm::Op::kAllocPd, {});
  return ByteReader(body).u32();
}

MemoryKeys ShmClient::reg_mr(std::uint32_t pd, const Memory& memory, std::size_t offset,
                             std::size_t length, std::uint32_t access) {
  ByteWriter w;
  w.u32(pd);
  w.u32(memory.region);
  w.u64(offset);
  w.u64(length);
  w.u64(reinterpret_cast<std::uint64_t>(memory.data + offset));
  w.u32(access);
  auto body = call(shm::Op::kRegisterMr, w.bytes());
  ByteReader r(body);
  MemoryKeys keys;
  keys.lkey = r.u32();
  keys.rkey = r.u32();
  return keys;
}

std::uint32_t ShmClient::create_cq() {
  auto body = call(shm::Op::kCreateCq, {});
  return ByteReader(body).u32();
}

std::uint32_t ShmClient::create_qp(std::uint32_t pd, std::uint32_t send_cq, std::uint32_t recv_cq) {
  ByteWriter w;
  w.u32(pd);
  w.u32(send_cq);
  w.u32(recv_cq);
  auto body = call(shm::Op::kCreateQp, w.bytes());
  return ByteReader(body).u32();
}

void ShmClient::modify_qp(std::uint32_t qpn, const QpAttributes& a) {
  call(shm::Op::kModifyQp, shm::modify_qp_request(qpn, a).bytes());
}

void ShmClient::destroy_qp(std::uint32_t qpn) {
  ByteWriter w;
  w.u32(qpn);
  call(shm::Op::kDestroyQp, w.bytes());
}

void ShmClient::submit(const shm::SubmitEntry& entry) {
  std::uint32_t tail = area_->submit_tail.value.load(std::memory_order_relaxed);
  while (tail - area_->submit_head.value.load(std::memory_order_acquire) >= shm::kSubmitSlots) {
    ring_doorbell_if_needed();
    std::this_thread::yield();
  }
  area_->submits[tail % shm::kSubmitSlots] = entry;
  area_->submit_tail.value.store(tail + 1, std::memory_order_seq_cst);
  ring_doorbell_if_needed();
}

void ShmClient::ring_doorbell_if_needed() {
  if (area_->instance_waiting.value.exchange(0, std::memory_order_seq_cst) != 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto ignored = write(doorbell_fd_, &one, sizeof one);
  }
}

void ShmClient::post_send(std::uint32_t qpn, const SendWr& wr) {
  shm::SubmitEntry e{};
  e.kind = static_cast<std::uint8_t>(shm::SubmitKind::kSend);
  e.wr_id = wr.wr_id;
  e.qpn = qpn;
  e.opcode = static_cast<std::uint8_t>(wr.opcode);
  e.addr = wr.sge.addr;
  e.length = wr.sge.length;
  e.lkey = wr.sge.lkey;
  e.remote_addr = wr.remote_addr;
  e.rkey = wr.rkey;
  e.imm = wr.imm;
  e.signaled = wr.signaled ? 1 : 0;
  submit(e);
}

void ShmClient::post_recv(std::uint32_t qpn, const RecvWr& wr) {
  shm::SubmitEntry e{};
  e.kind = static_cast<std::uint8_t>(shm::SubmitKind::kRecv);
  e.wr_id = wr.wr_id;
  e.qpn = qpn;
  e.addr = wr.sge.addr;
  e.length = wr.sge.length;
  e.lkey = wr.sge.lkey;
  submit(e);
}

void ShmClient::post_nop(std::uint32_t cq, std::uint64_t wr_id) {
  shm::SubmitEntry e{};
  e.kind = static_cast<std::uint8_t>(shm::SubmitKind::kNop);
  e.wr_id = wr_id;
  e.qpn = cq;
  submit(e);
}

bool ShmClient::drain_completions() {
  area_->client.note(presence_calls_);
  std::uint32_t head = area_->completion_head.value.load(std::memory_order_relaxed);
  const std::uint32_t tail = area_->completion_tail.value.load(std::memory_order_acquire);
  if (head == tail) {
    return false;
  }
  for (; head != tail; ++head) {
    const shm::CompletionEntry& e = area_->completions[head % shm::kCompletionSlots];
    ready_[e.cq].push_back(
        {e.wr_id, e.qpn, e.byte_len, e.imm, e.status, e.opcode, e.has_imm != 0,
         std::chrono::steady_clock::time_point(std::chrono::nanoseconds(e.completed_ns))});
  }
  area_->completion_head.value.store(head, std::memory_order_release);
  return true;
}

std::size_t ShmClient::poll_cq(std::uint32_t cq, std::span<Completion> out) {
  drain_completions();
  auto it = ready_.find(cq);
  if (it == ready_.end()) {
    return 0;
  }
  std::size_t n = 0;
  while (n < out.size() && !it->second.empty()) {
    out[n++] = it->second.front();
    it->second.pop_front();
  }
  return n;
}

bool ShmClient::wait(std::chrono::microseconds spin, std::chrono::milliseconds timeout) {
  return wait_until(
      [this] {
        drain_completions();
        for (const auto& [cq, queue] : ready_) {
          if (!queue.empty()) {
            return true;
          }
        }
        return false;
      },
      spin, timeout);
}

void ShmClient::watch_writes(const std::byte* data, std::size_t size) {
  const auto begin = reinterpret_cast<std::uint64_t>(data);
  area_->write_watch.begin.store(begin, std::memory_order_relaxed);
  area_->write_watch.end.store(size == 0 ? begin : begin + size, std::memory_order_seq_cst);
}

std::optional<int> ShmClient::instance_cpu() const {
  const std::uint32_t published = area_->instance_cpu.value.load(std::memory_order_relaxed);
  if (published == 0) {
    return std::nullopt;
  }
  return static_cast<int>(published - 1);
}

bool ShmClient::wait_until(const std::function<bool()>& ready, std::chrono::microseconds spin,
                           std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    // Spin first, again after every wake-up: a wake-up for something else (the completion of
    // our own request) must not make us block through the answer that follows it.
    // Never on the instance's CPU, though: there the instance is what we wait for, and
    // sched_yield does not hand it the CPU (the kernel's EEVDF scheduler lets the yielding
    // task go on while the other has had more than its share): such a spin kept a runnable
    // instance off its CPU for the whole window, 45 of a send_lat's 53 us one way. Blocking
    // lets it run at once.
    const auto spin_start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - spin_start < spin &&
           instance_cpu() != sched_getcpu()) {
      area_->client.note(presence_calls_);
      if (ready()) {
        return true;
      }
      // Spin politely: the CPU may have other work (a peer instance, the other side's client).
      sched_yield();
    }
    // Say we are about to block, then look once more (the fence keeps that look after the
    // store): what the instance completes or places after it sees the flag rings the eventfd.
    area_->client_waiting.value.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ready()) {
      area_->client_waiting.value.store(0, std::memory_order_relaxed);
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return false;
    }
    pollfd fds[2] = {{completion_fd_, POLLIN, 0}, {socket_, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(std::min<long>(left.count() + 1, 1000)));
    if (n < 0 && errno != EINTR) {
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    if (fds[1].revents & (POLLHUP | POLLERR | POLLIN)) {
      throw std::runtime_error(fmt::format("the ERNIC instance at {} went away", path_));
    }
    if (fds[0].revents & POLLIN) {
      std::uint64_t value = 0;
      [[maybe_unused]] auto ignored = read(completion_fd_, &value, sizeof value);
    }
  }
}

}  // namespace ernic::emu
