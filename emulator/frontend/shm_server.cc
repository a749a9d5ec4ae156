#include "frontend/shm_server.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "engine/wire.h"
#include "frontend/fd_passing.h"
#include "frontend/shm_server_request.h"

namespace ernic::emu {
namespace {

using Bytes = std::basic_string<std::byte>;

Bytes ok_response(const ByteWriter& body) {
  ByteWriter w;
  w.u32(0);
  w.str("");
  w.raw(body.bytes());
  return w.bytes();
}

Bytes error_response(const std::string& message, int error_number) {
  ByteWriter w;
  w.u32(static_cast<std::uint32_t>(error_number));
  w.str(message);
  return w.bytes();
}

}  // namespace

ShmFrontEnd::ShmFrontEnd(EventLoop& loop, Engine& engine, Logger& log, InstanceIdentity identity)
    : loop_(loop), engine_(engine), log_(log), identity_(std::move(identity)) {
  poller_ = loop_.add_poller({
      [this] {
        publish_cpu();
        place_loop();
        bool worked = false;
        if (guest_region_ != nullptr) {
          worked |= poll_guest_region();
        }
        for (auto& [fd, c] : clients_) {
          worked |= drain(*c);
        }
        return worked;
      },
      [this] {
        if (guest_region_ != nullptr) {
          schedule_guest_poll();
        }
        // Say we are about to block, then look once more: a client that posted before seeing
        // the flag is picked up here, one that posts after it rings the doorbell.
        for (auto& [fd, c] : clients_) {
          if (c->area != nullptr) {
            c->area->instance_waiting.value.store(1, std::memory_order_seq_cst);
          }
        }
        for (auto& [fd, c] : clients_) {
          if (c->area != nullptr &&
              c->area->submit_head.value.load(std::memory_order_relaxed) !=
                  c->area->submit_tail.value.load(std::memory_order_seq_cst)) {
            for (auto& [fd2, c2] : clients_) {
              if (c2->area != nullptr) {
                c2->area->instance_waiting.value.store(0, std::memory_order_relaxed);
              }
            }
            return false;
          }
        }
        return true;
      },
  });
  engine_.set_receive_refill([this](std::uint32_t qpn) {
    for (auto& [fd, c] : clients_) {
      if (c->area != nullptr && c->qps.contains(qpn)) {
        take_receives(*c, qpn);
        return;
      }
    }
  });
  // A WRITE into memory a client watches wakes it like a completion (write_lat waits so).
  engine_.set_write_observer([this](std::uint32_t qpn, std::uint64_t iova, std::uint32_t length) {
    for (auto& [fd, c] : clients_) {
      if (c->area != nullptr && c->qps.contains(qpn)) {
        const shm::WriteWatch& watch = c->area->write_watch;
        if (iova < watch.end.load(std::memory_order_acquire) &&
            watch.begin.load(std::memory_order_relaxed) < iova + length) {
          c->notify_pending = true;
        }
        return;
      }
    }
  });
}

ShmFrontEnd::~ShmFrontEnd() {
  engine_.set_receive_refill({});
  engine_.set_write_observer({});
  close_all();
  loop_.cancel_timer(guest_wakeup_);
  loop_.remove_poller(poller_);
}

void ShmFrontEnd::listen(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error("socket path too long: " + path);
  }
  std::strcpy(addr.sun_path, path.c_str());
  unlink(path.c_str());  // a socket left by a killed instance
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    const std::string why = std::strerror(errno);
    close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error("cannot create socket " + path + ": " + why);
  }
  path_ = path;
  loop_.add_fd(listen_fd_, EPOLLIN, [this](std::uint32_t) { accept_ready(); });
}

void ShmFrontEnd::close_all() {
  while (!clients_.empty()) {
    drop(*clients_.begin()->second);
  }
  if (listen_fd_ >= 0) {
    loop_.remove_fd(listen_fd_);
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(path_.c_str());
  }
}

