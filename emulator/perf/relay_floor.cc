// The floor under send_lat on this machine: the emulator's four processes with no emulator in
// them. A message in send_lat goes from the client's load generator to its instance, over the
// mesh to the peer instance, and on to the peer's load generator: four processes that a
// two-core machine cannot all keep on a CPU. The TCP ping-pong baseline is two processes on
// two CPUs. What a hand-off between processes costs depends on the machine (a wake-up, 7-12 us
// on the paravirtualized guest of 2026-12-04, is most of a TCP round trip there), so this relays a
// token along the same chain and prints the one-way time three times: every process spinning with
// the payload over a local socket between the middle two, as the mesh carries it with
// --mesh-socket-streams; every process spinning with the payload through shared memory, as the
// mesh's rings carry it (the lowest any design of four processes reaches); and every process
// blocking, the payload over the socket (what a design that never spins pays).
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "perf/cpu_usage.h"
#include "perf/load_generator.h"
#include "perf/perftest_format.h"

namespace ernic::emu::perf {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRunLimit = std::chrono::seconds(60);
constexpr int kWarmUp = 100;

// The hand-offs of one leg: the client to its instance (eventfd or a flag in shared memory),
// instance to instance (the payload over a local stream socket or through shared memory),
// instance to the peer client.
enum class Handoff { kSpin, kBlock };
enum class Carrier { kSocket, kSharedMemory };
struct Variant {
  Handoff handoff;
  Carrier carrier;
  const char* name;
};
constexpr Variant kVariants[] = {
    {Handoff::kSpin, Carrier::kSocket, "spinning"},
    {Handoff::kSpin, Carrier::kSharedMemory, "spinning over shared memory"},
    {Handoff::kBlock, Carrier::kSocket, "blocking"},
};

// A word per hand-off, each on its own cache line: the spinning relay's doorbells.
struct alignas(64) Flag {
  std::atomic<std::uint32_t> value;
};
struct SharedFlags {
  Flag to_instance;       // client -> its instance
  Flag to_client;         // instance -> client
  Flag to_peer_client;    // peer instance -> peer client
  Flag to_peer_instance;  // peer client -> peer instance
  Flag forward;           // instance -> peer instance, the payload in shared memory
  Flag back;              // peer instance -> instance
};

// How a participant waits: spinning (yielding, as the emulator's spins do: the CPU is shared
// with the next in line) until the deadline; the measuring client also notices a participant
// that died, every few milliseconds while it spins and at once when a blocking read is
// interrupted.
class Patience {
 public:
  explicit Patience(Clock::time_point deadline) : deadline_(deadline) {}
  void watch(std::function<void()> check) { check_ = std::move(check); }
  void give_way() {
    const auto now = Clock::now();
    if (now > deadline_) {
      throw std::runtime_error("the relay timed out");
    }
    if (now >= next_check_) {
      check_now();
      next_check_ = now + std::chrono::milliseconds(20);
    }
    sched_yield();
  }
  // A blocking wait was interrupted (SIGCHLD: a participant ended).
  void check_now() {
    if (check_) {
      check_();
    }
  }

 private:
  Clock::time_point deadline_;
  Clock::time_point next_check_;
  std::function<void()> check_;
};

// One participant's end of a hand-off.
class Link {
 public:
  Link(Handoff mode, Flag& flag, int fd) : mode_(mode), flag_(flag), fd_(fd) {}
  void signal(std::uint32_t round) {
    if (mode_ == Handoff::kSpin) {
      flag_.value.store(round, std::memory_order_release);
      return;
    }
    const std::uint64_t one = 1;
    if (write(fd_, &one, sizeof one) != sizeof one) {
      throw std::runtime_error(std::string("eventfd write: ") + std::strerror(errno));
    }
  }
  void await(std::uint32_t round, Patience& patience) {
    if (mode_ == Handoff::kSpin) {
      while (flag_.value.load(std::memory_order_acquire) != round) {
        patience.give_way();
      }
      return;
    }
    std::uint64_t value = 0;
    while (read(fd_, &value, sizeof value) != sizeof value) {
      if (errno != EINTR) {
        throw std::runtime_error(std::string("eventfd read: ") + std::strerror(errno));
      }
      patience.check_now();
    }
  }

 private:
  Handoff mode_;
  Flag& flag_;
  int fd_;
};

// One instance's end of the instances' leg: the payload over the socket pair, or copied through
// one shared buffer (the two directions take turns) with a flag per direction, always spun on.
class MeshEnd {
 public:
  MeshEnd(const Variant& variant, int fd, Flag& outgoing, Flag& incoming, std::byte* shared)
      : carrier_(variant.carrier),
        handoff_(variant.handoff),
        fd_(fd),
        outgoing_(outgoing),
        incoming_(incoming),
        shared_(shared) {}

