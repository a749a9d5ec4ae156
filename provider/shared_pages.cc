#include "shared_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "engine/wire.h"

namespace ernic::verbs {
namespace {

std::uintptr_t page_size() {
  static const auto size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// mincore() fails with ENOMEM on any page the process has not mapped: what ibv_reg_mr answers
// with EFAULT on a NIC, instead of the copy below faulting.
bool mapped(std::uintptr_t begin, std::uintptr_t end) {
  std::vector<unsigned char> residency((end - begin) / page_size());
  return mincore(reinterpret_cast<void*>(begin), end - begin, residency.data()) == 0;
}

// Gives pages that lie in a guest region back to the program as private memory, contents kept.
void move_to_private(std::uintptr_t begin, std::uintptr_t end) {
  const std::size_t size = end - begin;
  void* staging = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (staging == MAP_FAILED) {
    return;  // the pages stay in the region: the program keeps its data, and room is lost
  }
  std::memcpy(staging, reinterpret_cast<const void*>(begin), size);
  // mremap moves the copy over the range in one step, as MAP_FIXED did the other way.
  if (mremap(staging, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(begin)) ==
      MAP_FAILED) {
    munmap(staging, size);
  }
}

}  // namespace

SharedPages::~SharedPages() {
  if (channel_.region_base() == nullptr) {
    return;
  }
  for (const auto& [begin, region] : by_begin_) {
    move_to_private(region.begin, region.end);
  }
}

int SharedPages::move_into_region(std::uintptr_t begin, std::uintptr_t end, Share& share,
                                  std::string& why) {
  emu::ByteWriter w;
  w.u64(end - begin);
  std::vector<std::byte> answer;
  if (const int error = channel_.call(emu::shm::Op::kRegisterMemory, w.bytes(), {}, &answer);
      error != 0) {
    why = channel_.last_error();
    return error;
  }
  emu::ByteReader r(answer);
  const std::uint32_t id = r.u32();
  const std::uint64_t offset = r.u64();
  const std::size_t size = end - begin;
  std::memcpy(channel_.region_base() + offset, reinterpret_cast<const void*>(begin), size);
  // MAP_FIXED replaces the old pages in one step: the program never sees the range unmapped.
  if (mmap(reinterpret_cast<void*>(begin), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
           channel_.region_fd(), static_cast<off_t>(offset)) == MAP_FAILED) {
    const int error = errno;
    why = std::string("cannot move the registered pages into the guest region: ") +
          std::strerror(error);
    emu::ByteWriter release;
    release.u32(id);
    channel_.call(emu::shm::Op::kReleaseMemory, release.bytes());
    return error;
  }
  by_begin_[begin] = Region{begin, end, id, 1};
  share = {id, 0};
  return 0;
}

int SharedPages::acquire(const void* address, std::size_t length, Share& share, std::string& why) {
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  if (length == 0 || start + length < start) {
    why = "empty or wrapping memory range";
    return EINVAL;
  }
  const std::uintptr_t begin = start & ~(page_size() - 1);
  const std::uintptr_t end = (start + length + page_size() - 1) & ~(page_size() - 1);
  auto next = by_begin_.upper_bound(begin);
  if (next != by_begin_.begin()) {
    Region& containing = std::prev(next)->second;
    if (containing.begin <= begin && end <= containing.end) {
      ++containing.references;
      share = {containing.id, start - containing.begin};
      return 0;
    }
    if (containing.end > begin) {
      next = std::prev(next);
    }
  }
  if (next != by_begin_.end() && next->second.begin < end) {
    why =
        "the range partly overlaps memory registered before; register ranges that are "
        "disjoint or contained in an earlier one";
    return EINVAL;
  }
  if (!mapped(begin, end)) {
    why = "the range is not mapped memory of this process";
    return EFAULT;
  }
  if (channel_.region_base() != nullptr) {
    if (const int error = move_into_region(begin, end, share, why); error != 0) {
      return error;
    }
    share.offset = start - begin;
    return 0;
  }
  int memfd = -1;
  if (int error = move_onto_memfd(begin, end, memfd, why); error != 0) {
    return error;
  }
  emu::ByteWriter w;
  w.u64(end - begin);
  const int fds[] = {memfd};
  std::vector<std::byte> answer;
  const int error = channel_.call(emu::shm::Op::kRegisterMemory, w.bytes(), fds, &answer);
  close(memfd);
  if (error != 0) {
    why = channel_.last_error();
    return error;
  }
  emu::ByteReader r(answer);
  const Region region{begin, end, r.u32(), 1};
  by_begin_[begin] = region;
  share = {region.id, start - begin};
  return 0;
}

int SharedPages::move_onto_memfd(std::uintptr_t begin, std::uintptr_t end, int& memfd,
                                 std::string& why) {
  const std::size_t size = end - begin;
  memfd = memfd_create("ernic-registered", MFD_CLOEXEC);
  if (memfd < 0 || ftruncate(memfd, static_cast<off_t>(size)) != 0) {
    const int error = errno;
    why = std::string("cannot create shared memory for the registration: ") + std::strerror(error);
    if (memfd >= 0) {
      close(memfd);
    }
    return error == ENOSPC ? ENOMEM : error;
  }
  void* staging = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (staging == MAP_FAILED) {
    const int error = errno;
    close(memfd);
    why = std::string("cannot map shared memory: ") + std::strerror(error);
    return error;
  }
  std::memcpy(staging, reinterpret_cast<const void*>(begin), size);
  // MAP_FIXED replaces the old pages in one step: the program never sees the range unmapped.
  void* moved = mmap(reinterpret_cast<void*>(begin), size, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_FIXED, memfd, 0);
  const int error = moved == MAP_FAILED ? errno : 0;
  munmap(staging, size);
  if (error != 0) {
    close(memfd);
    why =
        std::string("cannot move the registered pages onto shared memory: ") + std::strerror(error);
    return error;
  }
  return 0;
}

void SharedPages::release(std::uint32_t region) {
  for (auto it = by_begin_.begin(); it != by_begin_.end(); ++it) {
    if (it->second.id != region) {
      continue;
    }
    if (--it->second.references == 0) {
      if (channel_.region_base() != nullptr) {
        move_to_private(it->second.begin, it->second.end);
      }
      emu::ByteWriter w;
      w.u32(region);
      channel_.call(emu::shm::Op::kReleaseMemory, w.bytes());
      by_begin_.erase(it);
    }
    return;
  }
}

}  // namespace ernic::verbs
