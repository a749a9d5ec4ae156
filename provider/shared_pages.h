#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "instance_channel.h"

namespace ernic::verbs {

// How a program's registered memory reaches its instance without a copy per transfer. A NIC
// reads and writes the pages a registration pins; an instance in another process can only
// reach memory it maps. So registering moves the pages under a buffer onto a memfd, keeping
// their contents and their addresses (the program's pointers stay valid), and hands that memfd
// to the instance, which then reads and writes the program's buffer directly. Pages stay
// moved after the last registration ends (the program may still use them); the instance
// unmaps them then.
//
// Through a guest region the memory is the region's: the instance gives out room in its heap and
// the pages move there instead. They move back to private memory when the last registration ends
// (and when the device is closed), because the instance gives that room to other programs.
class SharedPages {
 public:
  explicit SharedPages(InstanceChannel& channel) : channel_(channel) {}
  ~SharedPages();
  SharedPages(const SharedPages&) = delete;
  SharedPages& operator=(const SharedPages&) = delete;

  struct Share {
    std::uint32_t region = 0;  // the instance's name for the memory
    std::uint64_t offset = 0;  // of the registered address within it
  };
  // Makes [address, address + length) memory the instance maps and takes a reference on it.
  // Answers an errno: EFAULT for pages the program does not have, EINVAL for a range that
  // partly overlaps one still registered, what the instance answers otherwise. `why` says it.
  int acquire(const void* address, std::size_t length, Share& share, std::string& why);
  // Drops the reference acquire() took on `region`; the last one releases it at the instance.
  void release(std::uint32_t region);

 private:
  struct Region {
    std::uintptr_t begin = 0;
    std::uintptr_t end = 0;
    std::uint32_t id = 0;
    unsigned references = 0;
  };
  int move_onto_memfd(std::uintptr_t begin, std::uintptr_t end, int& memfd, std::string& why);
  int move_into_region(std::uintptr_t begin, std::uintptr_t end, Share& share, std::string& why);

  InstanceChannel& channel_;
  std::map<std::uintptr_t, Region> by_begin_;
};

}  // namespace ernic::verbs
