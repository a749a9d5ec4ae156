#include "frontend/guest_region_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

namespace ernic::emu {
namespace {

std::runtime_error failure(const std::string& path, const char* what) {
  return std::runtime_error(
      fmt::format("guest region {}: {}: {}", path, what, std::strerror(errno)));
}

std::uint64_t new_epoch() {
  std::uint64_t epoch = 0;
  while (epoch == 0) {
    if (getrandom(&epoch, sizeof epoch, 0) != sizeof epoch) {
      throw std::runtime_error("cannot draw a random epoch for the guest region");
    }
  }
  return epoch;
}

}  // namespace

GuestRegionFile::GuestRegionFile(const std::string& path, std::uint64_t size) : path_(path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw failure(path, "cannot open");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    close(fd);
    throw failure(path, "cannot stat");
  }
  size_ = st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) : size;
  if (size_ < region::kMinimumSize || size_ % region::kPage != 0) {
    close(fd);
    throw std::runtime_error(
        fmt::format("guest region {}: {} bytes; it must be a multiple of {} and at least {} MiB",
                    path, size_, region::kPage, region::kMinimumSize >> 20));
  }
  if (st.st_size == 0 && ftruncate(fd, static_cast<off_t>(size_)) != 0) {
    close(fd);
    throw failure(path, "cannot size");
  }
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    throw failure(path, "cannot map");
  }
  base_ = static_cast<std::byte*>(p);
  // A program still attached to an earlier instance sees the epoch go to 0 first, then change.
  region::Header& h = header();
  h.epoch.store(0, std::memory_order_seq_cst);
  std::memset(base_ + region::kSlotsOffset, 0, region::kHeapOffset - region::kSlotsOffset);
  h.magic = region::kMagic;
  h.version = region::kVersion;
  h.slot_count = region::kSlots;
  h.size = size_;
  h.slots_offset = region::kSlotsOffset;
  h.slot_size = sizeof(region::Slot);
  h.heap_offset = region::kHeapOffset;
  h.heap_size = size_ - region::kHeapOffset;
  h.heartbeat.store(0, std::memory_order_relaxed);
  h.epoch.store(new_epoch(), std::memory_order_seq_cst);
  free_[region::kHeapOffset] = h.heap_size;
}

GuestRegionFile::~GuestRegionFile() {
  header().epoch.store(0, std::memory_order_seq_cst);
  munmap(base_, size_);
}

std::optional<std::uint64_t> GuestRegionFile::allocate(std::uint64_t size) {
  size = (size + region::kPage - 1) & ~(std::uint64_t{region::kPage} - 1);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) {
      continue;
    }
    const std::uint64_t offset = it->first;
    const std::uint64_t left = it->second - size;
    free_.erase(it);
    if (left > 0) {
      free_[offset + size] = left;
    }
    allocated_[offset] = size;
    in_use_ += size;
    return offset;
  }
  return std::nullopt;
}

void GuestRegionFile::free(std::uint64_t offset) {
  auto it = allocated_.find(offset);
  if (it == allocated_.end()) {
    return;
  }
  std::uint64_t begin = offset;
  std::uint64_t size = it->second;
  in_use_ -= size;
  allocated_.erase(it);
  auto next = free_.lower_bound(begin);
  if (next != free_.end() && next->first == begin + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == begin) {
      begin = previous->first;
      size += previous->second;
      free_.erase(previous);
    }
  }
  free_[begin] = size;
}

}  // namespace ernic::emu
