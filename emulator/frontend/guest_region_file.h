#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "frontend/guest_region.h"

namespace ernic::emu {

// The instance's side of a guest region file (frontend/guest_region.h): the mapping, the header
// it owns, and the heap from which registered memory is given out.
class GuestRegionFile {
 public:
  // Maps `path`, creating it `size` bytes long when it does not exist (mode 0600; whoever gives it
  // to QEMU makes it QEMU's). An existing file keeps its size, which must be at least
  // region::kMinimumSize. Sets the region up for a new epoch: every slot free, the heap empty.
  // Throws std::runtime_error naming the file and the cause.
  GuestRegionFile(const std::string& path, std::uint64_t size);
  ~GuestRegionFile();
  GuestRegionFile(const GuestRegionFile&) = delete;
  GuestRegionFile& operator=(const GuestRegionFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  std::byte* base() const { return base_; }
  region::Header& header() const { return *reinterpret_cast<region::Header*>(base_); }
  region::Slot& slot(std::uint32_t index) const { return region::slot_at(base_, index); }
  void beat() const { header().heartbeat.fetch_add(1, std::memory_order_release); }

  // Page-aligned heap memory of at least `size` bytes: its offset in the region, or nullopt when
  // the heap has no such room left.
  std::optional<std::uint64_t> allocate(std::uint64_t size);
  void free(std::uint64_t offset);
  std::uint64_t heap_in_use() const { return in_use_; }

 private:
  std::string path_;
  std::uint64_t size_ = 0;
  std::byte* base_ = nullptr;
  std::map<std::uint64_t, std::uint64_t> free_;       // offset -> size, coalesced
  std::map<std::uint64_t, std::uint64_t> allocated_;  // offset -> size
  std::uint64_t in_use_ = 0;
};

}  // namespace ernic::emu
