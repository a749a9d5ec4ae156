// The front end's guest region clients: programs in a QEMU guest, each in a slot of the region
// (frontend/guest_region.h) rather than on the socket. The region cannot ring the instance, so
// a timer polls it: the slots claimed and given up, the leases, the mailboxes. Their rings are
// drained with every other client's.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/wire.h"
#include "frontend/shm_server.h"

namespace ernic::emu {
namespace {

// How often the loop looks at the region while a guest program holds a slot, and while none
// does (the instance's heartbeat must still advance well within region::kInstanceExpiryMs).
constexpr auto kBusyPoll = std::chrono::microseconds(100);
constexpr auto kIdlePoll = std::chrono::milliseconds(region::kInstanceBeatMs);
constexpr auto kLeaseExpiry = std::chrono::milliseconds(region::kLeaseExpiryMs);

// Slots are keyed below every descriptor in clients_.
int slot_key(std::uint32_t index) {
  return -1 - static_cast<int>(index);
}

}  // namespace

void ShmFrontEnd::serve_guest_region(GuestRegionFile& region) {
  guest_region_ = &region;
  poll_guest_region();
}

bool ShmFrontEnd::poll_guest_region() {
  guest_region_->beat();
  const auto now = EventLoop::Clock::now();
  bool served = false;
  guest_slots_claimed_ = false;
  for (std::uint32_t index = 0; index < region::kSlots; ++index) {
    region::Slot& slot = guest_region_->slot(index);
    const std::uint64_t owner = slot.owner.load(std::memory_order_acquire);
    auto it = clients_.find(slot_key(index));
    Client* c = it == clients_.end() ? nullptr : it->second.get();
    if (c != nullptr && c->owner != owner) {
      drop(*c);  // its program let the slot go (or the slot changed hands meanwhile)
      c = nullptr;
    }
    if (owner == 0) {
      continue;
    }
    guest_slots_claimed_ = true;
    if (c == nullptr) {
      c = &attach_slot(index, owner);
    }
    const std::uint64_t beat = slot.heartbeat.load(std::memory_order_acquire);
    if (beat != c->beat_seen) {
      c->beat_seen = beat;
      c->beat_at = now;
    } else if (now - c->beat_at > kLeaseExpiry) {
      log_.info(
          "front end: guest slot {}: its program stopped renewing its lease; releasing "
          "what it held",
          index);
      drop(*c);
      continue;
    }
    served |= serve_mailbox(*c);
  }
  return served;
}

void ShmFrontEnd::schedule_guest_poll() {
  loop_.cancel_timer(guest_wakeup_);
  const auto interval = guest_slots_claimed_ ? EventLoop::Clock::duration(kBusyPoll)
                                             : EventLoop::Clock::duration(kIdlePoll);
  guest_wakeup_ = loop_.wake_at(EventLoop::Clock::now() + interval);
}

std::size_t ShmFrontEnd::guest_clients() const {
  return static_cast<std::size_t>(std::count_if(clients_.begin(), clients_.end(),
                                                [](const auto& c) { return c.second->slot >= 0; }));
}

ShmFrontEnd::Client& ShmFrontEnd::attach_slot(std::uint32_t index, std::uint64_t owner) {
  auto client = std::make_unique<Client>();
  client->fd = slot_key(index);
  client->slot = static_cast<int>(index);
  client->owner = owner;
  client->area = &guest_region_->slot(index).area;
  client->beat_at = EventLoop::Clock::now();
  client->beat_seen = guest_region_->slot(index).heartbeat.load(std::memory_order_acquire);
  Client& c = *client;
  clients_[c.fd] = std::move(client);
  log_.debug("front end: guest slot {} attached", index);
  return c;
}

bool ShmFrontEnd::serve_mailbox(Client& c) {
  region::Mailbox& box = guest_region_->slot(static_cast<std::uint32_t>(c.slot)).mailbox;
  const std::uint32_t request = box.request_seq.load(std::memory_order_acquire);
  if (request == box.answer_seq.load(std::memory_order_relaxed)) {
    return false;
  }
  ++commands_;
  const std::uint32_t length = std::min<std::uint32_t>(box.request_length, sizeof box.request);
  std::vector<std::byte> message(box.request, box.request + length);
  std::vector<int> no_fds;
  std::vector<int> send_fds;
  std::basic_string<std::byte> answer = serve(c, message, no_fds, send_fds);
  if (answer.size() > sizeof box.answer) {
    ByteWriter refusal;
    refusal.u32(EIO);
    refusal.str("the answer does not fit the guest mailbox");
    answer = refusal.bytes();
  }
  std::memcpy(box.answer, answer.data(), answer.size());
  box.answer_length = static_cast<std::uint32_t>(answer.size());
  box.answer_seq.store(request, std::memory_order_release);
  return true;
}

}  // namespace ernic::emu
