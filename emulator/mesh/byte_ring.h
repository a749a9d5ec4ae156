#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ernic::emu {

// One direction of a local mesh connection's byte stream, in a memfd both instances map: what
// the socket carried, without its two system calls per frame (docs/emulator-performance-log.md,
// "The floor with shared memory between the instances"). One writer, one reader; the positions only
// grow.
//
// Neither side sleeps on the ring itself: each says in it when it is about to block (the
// reader in its event loop, the writer on a full ring), and the other rings the eventfd the
// sleeper waits on only then. The mesh carries the rest (mesh_rings.cc).
class ByteRing {
 public:
  static constexpr std::size_t kCapacity = 256u << 10;

  // A new ring in a new memfd (the writer's side); null with errno set when that fails.
  static std::unique_ptr<ByteRing> create();
  // Maps the ring in `fd` (the reader's side; `fd` stays the caller's); null with `error` set
  // when it is not a ring's file.
  static std::unique_ptr<ByteRing> map(int fd, std::string& error);
  ~ByteRing();
  ByteRing(const ByteRing&) = delete;
  ByteRing& operator=(const ByteRing&) = delete;

  // The memfd of a ring create() made (-1 for a mapped one), to pass to the reader.
  int fd() const { return fd_; }

  // Writer. Copies as much of `iov` as there is room for and publishes it; returns the bytes.
  std::size_t write(const iovec* iov, int count);
  std::size_t room() const;
  // Says the writer blocks for room; true when there is room after all (the reader made it
  // meanwhile), and the writer need not wait.
  bool wait_for_room();
  // After write(): whether the reader said it blocks (it is told only once per sleep).
  bool reader_needs_waking();
  // A descriptor went over the socket for the bytes written after this call.
  void count_passed_descriptor();
  bool reader_attached() const;

  // Reader. The bytes readable now, or -1 when the writer broke the ring (more than it holds).
  std::int64_t readable() const;
  // Copies up to the readable bytes into `iov` and frees their room; returns the bytes.
  std::size_t read(const iovec* iov, int count);
  // After read(): whether the writer said it blocks for room (it is told only once).
  bool writer_needs_waking();
  // Descriptors the writer passed for the bytes readable now.
  std::uint64_t passed_descriptors() const;
  // Says the reader is about to block; true when it may (nothing came meanwhile).
  bool prepare_to_sleep();
  void awake();
  // The reader reads the ring from now on (the writer may pass descriptors).
  void attach();

 private:
  struct Area;
  ByteRing(Area* area, int fd) : area_(area), fd_(fd) {}

  Area* area_;
  int fd_;
};

}  // namespace ernic::emu