  void send(const std::vector<std::byte>& payload, std::uint32_t round) {
    if (carrier_ == Carrier::kSharedMemory) {
      std::memcpy(shared_, payload.data(), payload.size());
      outgoing_.value.store(round, std::memory_order_release);
      return;
    }
    std::size_t done = 0;
    while (done < payload.size()) {
      const ssize_t n = ::send(fd_, payload.data() + done, payload.size() - done, MSG_NOSIGNAL);
      if (n <= 0 && errno != EINTR) {
        throw std::runtime_error(std::string("relay socket: ") + std::strerror(errno));
      }
      done += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
  }

  void receive(std::vector<std::byte>& payload, std::uint32_t round, Patience& patience) {
    if (carrier_ == Carrier::kSharedMemory) {
      while (incoming_.value.load(std::memory_order_acquire) != round) {
        patience.give_way();
      }
      std::memcpy(payload.data(), shared_, payload.size());
      return;
    }
    std::size_t done = 0;
    const int flags = handoff_ == Handoff::kSpin ? MSG_DONTWAIT : 0;
    while (done < payload.size()) {
      const ssize_t n = recv(fd_, payload.data() + done, payload.size() - done, flags);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        throw std::runtime_error("the relay's peer instance went away");
      } else {
        patience.give_way();
      }
    }
  }

 private:
  Carrier carrier_;
  Handoff handoff_;
  int fd_;
  Flag& outgoing_;
  Flag& incoming_;
  std::byte* shared_;
};

struct Descriptors {
  int to_instance = -1, to_client = -1, to_peer_client = -1, to_peer_instance = -1;
  int mesh[2] = {-1, -1};
  ~Descriptors() {
    for (int fd : {to_instance, to_client, to_peer_client, to_peer_instance, mesh[0], mesh[1]}) {
      if (fd >= 0) {
        close(fd);
      }
    }
  }
};

// The relay's other three processes (the measuring client is this one).
class Participants {
 public:
  Participants() = default;
  Participants(const Participants&) = delete;
  Participants& operator=(const Participants&) = delete;
  ~Participants() { stop(); }

  // Runs `body` in a child process that exits when it returns (1 if it throws).
  template <typename Body>
  void start(Body body) {
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid > 0) {
      running_.push_back(pid);
      return;
    }
    // A participant left blocking after the measuring process died would never end.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      _exit(1);
    }
    try {
      body();
      _exit(0);
    } catch (...) {
      _exit(1);
    }
  }
  // Throws when a participant has failed or died; one that finished its rounds is fine.
  void check() {
    std::string failure;
    std::erase_if(running_, [&failure](pid_t pid) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) != pid) {
        return false;
      }
      if (WIFSIGNALED(status)) {
        failure = fmt::format("a relay participant was killed by signal {}", WTERMSIG(status));
      } else if (WEXITSTATUS(status) != 0) {
        failure = "a relay participant failed";
      }
      return true;
    });
    if (!failure.empty()) {
      throw std::runtime_error(failure);
    }
  }
  // Waits for every participant to finish its rounds.
  void finish() {
    while (!running_.empty()) {
      check();
      if (!running_.empty()) {
        usleep(1000);
      }
    }
  }
  const std::vector<pid_t>& running() const { return running_; }
  void stop() {
    for (pid_t pid : running_) {
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    running_.clear();
  }

 private:
  std::vector<pid_t> running_;
};

// While it lives, a participant's end interrupts the measuring client's blocking read (no
// SA_RESTART), which then looks at how it ended instead of waiting forever for its answer.
class InterruptedByChildren {
 public:
  InterruptedByChildren() {
    struct sigaction interrupt {};
    interrupt.sa_handler = [](int) {};
    sigemptyset(&interrupt.sa_mask);
    sigaction(SIGCHLD, &interrupt, &previous_);
  }
  InterruptedByChildren(const InterruptedByChildren&) = delete;
  InterruptedByChildren& operator=(const InterruptedByChildren&) = delete;
  ~InterruptedByChildren() { sigaction(SIGCHLD, &previous_, nullptr); }

 private:
  struct sigaction previous_ {};
};

// The flags, and the payload buffer of the shared-memory carrier, that the participants share
// after the fork.
class SharedArea {
 public:
  explicit SharedArea(std::size_t payload_size) : bytes_(sizeof(SharedFlags) + payload_size) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw std::runtime_error(std::string("mmap: ") + std::strerror(errno));
    }
    flags_ = new (p) SharedFlags{};
  }
  SharedArea(const SharedArea&) = delete;
  SharedArea& operator=(const SharedArea&) = delete;
  ~SharedArea() { munmap(flags_, bytes_); }
  SharedFlags* operator->() const { return flags_; }
  std::byte* payload() const { return reinterpret_cast<std::byte*>(flags_ + 1); }

 private:
  std::size_t bytes_;
  SharedFlags* flags_ = nullptr;
};

