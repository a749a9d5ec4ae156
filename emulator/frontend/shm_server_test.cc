// What registering memory does inside the instance, observed from outside its process.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/verbs.h"
#include "frontend/shm_client.h"
#include "supervisor.h"
#include "test_affinity.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

constexpr std::size_t kMiB = 1u << 20;

// Where process `pid` maps a client buffer of `size` bytes (the memfd ShmClient::allocate makes).
std::optional<std::uintptr_t> buffer_mapping(pid_t pid, std::size_t size) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("memfd:ernic-buffer") == std::string::npos) {
      continue;
    }
    std::istringstream in(line);
    std::uintptr_t begin = 0;
    std::uintptr_t end = 0;
    char dash = 0;
    in >> std::hex >> begin >> dash >> end;
    if (end - begin == size) {
      return begin;
    }
  }
  return std::nullopt;
}

// How many of the pages [address, address + length) of process `pid` its page table maps.
std::size_t present_pages(pid_t pid, std::uintptr_t address, std::size_t length) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const int fd = open(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  std::size_t present = 0;
  bool read_all_entries = true;
  for (std::size_t offset = 0; offset < length; offset += page) {
    std::uint64_t entry = 0;
    const auto at = static_cast<off_t>((address + offset) / page * sizeof entry);
    read_all_entries &= pread(fd, &entry, sizeof entry, at) == sizeof entry;
    present += (entry >> 63) & 1;
  }
  close(fd);
  REQUIRE(read_all_entries);
  return present;
}

// A NIC's ibv_reg_mr pins the pages and fills its translation table; the instance maps them in
// at registration rather than faulting on each page during the first transfer (in the PVM guests
// of this project, 4-10 us a page).
TEST_CASE("registering a memory region maps its pages into the instance, only its own") {
  TestDir dir("shm-prefault");
  Supervisor supervisor;
  start_instances(supervisor, dir, 1, "prefault-test");
  const pid_t instance = supervisor.instances()[0].pid;
  ShmClient client(supervisor.instances()[0].socket.string());
  const ShmClient::Memory memory = client.allocate(4 * kMiB);
  const auto mapping = buffer_mapping(instance, 4 * kMiB);
  REQUIRE(mapping);
  const std::size_t pages_per_mib = kMiB / static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  CHECK(present_pages(instance, *mapping, 4 * kMiB) == 0);  // mapped, not yet touched

  const std::uint32_t pd = client.alloc_pd();
  client.reg_mr(pd, memory, kMiB, 2 * kMiB, kAccessLocalWrite | kAccessRemoteWrite);
  CHECK(present_pages(instance, *mapping + kMiB, 2 * kMiB) == 2 * pages_per_mib);
  CHECK(present_pages(instance, *mapping, kMiB) == 0);
  CHECK(present_pages(instance, *mapping + 3 * kMiB, kMiB) == 0);
}

// Moves the instance's event loop (its main thread) to `cpu` and waits until the instance says
// so to its clients.
void move_instance(ShmClient& client, pid_t instance, int cpu) {
  pin(instance, cpu);
  client.alloc_pd();  // wakes the loop, which then runs there
  REQUIRE(observe([&] { return client.instance_cpu() == cpu; }, std::chrono::seconds(10)));
}

// How many times a wait for what never comes looks for it before it times out.
int looks_until_timeout(ShmClient& client, std::chrono::microseconds spin,
                        std::chrono::milliseconds timeout) {
  int looks = 0;
  const auto count_looks = [&looks] {
    ++looks;
    return false;
  };
  CHECK_FALSE(client.wait_until(count_looks, spin, timeout));
  return looks;
}

// On two cores a client spinning beside its own instance kept it off the CPU for the whole spin
// window (sched_yield hands over nothing under EEVDF): there the client blocks at once.
TEST_CASE("a client on its instance's CPU blocks at once instead of spinning") {
  TestDir dir("shm-cpu-shared");
  Supervisor supervisor;
  start_instances(supervisor, dir, 1, "cpu-test");
  ShmClient client(supervisor.instances()[0].socket.string());
  const int cpu = allowed_cpus().front();
  PinnedThread pinned(cpu);
  move_instance(client, supervisor.instances()[0].pid, cpu);

  // A spin would look thousands of times in a second; a blocking wait looks before it blocks
  // and once after its timeout.
  CHECK(looks_until_timeout(client, std::chrono::seconds(1), std::chrono::milliseconds(20)) <= 3);
}

TEST_CASE("a client on another CPU than its instance spins before it blocks") {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) {
    WARN("one CPU: nothing runs apart from the instance");
    return;
  }
  TestDir dir("shm-cpu-apart");
  Supervisor supervisor;
  start_instances(supervisor, dir, 1, "cpu-test");
  ShmClient client(supervisor.instances()[0].socket.string());
  PinnedThread pinned(cpus[1]);
  move_instance(client, supervisor.instances()[0].pid, cpus[0]);

  // Blocking at once looks twice (before it blocks, after the timeout): any more is a spin,
  // which even on a CPU shared with a busy neighbour makes dozens in 200 ms.
  CHECK(looks_until_timeout(client, std::chrono::milliseconds(200), std::chrono::milliseconds(1)) >
        3);
}

// A program that spins without yielding (perftest's ib_write_lat on its buffer) keeps a loop on
// its CPU waiting for the scheduler's slice: the loop goes where its programs do not poll.
TEST_CASE("an instance's loop keeps off the CPU its client polls on") {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) {
    WARN("one CPU: there is nowhere else for the loop to go");
    return;
  }
  TestDir dir("shm-keep-off");
  Supervisor supervisor;
  start_instances(supervisor, dir, 1, "cpu-test");
  const pid_t instance = supervisor.instances()[0].pid;
  ShmClient client(supervisor.instances()[0].socket.string());
  const std::uint32_t cq = client.create_cq();
  REQUIRE(allowed_cpus(instance) == cpus);
  PinnedThread pinned(cpus[0]);

  // Requests and a poll for each, as a latency test makes them: the loop keeps turning.
  std::uint64_t id = 0;
  const auto polling_client = [&] {
    for (int i = 0; i < 200; ++i) {
      client.post_nop(cq, ++id);
      REQUIRE(client.wait(std::chrono::microseconds(1000), std::chrono::milliseconds(5000)));
      ShmClient::Completion done[1];
      CHECK(client.poll_cq(cq, done) == 1);
    }
    const std::vector<int> now = allowed_cpus(instance);
    return std::find(now.begin(), now.end(), cpus[0]) == now.end();
  };
  CHECK(observe(polling_client, std::chrono::seconds(20)));
}

}  // namespace
}  // namespace ernic::emu
