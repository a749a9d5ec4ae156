#include "mesh/byte_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace ernic::emu {
namespace {

// A file that shrank under a mapping would kill the instance reading it (SIGBUS): the reader
// maps only a ring whose size is sealed.
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// Walks up to `left` bytes of `iov` along the ring from stream position `at`, in pieces that
// do not cross the ring's end: move(offset in the ring, bytes of the iovec, length). Returns
// the position after them.
template <typename Move>
std::uint64_t walk(std::uint64_t at, const iovec* iov, int count, std::size_t left, Move move) {
  for (int i = 0; i < count && left > 0; ++i) {
    auto* bytes = static_cast<std::byte*>(iov[i].iov_base);
    std::size_t n = std::min(iov[i].iov_len, left);
    left -= n;
    while (n > 0) {
      const std::size_t offset = at % ByteRing::kCapacity;
      const std::size_t piece = std::min(n, ByteRing::kCapacity - offset);
      move(offset, bytes, piece);
      bytes += piece;
      at += piece;
      n -= piece;
    }
  }
  return at;
}

}  // namespace

struct ByteRing::Area {
  // Each on its own cache line: the writer's and the reader's stores do not evict each other's.
  struct alignas(64) Position {
    std::atomic<std::uint64_t> value;
  };
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

  Position tail;              // bytes ever written (the writer's)
  Position head;              // bytes ever read (the reader's)
  Position passed;            // descriptors passed over the socket (the writer's)
  Position reader_sleeping;   // the reader is about to block in its event loop
  Position writer_waiting;    // the writer found no room and blocks
  Position attached;          // the reader reads the ring
  std::byte data[kCapacity];  // byte n of the stream at data[n % kCapacity]
};

std::unique_ptr<ByteRing> ByteRing::create() {
  const int fd = memfd_create("ernic-mesh-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    return nullptr;
  }
  void* p = MAP_FAILED;
  if (ftruncate(fd, sizeof(Area)) == 0 && fcntl(fd, F_ADD_SEALS, kSeals) == 0) {
    p = mmap(nullptr, sizeof(Area), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (p == MAP_FAILED) {
    const int error = errno;
    close(fd);
    errno = error;
    return nullptr;
  }
  return std::unique_ptr<ByteRing>(new ByteRing(new (p) Area(), fd));
}

std::unique_ptr<ByteRing> ByteRing::map(int fd, std::string& error) {
  struct stat file {};
  if (fstat(fd, &file) != 0 || static_cast<std::size_t>(file.st_size) != sizeof(Area)) {
    error = "its ring's file is not a ring (" + std::to_string(file.st_size) + " bytes)";
    return nullptr;
  }
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals) {
    error = "its ring's file is not sealed against resizing";
    return nullptr;
  }
  void* p = mmap(nullptr, sizeof(Area), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    error = std::string("cannot map its ring: ") + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<ByteRing>(new ByteRing(static_cast<Area*>(p), -1));
}

ByteRing::~ByteRing() {
  munmap(area_, sizeof(Area));
  if (fd_ >= 0) {
    close(fd_);
  }
}

std::size_t ByteRing::room() const {
  const std::uint64_t used = area_->tail.value.load(std::memory_order_relaxed) -
                             area_->head.value.load(std::memory_order_acquire);
  return used > kCapacity ? 0 : kCapacity - used;  // a reader that broke the ring gets nothing
}

std::size_t ByteRing::write(const iovec* iov, int count) {
  const std::uint64_t start = area_->tail.value.load(std::memory_order_relaxed);
  const std::uint64_t tail =
      walk(start, iov, count, room(), [this](std::size_t offset, std::byte* from, std::size_t n) {
        std::memcpy(area_->data + offset, from, n);
      });
  area_->tail.value.store(tail, std::memory_order_release);
  return static_cast<std::size_t>(tail - start);
}

bool ByteRing::wait_for_room() {
  area_->writer_waiting.value.store(1, std::memory_order_relaxed);
  // Against read()'s store of head and writer_needs_waking(): one of the two sees the other.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return room() > 0;
}

bool ByteRing::reader_needs_waking() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // against prepare_to_sleep()
  return area_->reader_sleeping.value.load(std::memory_order_relaxed) != 0 &&
         area_->reader_sleeping.value.exchange(0) != 0;
}

void ByteRing::count_passed_descriptor() {
  // Published with the next write()'s tail, which is stored with release.
  area_->passed.value.store(area_->passed.value.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
}

bool ByteRing::reader_attached() const {
  return area_->attached.value.load(std::memory_order_acquire) != 0;
}

std::int64_t ByteRing::readable() const {
  const std::uint64_t available = area_->tail.value.load(std::memory_order_acquire) -
                                  area_->head.value.load(std::memory_order_relaxed);
  return available > kCapacity ? -1 : static_cast<std::int64_t>(available);
}

std::size_t ByteRing::read(const iovec* iov, int count) {
  const std::int64_t available = readable();
  const std::uint64_t start = area_->head.value.load(std::memory_order_relaxed);
  const std::uint64_t head =
      walk(start, iov, count, available < 0 ? 0 : static_cast<std::size_t>(available),
           [this](std::size_t offset, std::byte* to, std::size_t n) {
             std::memcpy(to, area_->data + offset, n);
           });
  area_->head.value.store(head, std::memory_order_release);
  return static_cast<std::size_t>(head - start);
}

bool ByteRing::writer_needs_waking() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // against wait_for_room()
  return area_->writer_waiting.value.load(std::memory_order_relaxed) != 0 &&
         area_->writer_waiting.value.exchange(0) != 0;
}

std::uint64_t ByteRing::passed_descriptors() const {
  return area_->passed.value.load(std::memory_order_acquire);
}

bool ByteRing::prepare_to_sleep() {
  area_->reader_sleeping.value.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // against reader_needs_waking()
  return readable() == 0;
}

void ByteRing::awake() {
  if (area_->reader_sleeping.value.load(std::memory_order_relaxed) != 0) {
    area_->reader_sleeping.value.store(0, std::memory_order_relaxed);
  }
}

void ByteRing::attach() {
  area_->attached.value.store(1, std::memory_order_release);
}

}  // namespace ernic::emu