// The context switches of the measuring client and its three participants so far; nothing
// when one could not be read.
std::optional<std::uint64_t> relay_context_switches(const Participants& participants) {
  std::optional<std::uint64_t> total = process_context_switches(getpid());
  for (pid_t pid : participants.running()) {
    const auto count = process_context_switches(pid);
    total = total && count ? std::optional(*total + *count) : std::nullopt;
  }
  return total;
}

struct RelayRun {
  std::vector<double> round_trips;  // microseconds
  std::optional<double> switches_per_round_trip;
};

// One run of `iterations` measured round trips.
RelayRun relay(const Variant& variant, std::size_t size, std::uint64_t iterations) {
  const Handoff mode = variant.handoff;
  const SharedArea shared(variant.carrier == Carrier::kSharedMemory ? size : 0);
  Descriptors d;
  for (int* fd : {&d.to_instance, &d.to_client, &d.to_peer_client, &d.to_peer_instance}) {
    *fd = eventfd(0, EFD_CLOEXEC | (mode == Handoff::kSpin ? EFD_NONBLOCK : 0));
  }
  if (d.to_instance < 0 || d.to_client < 0 || d.to_peer_client < 0 || d.to_peer_instance < 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, d.mesh) != 0) {
    throw std::runtime_error(std::string("cannot create the relay: ") + std::strerror(errno));
  }
  // One round after the measured ones keeps every participant alive while their context
  // switches are read at the end of the last measured round.
  const auto last_measured = static_cast<std::uint32_t>(kWarmUp + iterations);
  const std::uint32_t rounds = last_measured + 1;
  Patience patience(Clock::now() + kRunLimit);
  Link to_instance(mode, shared->to_instance, d.to_instance);
  Link to_client(mode, shared->to_client, d.to_client);
  Link to_peer_client(mode, shared->to_peer_client, d.to_peer_client);
  Link to_peer_instance(mode, shared->to_peer_instance, d.to_peer_instance);
  MeshEnd instance_end(variant, d.mesh[0], shared->forward, shared->back, shared.payload());
  MeshEnd peer_end(variant, d.mesh[1], shared->back, shared->forward, shared.payload());
  Participants participants;
  participants.start([&] {  // the client's instance
    std::vector<std::byte> payload(size);
    for (std::uint32_t round = 1; round <= rounds; ++round) {
      to_instance.await(round, patience);
      instance_end.send(payload, round);
      instance_end.receive(payload, round, patience);
      to_client.signal(round);
    }
  });
  participants.start([&] {  // the peer instance
    std::vector<std::byte> payload(size);
    for (std::uint32_t round = 1; round <= rounds; ++round) {
      peer_end.receive(payload, round, patience);
      to_peer_client.signal(round);
      to_peer_instance.await(round, patience);
      peer_end.send(payload, round);
    }
  });
  participants.start([&] {  // the peer client: answers at once
    for (std::uint32_t round = 1; round <= rounds; ++round) {
      to_peer_client.await(round, patience);
      to_peer_instance.signal(round);
    }
  });
  patience.watch([&] { participants.check(); });
  const InterruptedByChildren interrupted;
  RelayRun run;
  std::optional<std::uint64_t> switches_before;
  for (std::uint32_t round = 1; round <= rounds; ++round) {
    const auto start = Clock::now();
    to_instance.signal(round);
    to_client.await(round, patience);
    if (round > kWarmUp && round <= last_measured) {
      run.round_trips.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    if (round == kWarmUp) {
      switches_before = relay_context_switches(participants);
    } else if (round == last_measured) {
      if (const auto switches =
              switches_between(switches_before, relay_context_switches(participants))) {
        run.switches_per_round_trip =
            static_cast<double>(*switches) / static_cast<double>(iterations);
      }
    }
  }
  participants.finish();  // on a throw, its destructor kills those still running
  return run;
}

}  // namespace

int run_relay_floor(std::uint64_t size, std::uint64_t iterations, std::ostream& out,
                    std::ostream& err) {
  try {
    for (const Variant& variant : kVariants) {
      RelayRun run = relay(variant, size, iterations);
      std::vector<double> one_way = std::move(run.round_trips);
      for (double& t : one_way) {
        t /= 2;  // a round trip is two ways alike (perftest's latency tests report so too)
      }
      const LatResult r = summarize_latency(size, std::move(one_way));
      const std::string switches =
          run.switches_per_round_trip
              ? fmt::format("{:.1f} context switches a round trip", *run.switches_per_round_trip)
              : std::string("context switches not readable");
      out << fmt::format(
          " relay floor, {}, {} B, four processes : one way median {:.2f} usec, p99 {:.2f} usec, "
          "min {:.2f} usec ({} samples), {}\n",
          variant.name, size, r.typical, r.p99, r.min, r.iterations, switches);
    }
    return 0;
  } catch (const std::exception& e) {
    err << "ernicctl perf relay_floor: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ernic::emu::perf
