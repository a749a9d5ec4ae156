#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace ernic::emu {

// Client memory that lives in a file another process on this machine can map (a memfd).
struct SharedMemory {
  std::uint64_t id = 0;  // unique within the instance for its lifetime
  int fd = -1;           // owned by the directory; dup it to keep it
  const std::byte* base = nullptr;
  std::size_t size = 0;
};

// Where the mesh asks whether a payload lies in such memory, so that a peer on the same machine
// can copy it from there itself (mesh_shared_memory.cc). Implemented by the front end, which
// maps its clients' memory.
class SharedMemoryDirectory {
 public:
  virtual ~SharedMemoryDirectory() = default;
  // The region holding all of [p, p + length), if any.
  virtual std::optional<SharedMemory> find(const std::byte* p, std::size_t length) const = 0;
};

}  // namespace ernic::emu