void ShmFrontEnd::accept_ready() {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (!DescriptorReserve::at_limit(errno)) {
        return;
      }
      if (!refusing_at_limit_) {
        refusing_at_limit_ = true;
        log_.error("front end: out of file descriptors ({} clients): refusing new clients",
                   clients_.size());
      }
      if (!reserve_.refuse_one(listen_fd_)) {
        return;
      }
      continue;
    }
    refusing_at_limit_ = false;
    auto client = std::make_unique<Client>();
    client->fd = fd;
    Client& c = *client;
    clients_[fd] = std::move(client);
    loop_.add_fd(fd, EPOLLIN, [this, &c](std::uint32_t events) {
      if (events & EPOLLIN) {
        on_message(c);
      } else if (events & (EPOLLHUP | EPOLLERR)) {
        drop(c);
      }
    });
  }
}

void ShmFrontEnd::drop(Client& c) {
  for (std::uint32_t qpn : c.qps) {
    engine_.destroy_qp(qpn);
  }
  for (std::uint32_t key : c.mrs) {
    engine_.dereg_mr(key);
  }
  for (auto& [cq, channel] : c.channels) {
    close(channel.fd);
  }
  for (Engine::Handle cq : c.cqs) {
    engine_.destroy_cq(cq);
    cq_owner_.erase(cq);
  }
  for (Engine::Handle pd : c.pds) {
    engine_.dealloc_pd(pd);
  }
  for (auto& [id, region] : c.regions) {
    release(region);
  }
  if (c.area != nullptr && c.area_fd >= 0) {
    munmap(c.area, sizeof(shm::Area));
  }
  for (int fd : {c.area_fd, c.doorbell_fd, c.completion_fd}) {
    if (fd >= 0) {
      if (fd == c.doorbell_fd) {
        loop_.remove_fd(fd);
      }
      close(fd);
    }
  }
  if (c.slot >= 0) {
    // The slot is free again unless its owner already let it go (or another claimed it).
    std::uint64_t owner = c.owner;
    guest_region_->slot(static_cast<std::uint32_t>(c.slot))
        .owner.compare_exchange_strong(owner, 0, std::memory_order_acq_rel);
    log_.debug("front end: guest slot {} detached", c.slot);
  } else {
    loop_.remove_fd(c.fd);
    close(c.fd);
    log_.debug("front end: client {} detached", c.fd);
  }
  clients_.erase(c.fd);  // destroys c
  if (on_detach_) {
    on_detach_();
  }
}

void ShmFrontEnd::on_message(Client& c) {
  std::vector<std::byte> data;
  std::vector<int> fds;
  const long n = receive_message(c.fd, data, fds);
  if (n <= 0) {
    for (int fd : fds) {
      close(fd);
    }
    if (n < 0 && errno == EAGAIN) {
      return;
    }
    drop(c);
    return;
  }
  ++commands_;
  std::vector<int> send_fds;
  const Bytes response = serve(c, data, fds, send_fds);
  for (int fd : fds) {
    close(fd);
  }
  if (!send_message(c.fd, response, send_fds)) {
    drop(c);
  }
}

Bytes ShmFrontEnd::serve(Client& c, std::span<const std::byte> message, const std::vector<int>& fds,
                         std::vector<int>& send_fds) {
  ByteReader r(message);
  const auto op = static_cast<shm::Op>(r.u32());
  ByteWriter body;
  Request request{r, fds, body, {}};
  Bytes response;
  try {
    dispatch(c, op, request);
    if (r.failed()) {
      throw VerbsError("truncated front-end request");
    }
    response = ok_response(body);
  } catch (const VerbsError& e) {
    response = error_response(e.what(), e.error_number());
  } catch (const std::exception& e) {
    response = error_response(e.what(), EIO);
  }
  send_fds = std::move(request.send_fds);
  return response;
}

