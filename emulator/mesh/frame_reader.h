#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/fabric.h"
#include "engine/wire.h"

namespace ernic::emu {

// A payload by reference is copied from memory several times as fast as the same bytes are read
// from a socket (about 40 GB/s here), so a turn's budget covers four copied bytes per byte, for
// turns of about equal time. With one each, a large copy took a turn of 3 us per 128 KiB, and
// the loop's system calls between turns cost as much CPU as the copy (send and write 8 MiB
// 14-17 GB/s; 19-21 with four: docs/emulator-performance-log.md, "Copy turns and page
// faults").
inline constexpr std::size_t kCopyBytesPerBudgetByte = 4;

// How much a header's read takes beyond the header: a payload sent inline between local
// instances (smaller than kByReferenceBytes) with the header after it.
inline constexpr std::size_t kStagingBytes = (16u << 10) + kFrameHeaderSize;

// Turns a byte stream into frames without staging large payloads: the header is read first,
// the sink says where the payload goes, and the payload is read straight there (together with
// the next header, in the same readv). A header's read also takes up to kStagingBytes of what
// follows it, so that a small frame (a latency test's message, an acknowledgement) costs one
// system call rather than two: in this project's VMs a call costs as much as copying 64 KiB.
// Independent of sockets so that it can be fuzzed.
class FrameReader {
 public:
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual Placement place(const FrameHeader& header) = 0;
    virtual void delivered(const FrameHeader& header) = 0;
    // A complete control frame. Returns false to stop reading (the connection is closing).
    virtual bool control(const FrameHeader& header, std::span<const std::byte> body) = 0;
    // False before the peer is authenticated: a data frame then is a protocol violation.
    virtual bool accepts_data() const { return true; }
    // Where a payload sent by reference (kFlagByReference) lies in memory the peer shared, or
    // null when the reference names no such memory (a protocol violation).
    virtual const std::byte* referenced(std::uint64_t region, std::uint64_t offset,
                                        std::uint32_t length) {
      (void)region, (void)offset, (void)length;
      return nullptr;
    }
    // Offers the copy of a payload by reference to somebody else (the instance's CopyEngine).
    // True if taken: the reader then reads nothing until copy_finished() says it is done.
    virtual bool copy_elsewhere(std::byte* destination, const std::byte* source,
                                std::uint32_t length, bool streaming) {
      (void)destination, (void)source, (void)length, (void)streaming;
      return false;
    }
  };
  // Behaves like readv: bytes read, 0 at end of stream, -1 with errno (EAGAIN: nothing now).
  using ReadFn = std::function<ssize_t(const iovec* iov, int count)>;
  enum class Result { kWouldBlock, kClosed, kMalformed, kStopped, kBudgetUsed, kCopyElsewhere };

  FrameReader();
  // Reads until the source would block, closes, sends a malformed frame, the sink stops, or
  // `budget` bytes were read (a copied byte counts 1 / kCopyBytesPerBudgetByte). On kMalformed
  // and kClosed `reason` says why.
  Result pump(const ReadFn& read, Sink& sink, std::string& reason, std::size_t budget = 16u << 20);
  std::uint64_t bytes_read() const { return bytes_read_; }
  // A payload by reference is being copied over several turns (each within its budget): the
  // next pump() goes on with it whether or not the source has bytes.
  bool copying() const { return state_ == State::kCopy; }
  // The next pump() has work without reading: a copy to go on with, or bytes read ahead of the
  // frame they belong to. Its caller must not wait for the source to become readable first.
  bool has_work_without_input() const {
    return state_ == State::kCopy || (has_staged() && state_ != State::kCopyElsewhere);
  }
  // The sink took the current payload's copy (Sink::copy_elsewhere) and has not finished it.
  bool copying_elsewhere() const { return state_ == State::kCopyElsewhere; }
  // In Sink::delivered(): the frame's payload came by reference.
  bool delivering_reference() const { return by_reference_; }
  // The copy taken elsewhere is done (or abandoned): the next pump() delivers the frame.
  void copy_finished();
  // The payload being read is written into [base, base + length).
  bool writes_into(const std::byte* base, std::size_t length) const;
  // The payload being read goes to scratch space from now on if its destination lies in
  // [base, base + length) (that memory is about to be unmapped).
  void release_memory(const std::byte* base, std::size_t length);

 private:
  bool header_complete(Sink& sink, std::string& reason, bool& stop);
  bool finish_frame(Sink& sink);
  // Where the next read goes: the header, the reference or the payload (with the next header).
  void prepare_read(iovec (&iov)[2], int& count, std::size_t& payload_room,
                    std::size_t budget_left);
  bool has_staged() const { return staged_begin_ < staged_end_; }
  // Fills `iov` from the bytes read ahead, as readv would from the source.
  std::size_t take_staged(const iovec* iov, int count);
  // Takes `got` bytes just put where prepare_read said; a result ends the pump.
  std::optional<Result> consume(std::size_t got, std::size_t payload_room, Sink& sink,
                                std::string& reason);
  // The reference is complete: the copy from where it names starts. False if it is invalid.
  bool start_copy(Sink& sink, std::string& reason);

  enum class State { kHeader, kPayload, kReference, kCopy, kCopyElsewhere };
  State state_ = State::kHeader;
  EncodedHeader header_bytes_{};
  std::size_t header_have_ = 0;
  FrameHeader header_;
  std::byte* destination_ = nullptr;  // null while discarding
  std::uint32_t payload_have_ = 0;
  std::array<std::byte, kPayloadReferenceSize> reference_{};
  std::size_t reference_have_ = 0;
  const std::byte* copy_source_ = nullptr;
  std::uint32_t copy_done_ = 0;
  bool by_reference_ = false;  // the current frame's payload came by reference
  std::vector<std::byte> control_body_;
  std::unique_ptr<std::byte[]> scratch_;  // where refused payloads are read and dropped
  std::unique_ptr<std::byte[]> staging_;  // bytes read with a header, beyond it
  std::size_t staged_begin_ = 0;
  std::size_t staged_end_ = 0;
  std::uint64_t bytes_read_ = 0;
};

}  // namespace ernic::emu
