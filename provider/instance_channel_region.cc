// InstanceChannel through a guest region (frontend/guest_region.h): what a program in a QEMU
// guest has instead of a socket. Nothing can ring either side: the instance polls the slot, the
// program polls its mailbox and its completion ring, and each watches the other's heartbeat.
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/wire.h"
#include "instance_channel.h"

namespace ernic::verbs {
namespace {

using Clock = std::chrono::steady_clock;
namespace region = emu::region;

std::uint64_t random_token() {
  std::uint64_t token = 0;
  while (token == 0) {
    if (getrandom(&token, sizeof token, 0) != sizeof token) {
      return 0;
    }
  }
  return token;
}

}  // namespace

int InstanceChannel::open_region(const std::string& region_path, Identity& identity,
                                 std::string& why) {
  path_ = region_path;
  region_fd_ = ::open(region_path.c_str(), O_RDWR | O_CLOEXEC);
  struct stat st {};
  if (region_fd_ < 0 || fstat(region_fd_, &st) != 0) {
    const int error = errno;
    why = "cannot open the ERNIC guest region " + region_path + ": " + std::strerror(error);
    return error == ENOENT ? ENODEV : error;
  }
  region_size_ = static_cast<std::uint64_t>(st.st_size);
  void* p = region_size_ < region::kMinimumSize
                ? MAP_FAILED
                : mmap(nullptr, region_size_, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd_, 0);
  if (p == MAP_FAILED) {
    why = "cannot map the ERNIC guest region " + region_path + " (" + std::to_string(region_size_) +
          " bytes)";
    region_size_ = 0;
    close(region_fd_);
    region_fd_ = -1;
    return ENODEV;
  }
  region_ = static_cast<std::byte*>(p);
  const auto& header = *reinterpret_cast<const region::Header*>(region_);
  epoch_ = header.epoch.load(std::memory_order_acquire);
  if (epoch_ == 0 || !region::layout_matches(header, region_size_)) {
    why = "no ERNIC instance serves the guest region " + region_path +
          " (it was not set up, or by another version)";
    return ENODEV;
  }
  instance_beat_seen_ = header.heartbeat.load(std::memory_order_acquire);
  instance_beat_at_ = Clock::now();
  owner_ = random_token();
  for (std::uint32_t index = 0; index < region::kSlots && slot_ == nullptr && owner_ != 0;
       ++index) {
    region::Slot& slot = region::slot_at(region_, index);
    std::uint64_t free = 0;
    if (slot.owner.compare_exchange_strong(free, owner_, std::memory_order_acq_rel)) {
      slot_ = &slot;
    }
  }
  if (slot_ == nullptr) {
    why = "all " + std::to_string(region::kSlots) + " slots of the ERNIC guest region " +
          region_path + " are in use by other programs";
    return ENOMEM;
  }
  lease_ = std::thread([this] { keep_lease(); });
  area_ = &slot_->area;
  emu::ByteWriter request;
  request.u32(emu::shm::kProtocolVersion);
  std::vector<std::byte> answer;
  if (const int error = call(emu::shm::Op::kOpen, request.bytes(), {}, &answer); error != 0) {
    why = "the ERNIC instance behind " + region_path + " refused the device: " + last_error_;
    return error;
  }
  emu::ByteReader r(answer);
  return read_identity(r, identity, "the ERNIC instance behind " + region_path, why);
}

void InstanceChannel::keep_lease() {
  std::unique_lock lock(lease_mutex_);
  while (!stopping_) {
    slot_->heartbeat.fetch_add(1, std::memory_order_release);
    lease_stop_.wait_for(lock, std::chrono::milliseconds(region::kLeaseBeatMs));
  }
}

int InstanceChannel::call_through_mailbox(std::span<const std::byte> message,
                                          std::vector<std::byte>& data) {
  region::Mailbox& box = slot_->mailbox;
  if (message.size() > sizeof box.request) {
    last_error_ = "control request larger than the guest region's mailbox";
    return EINVAL;
  }
  std::memcpy(box.request, message.data(), message.size());
  box.request_length = static_cast<std::uint32_t>(message.size());
  const std::uint32_t sequence = box.answer_seq.load(std::memory_order_relaxed) + 1;
  box.request_seq.store(sequence, std::memory_order_release);
  // The instance looks at the region at least every 100 us while a slot is claimed: spin a
  // little, then yield, then sleep in short steps, and notice an instance that went away.
  for (unsigned round = 0; box.answer_seq.load(std::memory_order_acquire) != sequence; ++round) {
    if (round < 256) {
      continue;
    }
    if (round < 4096) {
      sched_yield();
      continue;
    }
    if (round % 256 == 0 && !region_instance_alive()) {
      last_error_ = "the ERNIC instance behind " + path_ + " went away";
      return ENODEV;
    }
    const timespec pause{0, 20'000};
    nanosleep(&pause, nullptr);
  }
  const std::uint32_t length = std::min<std::uint32_t>(box.answer_length, sizeof box.answer);
  data.assign(box.answer, box.answer + length);
  return 0;
}

bool InstanceChannel::region_instance_alive() {
  const auto& header = *reinterpret_cast<const region::Header*>(region_);
  if (header.epoch.load(std::memory_order_acquire) != epoch_) {
    return false;  // stopped, or another instance took the region
  }
  const std::uint64_t beat = header.heartbeat.load(std::memory_order_acquire);
  const auto now = Clock::now();
  if (beat != instance_beat_seen_) {
    instance_beat_seen_ = beat;
    instance_beat_at_ = now;
    return true;
  }
  return now - instance_beat_at_ < std::chrono::milliseconds(region::kInstanceExpiryMs);
}

void InstanceChannel::close_region() {
  if (lease_.joinable()) {
    {
      std::lock_guard lock(lease_mutex_);
      stopping_ = true;
    }
    lease_stop_.notify_all();
    lease_.join();
  }
  if (slot_ != nullptr) {
    // The instance releases what the slot held when it sees it free.
    std::uint64_t owner = owner_;
    slot_->owner.compare_exchange_strong(owner, 0, std::memory_order_acq_rel);
  }
  munmap(region_, region_size_);
  region_ = nullptr;
  area_ = nullptr;
  if (region_fd_ >= 0) {
    close(region_fd_);
    region_fd_ = -1;
  }
}

}  // namespace ernic::verbs