void ShmFrontEnd::dispatch(Client& c, shm::Op op, Request& request) {
  using Handler = void (ShmFrontEnd::*)(Client&, Request&);
  static const std::map<shm::Op, Handler> kHandlers{
      {shm::Op::kOpen, &ShmFrontEnd::handle_open},
      {shm::Op::kRegisterMemory, &ShmFrontEnd::handle_register_memory},
      {shm::Op::kAllocPd, &ShmFrontEnd::handle_alloc_pd},
      {shm::Op::kRegisterMr, &ShmFrontEnd::handle_register_mr},
      {shm::Op::kDeregisterMr, &ShmFrontEnd::handle_deregister_mr},
      {shm::Op::kCreateCq, &ShmFrontEnd::handle_create_cq},
      {shm::Op::kCreateQp, &ShmFrontEnd::handle_create_qp},
      {shm::Op::kModifyQp, &ShmFrontEnd::handle_modify_qp},
      {shm::Op::kDestroyQp, &ShmFrontEnd::handle_destroy_qp},
      {shm::Op::kReleaseMemory, &ShmFrontEnd::handle_release_memory},
      {shm::Op::kDeallocPd, &ShmFrontEnd::handle_dealloc_pd},
      {shm::Op::kDestroyCq, &ShmFrontEnd::handle_destroy_cq}};
  auto handler = kHandlers.find(op);
  if (handler == kHandlers.end()) {
    throw VerbsError("unknown front-end operation");
  }
  (this->*handler->second)(c, request);
}

void ShmFrontEnd::handle_open(Client& c, Request& request) {
  if (request.in.u32() != shm::kProtocolVersion) {
    throw VerbsError("front-end protocol version mismatch");
  }
  if (c.opened) {
    throw VerbsError("already open");
  }
  // A guest's rings are its slot's, and it can receive no descriptors; a socket's client gets
  // its rings and eventfds now.
  if (c.slot < 0) {
    c.area_fd = memfd_create("ernic-rings", MFD_CLOEXEC);
    if (c.area_fd < 0 || ftruncate(c.area_fd, sizeof(shm::Area)) != 0) {
      throw VerbsError(std::string("cannot create the ring memory: ") + std::strerror(errno));
    }
    void* p = mmap(nullptr, sizeof(shm::Area), PROT_READ | PROT_WRITE, MAP_SHARED, c.area_fd, 0);
    if (p == MAP_FAILED) {
      throw VerbsError(std::string("cannot map the ring memory: ") + std::strerror(errno));
    }
    c.area = new (p) shm::Area();
    c.doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c.completion_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    loop_.add_fd(c.doorbell_fd, EPOLLIN, [this, &c](std::uint32_t) {
      std::uint64_t value = 0;
      [[maybe_unused]] auto ignored = read(c.doorbell_fd, &value, sizeof value);
      drain(c);
    });
    request.send_fds = {c.area_fd, c.doorbell_fd, c.completion_fd};
  }
  c.opened = true;
  request.out.u32(identity_.node());
  request.out.u32(static_cast<std::uint32_t>(getpid()));
  request.out.str(identity_.mac);
  request.out.u16(static_cast<std::uint16_t>(identity_.gids.size()));
  for (const auto& gid : identity_.gids) {
    request.out.str(gid);
  }
}

std::optional<SharedMemory> ShmFrontEnd::find(const std::byte* p, std::size_t length) const {
  auto after = regions_by_base_.upper_bound(p);
  if (after == regions_by_base_.begin()) {
    return std::nullopt;
  }
  const Region& r = *std::prev(after)->second;
  if (r.fd < 0 || p + length > r.base + r.size) {
    return std::nullopt;
  }
  return SharedMemory{r.shared_id, r.fd, r.base, r.size};
}

void ShmFrontEnd::publish_cpu() {
  // No system call: glibc reads the rseq area the kernel keeps current.
  const auto cpu = static_cast<std::uint32_t>(sched_getcpu() + 1);
  for (auto& [fd, c] : clients_) {
    if (c->area != nullptr && c->area->instance_cpu.value.load(std::memory_order_relaxed) != cpu) {
      c->area->instance_cpu.value.store(cpu, std::memory_order_relaxed);
    }
  }
}

