#include "mesh/byte_ring.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace ernic::emu {
namespace {

constexpr std::size_t kCapacity = ByteRing::kCapacity;

std::size_t write_all(ByteRing& ring, const std::vector<std::byte>& bytes) {
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  return ring.write(&iov, 1);
}

std::vector<std::byte> read_up_to(ByteRing& ring, std::size_t n) {
  std::vector<std::byte> bytes(n);
  iovec iov{bytes.data(), n};
  bytes.resize(ring.read(&iov, 1));
  return bytes;
}

// The reader's side of the writer's ring, as a peer maps it from the memfd it was passed.
std::unique_ptr<ByteRing> reader_of(const ByteRing& writer) {
  std::string error;
  auto reader = ByteRing::map(writer.fd(), error);
  REQUIRE(reader != nullptr);
  return reader;
}

TEST_CASE("a byte ring carries a stream byte for byte across its wrap, in pieces of any size") {
  auto writer = ByteRing::create();
  REQUIRE(writer != nullptr);
  auto reader = reader_of(*writer);
  std::mt19937 random(7);
  std::vector<std::byte> sent;
  std::vector<std::byte> received;
  std::size_t next = 0;
  // Five times the capacity: every position of the wrap is crossed by writes and reads of
  // unrelated sizes, scattered over several iovecs.
  while (received.size() < 5 * kCapacity) {
    std::vector<std::byte> a(random() % 70000), b(random() % 9000);
    for (auto* part : {&a, &b}) {
      for (auto& byte : *part) {
        byte = static_cast<std::byte>(next++ * 131 % 251);
      }
    }
    iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
    const std::size_t room = writer->room();
    const std::size_t written = writer->write(iov, 2);
    CHECK(written == std::min(room, a.size() + b.size()));
    sent.insert(sent.end(), a.begin(), a.begin() + static_cast<long>(std::min(written, a.size())));
    if (written > a.size()) {
      sent.insert(sent.end(), b.begin(), b.begin() + static_cast<long>(written - a.size()));
    }
    next -= a.size() + b.size() - written;  // what did not fit is offered again, renumbered
    const auto got = read_up_to(*reader, random() % 100000);
    received.insert(received.end(), got.begin(), got.end());
  }
  while (reader->readable() > 0) {
    const auto got = read_up_to(*reader, kCapacity);
    received.insert(received.end(), got.begin(), got.end());
  }
  REQUIRE(received.size() == sent.size());
  CHECK(std::memcmp(received.data(), sent.data(), sent.size()) == 0);
  CHECK(writer->room() == kCapacity);
}

TEST_CASE("a full byte ring takes nothing more, and its reader wakes the writer that waits once") {
  auto writer = ByteRing::create();
  auto reader = reader_of(*writer);
  const std::vector<std::byte> block(kCapacity + 100, std::byte{0x5a});
  CHECK(write_all(*writer, block) == kCapacity);
  CHECK(writer->room() == 0);
  CHECK(write_all(*writer, block) == 0);
  CHECK_FALSE(writer->wait_for_room());  // still full: the writer blocks
  CHECK(reader->readable() == static_cast<std::int64_t>(kCapacity));
  CHECK(read_up_to(*reader, 10).size() == 10);
  CHECK(reader->writer_needs_waking());
  CHECK(read_up_to(*reader, 10).size() == 10);
  CHECK_FALSE(reader->writer_needs_waking());  // told once per wait
  CHECK(writer->room() == 20);
  CHECK(writer->wait_for_room());  // room already: no need to block
}

TEST_CASE("a byte ring's writer wakes its reader only when the reader said it sleeps") {
  auto writer = ByteRing::create();
  auto reader = reader_of(*writer);
  const std::vector<std::byte> frame(64, std::byte{1});
  write_all(*writer, frame);
  CHECK_FALSE(writer->reader_needs_waking());  // the reader spins: no system call
  CHECK_FALSE(reader->prepare_to_sleep());     // bytes are waiting: it must not block
  read_up_to(*reader, 64);
  CHECK(reader->prepare_to_sleep());
  write_all(*writer, frame);
  CHECK(writer->reader_needs_waking());
  write_all(*writer, frame);
  CHECK_FALSE(writer->reader_needs_waking());  // one wake-up per sleep
  CHECK(reader->prepare_to_sleep() == false);
  reader->awake();
  write_all(*writer, frame);
  CHECK_FALSE(writer->reader_needs_waking());
}

TEST_CASE("a byte ring counts the descriptors passed beside it and says when its reader attached") {
  auto writer = ByteRing::create();
  auto reader = reader_of(*writer);
  CHECK_FALSE(writer->reader_attached());
  reader->attach();
  CHECK(writer->reader_attached());
  writer->count_passed_descriptor();
  writer->count_passed_descriptor();
  write_all(*writer, std::vector<std::byte>(8));
  CHECK(reader->passed_descriptors() == 2);
}

TEST_CASE("a byte ring's reader refuses a file of another size or unsealed, and a broken ring") {
  const int fd = memfd_create("not-a-ring", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, 4096) == 0);
  std::string error;
  CHECK(ByteRing::map(fd, error) == nullptr);
  CHECK_THAT(error, Catch::Contains("not a ring") && Catch::Contains("4096 bytes"));
  close(fd);
  // The right size, but a writer could shrink it under the reader's mapping.
  auto sealed = ByteRing::create();
  const int unsealed = memfd_create("unsealed-ring", MFD_CLOEXEC);
  REQUIRE(unsealed >= 0);
  struct stat file {};
  REQUIRE(fstat(sealed->fd(), &file) == 0);
  REQUIRE(ftruncate(unsealed, file.st_size) == 0);
  CHECK(ByteRing::map(unsealed, error) == nullptr);
  CHECK_THAT(error, Catch::Contains("not sealed"));
  close(unsealed);

  auto writer = ByteRing::create();
  auto reader = reader_of(*writer);
  // A writer that claims more than the ring holds: its tail is the first word of the file.
  auto* tail = static_cast<std::uint64_t*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, writer->fd(), 0));
  REQUIRE(tail != MAP_FAILED);
  *tail = kCapacity + 1;
  CHECK(reader->readable() == -1);
  CHECK(read_up_to(*reader, 100).empty());
  munmap(tail, 4096);
}

TEST_CASE("a byte ring carries a stream between two threads while both spin") {
  auto writer = ByteRing::create();
  auto reader = reader_of(*writer);
  constexpr std::size_t kTotal = 16u << 20;
  std::thread producer([&] {
    std::vector<std::byte> chunk(5000);
    std::size_t at = 0;
    while (at < kTotal) {
      const std::size_t n = std::min(chunk.size(), kTotal - at);
      for (std::size_t i = 0; i < n; ++i) {
        chunk[i] = static_cast<std::byte>((at + i) % 253);
      }
      iovec iov{chunk.data(), n};
      at += writer->write(&iov, 1);  // what did not fit goes again, recomputed
      std::this_thread::yield();
    }
  });
  std::size_t at = 0;
  bool intact = true;
  while (at < kTotal) {
    const auto got = read_up_to(*reader, 7000);
    for (std::size_t i = 0; i < got.size(); ++i) {
      intact &= got[i] == static_cast<std::byte>((at + i) % 253);
    }
    at += got.size();
    if (got.empty()) {
      std::this_thread::yield();
    }
  }
  producer.join();
  CHECK(intact);
  CHECK(at == kTotal);
}

}  // namespace
}  // namespace ernic::emu
