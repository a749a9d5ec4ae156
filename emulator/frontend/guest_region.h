#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "frontend/shm_protocol.h"

// The guest region: how a program in a QEMU guest uses an instance on the host through one
// shared-memory file that QEMU shows the guest as an ivshmem-plain PCI device's BAR 2 and the
// instance maps on the host. A guest can pass neither sockets nor descriptors nor eventfds, so
// everything the UNIX-socket front end carries out of band lives in the region:
//
//   header (one page)        layout, the instance's epoch and heartbeat
//   kSlots client slots      each: owner, lease heartbeat, control mailbox, the same rings
//                            (shm::Area) the socket front end hands out in a memfd
//   heap                     registered memory: a program's pages are moved here at ibv_reg_mr
//
// Nothing rings a doorbell (ivshmem-plain has no interrupts): the instance polls the claimed
// slots, the program polls its completion ring. Control requests are the socket protocol's
// messages (shm::Op and its bodies) written into the slot's mailbox.
namespace ernic::emu::region {

inline constexpr std::uint64_t kMagic = 0x3152474349524e45;  // "ERNICGR1", little-endian
inline constexpr std::uint32_t kVersion = 2;                 // 2: shm::Area carries ClientPresence
inline constexpr std::uint32_t kSlots = 8;
inline constexpr std::size_t kPage = 4096;
// What an instance creates when told no size: room for perftest's and ibv_rc_pingpong's buffers
// up to 8 MiB messages (`-a`) several times over.
inline constexpr std::uint64_t kDefaultSize = std::uint64_t{128} << 20;
// The smallest region that holds the header, the slots and a useful heap.
inline constexpr std::uint64_t kMinimumSize = std::uint64_t{16} << 20;

// A program's process claims a slot (owner: 0 -> a random token) and must advance
// `heartbeat` at least every kLeaseBeat; a slot whose heartbeat stood still for kLeaseExpiry is
// taken back by the instance with all it held, as a socket's end does for a killed program. The
// instance advances the header's heartbeat at least every kInstanceBeat; a program that sees it
// stand still for kInstanceExpiry (or the epoch change: another instance took the file) treats
// the instance as gone.
inline constexpr auto kLeaseBeatMs = 50;
inline constexpr auto kLeaseExpiryMs = 3000;
inline constexpr auto kInstanceBeatMs = 10;
inline constexpr auto kInstanceExpiryMs = 2000;

struct alignas(64) Mailbox {
  // The program writes the request, then sets request_seq to answer_seq + 1; the instance
  // writes the answer, then sets answer_seq to request_seq.
  std::atomic<std::uint32_t> request_seq;
  std::atomic<std::uint32_t> answer_seq;
  std::uint32_t request_length;
  std::uint32_t answer_length;
  std::byte request[shm::kMaxControlMessage];
  std::byte answer[shm::kMaxControlMessage];
};

struct alignas(kPage) Slot {
  std::atomic<std::uint64_t> owner;      // 0: free
  std::atomic<std::uint64_t> heartbeat;  // the owner's lease
  Mailbox mailbox;
  shm::Area area;
};

struct alignas(kPage) Header {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t slot_count;
  std::uint64_t size;
  std::uint64_t slots_offset;
  std::uint64_t slot_size;
  std::uint64_t heap_offset;
  std::uint64_t heap_size;
  // Nonzero once an instance set the region up; a new instance picks a new one.
  std::atomic<std::uint64_t> epoch;
  std::atomic<std::uint64_t> heartbeat;
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(sizeof(Header) == kPage);

inline constexpr std::uint64_t kSlotsOffset = sizeof(Header);
inline constexpr std::uint64_t kHeapOffset = kSlotsOffset + kSlots * sizeof(Slot);
static_assert(kHeapOffset % kPage == 0);
static_assert(kHeapOffset < kMinimumSize);

inline Slot& slot_at(std::byte* base, std::uint32_t index) {
  return *reinterpret_cast<Slot*>(base + kSlotsOffset + std::uint64_t{index} * sizeof(Slot));
}

// Whether `h` describes a region of this layout, `size` bytes long, that an instance set up.
inline bool layout_matches(const Header& h, std::uint64_t size) {
  return h.magic == kMagic && h.version == kVersion && h.slot_count == kSlots && h.size == size &&
         h.slots_offset == kSlotsOffset && h.slot_size == sizeof(Slot) &&
         h.heap_offset == kHeapOffset && h.heap_size == size - kHeapOffset;
}

}  // namespace ernic::emu::region