void ShmFrontEnd::place_loop() {
  // A look every few hundred turns (a turn is a microsecond or two while the loop spins), or
  // every millisecond when turns are rarer (a latency test's loop blocks between messages): a
  // program's CPU changes when the scheduler moves it, rarely. A program whose count stood still
  // for a few dozen looks stopped polling (it exited, blocks, or the run ended), and its CPU is
  // free again. A stream has stopped when none of its long requests came for a few
  // milliseconds (a bandwidth test's come at least every millisecond: 8 MiB at 10 GB/s).
  constexpr unsigned kTurnsPerLook = 256;
  constexpr unsigned kTurnsPerClockRead = 16;
  constexpr auto kLookInterval = std::chrono::milliseconds(1);
  constexpr auto kStreamStopped = std::chrono::milliseconds(5);
  constexpr unsigned kLooksUntilStopped = 32;
  ++turns_since_placement_;
  if (turns_since_placement_ % kTurnsPerClockRead != 0) {
    return;
  }
  const auto now = EventLoop::Clock::now();
  if (turns_since_placement_ < kTurnsPerLook && now - last_look_ < kLookInterval) {
    return;
  }
  turns_since_placement_ = 0;
  last_look_ = now;
  const std::uint64_t streamed = engine_.stats().stream_requests;
  if (streamed != stream_requests_seen_) {
    stream_requests_seen_ = streamed;
    stream_seen_at_ = now;
  }
  const bool streaming = now - stream_seen_at_ < kStreamStopped;
  std::vector<int> polling;
  bool programs_here = false;
  for (auto& [fd, c] : clients_) {
    if (c->area == nullptr || c->slot >= 0) {
      continue;  // a guest's programs: its CPUs are not this machine's
    }
    programs_here = true;
    const std::uint32_t activity = c->area->client.activity.load(std::memory_order_relaxed);
    if (activity != c->presence_seen) {
      c->presence_seen = activity;
      c->looks_without_presence = 0;
    } else if (c->looks_without_presence < kLooksUntilStopped) {
      ++c->looks_without_presence;
    }
    const std::uint32_t cpu = c->area->client.cpu.load(std::memory_order_relaxed);
    if (c->looks_without_presence < kLooksUntilStopped && cpu != 0) {
      polling.push_back(static_cast<int>(cpu - 1));
    }
  }
  if (programs_here && streaming) {
    placement_.gather();
  } else {
    placement_.keep_off(polling);
  }
}

bool ShmFrontEnd::drain(Client& c) {
  if (c.area == nullptr) {
    return false;
  }
  shm::Area& a = *c.area;
  std::uint32_t head = a.submit_head.value.load(std::memory_order_relaxed);
  const std::uint32_t tail = a.submit_tail.value.load(std::memory_order_acquire);
  if (head == tail) {
    return false;
  }
  a.instance_waiting.value.store(0, std::memory_order_relaxed);
  // Bound the batch: a client cannot make the instance loop forever.
  std::uint32_t budget = shm::kSubmitSlots;
  while (head != tail && budget-- > 0) {
    const shm::SubmitEntry e = a.submits[head % shm::kSubmitSlots];
    ++head;
    try {
      if (e.kind == static_cast<std::uint8_t>(shm::SubmitKind::kTaken)) {
        continue;
      }
      if (e.kind == static_cast<std::uint8_t>(shm::SubmitKind::kArmCq)) {
        if (auto channel = c.channels.find(e.qpn); channel != c.channels.end()) {
          if (channel->second.completions > e.wr_id) {
            c.events_due.push_back(e.qpn);
          } else {
            channel->second.armed = true;
          }
        }
        continue;
      }
      if (e.kind == static_cast<std::uint8_t>(shm::SubmitKind::kNop)) {
        shm::CompletionEntry done{};
        done.wr_id = e.wr_id;
        done.cq = e.qpn;
        done.opcode = shm::kNopOpcode;
        push_raw(c, done);
        continue;
      }
      if (!c.qps.contains(e.qpn)) {
        throw VerbsError("unknown queue pair");
      }
      if (e.kind == static_cast<std::uint8_t>(shm::SubmitKind::kRecv)) {
        engine_.post_recv(e.qpn, {e.wr_id, {e.addr, e.length, e.lkey}});
      } else if (e.kind == static_cast<std::uint8_t>(shm::SubmitKind::kSend) &&
                 e.opcode <= static_cast<std::uint8_t>(SendOpcode::kRdmaRead)) {
        SendWr wr;
        wr.wr_id = e.wr_id;
        wr.opcode = static_cast<SendOpcode>(e.opcode);
        wr.sge = {e.addr, e.length, e.lkey};
        wr.signaled = e.signaled != 0;
        wr.imm = e.imm;
        wr.remote_addr = e.remote_addr;
        wr.rkey = e.rkey;
        engine_.post_send(e.qpn, wr);
      } else {
        throw VerbsError("malformed work request");
      }
    } catch (const VerbsError& error) {
      log_.debug("front end: work request {} refused: {}", e.wr_id, error.what());
      shm::CompletionEntry failed{};
      failed.wr_id = e.wr_id;
      failed.qpn = e.qpn;
      failed.status = shm::kLocalQpOperationError;
      // Report on the QP's send CQ when the QP is known; otherwise the client's first CQ.
      failed.cq = c.cqs.empty() ? 0 : *c.cqs.begin();
      push_raw(c, failed);
    }
  }
  a.submit_head.value.store(head, std::memory_order_release);
  return true;
}

