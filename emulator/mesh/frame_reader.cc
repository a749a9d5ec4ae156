#include "mesh/frame_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "runtime/streaming_copy.h"

namespace ernic::emu {
namespace {
constexpr std::size_t kScratchSize = 64u << 10;
// Messages from this size on are placed by reference with non-temporal stores: source and
// destination together no longer fit the cache, and reading each destination line in before
// overwriting it cost a third more memory traffic (docs/emulator-performance-log.md,
// "Local sockets and payloads by reference").
constexpr std::uint32_t kStreamingMessageBytes = 4u << 20;
}  // namespace

FrameReader::FrameReader()
    : scratch_(new std::byte[kScratchSize]), staging_(new std::byte[kStagingBytes]) {}

std::size_t FrameReader::take_staged(const iovec* iov, int count) {
  std::size_t taken = 0;
  for (int i = 0; i < count && has_staged(); ++i) {
    const std::size_t n = std::min(iov[i].iov_len, staged_end_ - staged_begin_);
    std::memcpy(iov[i].iov_base, staging_.get() + staged_begin_, n);
    staged_begin_ += n;
    taken += n;
    if (n < iov[i].iov_len) {
      break;
    }
  }
  return taken;
}

bool FrameReader::header_complete(Sink& sink, std::string& reason, bool& stop) {
  const std::string error =
      decode_header(std::span<const std::byte, kFrameHeaderSize>(header_bytes_), header_);
  if (!error.empty()) {
    reason = "malformed frame: " + error;
    return false;
  }
  header_have_ = 0;
  payload_have_ = 0;
  if (!is_control(header_.op) && !sink.accepts_data()) {
    reason = "data frame before the handshake completed";
    return false;
  }
  const bool by_reference = (header_.flags & kFlagByReference) != 0;
  by_reference_ = by_reference;
  header_.flags &= static_cast<std::uint8_t>(~kFlagByReference);  // the engine never sees it
  if (is_control(header_.op)) {
    control_body_.resize(header_.payload_length);
    destination_ = control_body_.data();
  } else {
    destination_ = sink.place(header_).destination;
  }
  state_ = by_reference ? State::kReference : State::kPayload;
  reference_have_ = 0;
  if (by_reference) {
    return true;
  }
  if (header_.payload_length == 0) {
    stop = !finish_frame(sink);
  }
  return true;
}

bool FrameReader::finish_frame(Sink& sink) {
  state_ = State::kHeader;
  if (is_control(header_.op)) {
    return sink.control(header_, control_body_);
  }
  sink.delivered(header_);
  return true;
}

bool FrameReader::start_copy(Sink& sink, std::string& reason) {
  ByteReader r(reference_);
  const std::uint64_t region = r.u64();
  const std::uint64_t offset = r.u64();
  const std::byte* source = sink.referenced(region, offset, header_.payload_length);
  if (source == nullptr) {
    reason = fmt::format(
        "malformed frame: payload reference to [{}, +{}) of region {}, which the "
        "peer did not share",
        offset, header_.payload_length, region);
    return false;
  }
  copy_source_ = source;
  copy_done_ = 0;
  state_ = State::kCopy;
  return true;
}

bool FrameReader::writes_into(const std::byte* base, std::size_t length) const {
  return state_ != State::kHeader && !is_control(header_.op) && destination_ != nullptr &&
         destination_ < base + length && destination_ + header_.payload_length > base;
}

void FrameReader::release_memory(const std::byte* base, std::size_t length) {
  if (writes_into(base, length)) {
    destination_ = nullptr;
  }
}

void FrameReader::copy_finished() {
  if (state_ == State::kCopyElsewhere) {
    state_ = State::kCopy;
    copy_done_ = header_.payload_length;
  }
}

void FrameReader::prepare_read(iovec (&iov)[2], int& count, std::size_t& payload_room,
                               std::size_t budget_left) {
  payload_room = 0;
  if (state_ == State::kHeader) {
    iov[0] = {header_bytes_.data() + header_have_, kFrameHeaderSize - header_have_};
    count = 1;
  } else if (state_ == State::kReference) {
    iov[0] = {reference_.data() + reference_have_, kPayloadReferenceSize - reference_have_};
    count = 1;
  } else {
    const std::uint32_t remaining = header_.payload_length - payload_have_;
    // Never more than the budget left: a large segment is read over several turns.
    payload_room = std::min<std::size_t>(remaining, budget_left);
    if (destination_ != nullptr) {
      iov[0] = {destination_ + payload_have_, payload_room};
    } else {
      payload_room = std::min(payload_room, kScratchSize);
      iov[0] = {scratch_.get(), payload_room};
    }
    // The next header rides along, so a stream of frames costs one readv each.
    iov[1] = {header_bytes_.data(), kFrameHeaderSize};
    count = payload_room == remaining ? 2 : 1;
  }
}

std::optional<FrameReader::Result> FrameReader::consume(std::size_t got, std::size_t payload_room,
                                                        Sink& sink, std::string& reason) {
  bool stop = false;
  if (state_ == State::kHeader) {
    header_have_ += got;
    if (header_have_ == kFrameHeaderSize && !header_complete(sink, reason, stop)) {
      return Result::kMalformed;
    }
  } else if (state_ == State::kReference) {
    reference_have_ += got;
    if (reference_have_ == kPayloadReferenceSize && !start_copy(sink, reason)) {
      return Result::kMalformed;
    }
  } else {
    const std::size_t into_payload = std::min(got, payload_room);
    payload_have_ += static_cast<std::uint32_t>(into_payload);
    const std::size_t into_header = got - into_payload;
    if (payload_have_ == header_.payload_length) {
      stop = !finish_frame(sink);
      header_have_ = into_header;
      if (!stop && header_have_ == kFrameHeaderSize && !header_complete(sink, reason, stop)) {
        return Result::kMalformed;
      }
    }
  }
  if (stop) {
    return Result::kStopped;
  }
  return std::nullopt;
}

FrameReader::Result FrameReader::pump(const ReadFn& read, Sink& sink, std::string& reason,
                                      std::size_t budget) {
  std::size_t used = 0;
  while (used < budget) {
    if (state_ == State::kCopyElsewhere) {
      return Result::kCopyElsewhere;
    }
    if (state_ == State::kCopy) {
      const bool streaming = header_.total_length >= kStreamingMessageBytes;
      if (copy_done_ == 0 && destination_ != nullptr &&
          sink.copy_elsewhere(destination_, copy_source_, header_.payload_length, streaming)) {
        state_ = State::kCopyElsewhere;
        return Result::kCopyElsewhere;
      }
      // The copy is this turn's work as much as a read, and bounded the same way in time.
      const std::size_t n = std::min<std::size_t>(header_.payload_length - copy_done_,
                                                  (budget - used) * kCopyBytesPerBudgetByte);
      if (destination_ != nullptr && streaming) {
        streaming_copy(destination_ + copy_done_, copy_source_ + copy_done_, n);
      } else if (destination_ != nullptr) {
        std::memcpy(destination_ + copy_done_, copy_source_ + copy_done_, n);
      }
      copy_done_ += static_cast<std::uint32_t>(n);
      used += (n + kCopyBytesPerBudgetByte - 1) / kCopyBytesPerBudgetByte;
      if (copy_done_ < header_.payload_length) {
        break;
      }
      if (!finish_frame(sink)) {
        return Result::kStopped;
      }
      continue;
    }
    iovec iov[2];
    int count = 0;
    std::size_t payload_room = 0;
    prepare_read(iov, count, payload_room, budget - used);
    std::size_t got = 0;
    if (has_staged()) {
      got = take_staged(iov, count);  // counted against the budget when it was read
    } else {
      const bool stage = state_ == State::kHeader;
      if (stage) {
        iov[1] = {staging_.get(), kStagingBytes};
        count = 2;
      }
      const ssize_t n = read(iov, count);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          return Result::kWouldBlock;
        }
        if (errno == EINTR) {
          continue;
        }
        reason = fmt::format("read failed: {}", std::strerror(errno));
        return Result::kClosed;
      }
      if (n == 0) {
        reason = state_ == State::kHeader && header_have_ == 0
                     ? "peer closed the connection"
                     : "peer closed in the middle of a frame";
        return Result::kClosed;
      }
      used += static_cast<std::size_t>(n);
      bytes_read_ += static_cast<std::uint64_t>(n);
      got = static_cast<std::size_t>(n);
      if (stage && got > iov[0].iov_len) {
        staged_begin_ = 0;
        staged_end_ = got - iov[0].iov_len;
        got = iov[0].iov_len;
      }
    }
    if (const auto result = consume(got, payload_room, sink, reason)) {
      return *result;
    }
  }
  return Result::kBudgetUsed;
}

}  // namespace ernic::emu