void ShmFrontEnd::take_receives(Client& c, std::uint32_t qpn) {
  shm::Area& a = *c.area;
  // The client writes only slots past the tail it published, so the instance may mark the
  // entries between head and tail it has consumed early.
  const std::uint32_t tail = a.submit_tail.value.load(std::memory_order_acquire);
  for (std::uint32_t i = a.submit_head.value.load(std::memory_order_relaxed); i != tail; ++i) {
    shm::SubmitEntry& e = a.submits[i % shm::kSubmitSlots];
    if (e.kind != static_cast<std::uint8_t>(shm::SubmitKind::kRecv) || e.qpn != qpn) {
      continue;
    }
    try {
      engine_.post_recv(e.qpn, {e.wr_id, {e.addr, e.length, e.lkey}});
    } catch (const VerbsError&) {
      return;  // drain() meets it in order and reports it
    }
    e.kind = static_cast<std::uint8_t>(shm::SubmitKind::kTaken);
  }
}

void ShmFrontEnd::push_completion(Client& c, Engine::Handle cq, const Completion& completion) {
  if (auto channel = c.channels.find(cq); channel != c.channels.end()) {
    ++channel->second.completions;
    if (channel->second.armed) {
      // The event is written after the entry below, which the program polls once woken.
      channel->second.armed = false;
      c.events_due.push_back(cq);
    }
  }
  shm::CompletionEntry e{};
  e.wr_id = completion.wr_id;
  e.qpn = completion.qpn;
  e.cq = cq;
  e.byte_len = completion.byte_len;
  e.imm = completion.imm;
  e.status = static_cast<std::uint8_t>(completion.status);
  e.opcode = static_cast<std::uint8_t>(completion.opcode);
  e.has_imm = completion.has_imm ? 1 : 0;
  push_raw(c, e);
}

void ShmFrontEnd::push_raw(Client& c, const shm::CompletionEntry& entry) {
  shm::Area& a = *c.area;
  const std::uint32_t tail = a.completion_tail.value.load(std::memory_order_relaxed);
  const std::uint32_t head = a.completion_head.value.load(std::memory_order_acquire);
  if (tail - head >= shm::kCompletionSlots) {
    // The client keeps fewer requests outstanding than the ring holds; only a broken one
    // gets here, and it loses completions rather than the instance blocking.
    if (c.ring_overflows++ == 0) {
      log_.error("front end: completion ring of client {} overflowed", c.fd);
    }
    return;
  }
  shm::CompletionEntry& slot = a.completions[tail % shm::kCompletionSlots];
  slot = entry;
  slot.completed_ns =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  a.completion_tail.value.store(tail + 1, std::memory_order_seq_cst);
  c.notify_pending = true;
}

void ShmFrontEnd::notify() {
  for (auto& [fd, c] : clients_) {
    for (Engine::Handle cq : c->events_due) {
      if (auto channel = c->channels.find(cq); channel != c->channels.end()) {
        // A full pipe: the program has not read its earlier events, and one more changes nothing.
        [[maybe_unused]] auto ignored =
            write(channel->second.fd, &channel->second.cookie, sizeof channel->second.cookie);
        ++interrupts_;
      }
    }
    c->events_due.clear();
    if (!c->notify_pending || c->area == nullptr) {
      continue;
    }
    c->notify_pending = false;
    if (c->completion_fd >= 0 &&
        c->area->client_waiting.value.exchange(0, std::memory_order_seq_cst) != 0) {
      const std::uint64_t one = 1;
      [[maybe_unused]] auto ignored = write(c->completion_fd, &one, sizeof one);
      ++interrupts_;
    }
  }
}

}  // namespace ernic::emu
