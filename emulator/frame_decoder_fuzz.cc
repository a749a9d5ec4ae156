// libFuzzer target: arbitrary bytes from a "peer" go through the frame reader into a real
// engine with one connected QP and one registered region. ASan catches any write outside it.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/engine.h"
#include "engine/local_fabric.h"
#include "mesh/frame_reader.h"

namespace {

using namespace ernic::emu;

struct EngineSink : FrameReader::Sink {
  Engine* engine = nullptr;
  Placement place(const FrameHeader& h) override { return engine->place(1, h); }
  void delivered(const FrameHeader& h) override { engine->delivered(1, h); }
  bool control(const FrameHeader&, std::span<const std::byte>) override { return true; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  LocalHub hub;
  auto& port = hub.add_node(0, {"local"});
  hub.add_node(1, {"peer"});
  Engine engine(port, EngineConfig{4096});
  hub.attach(0, engine);
  std::vector<std::byte> memory(8192);
  const auto pd = engine.alloc_pd();
  const auto cq = engine.create_cq();
  const auto keys = engine.reg_mr(pd, memory.data(), 0x1000, memory.size(),
                                  kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
  const auto qpn = engine.create_qp(pd, cq, cq);
  QpAttributes a;
  a.state = QpState::kInit;
  a.access = kAccessRemoteWrite | kAccessRemoteRead;
  engine.modify_qp(qpn, a);
  a.state = QpState::kRtr;
  a.remote_gid = "peer";
  a.remote_qpn = 0x11;
  engine.modify_qp(qpn, a);
  a.state = QpState::kRts;
  engine.modify_qp(qpn, a);
  for (int i = 0; i < 4; ++i) {
    engine.post_recv(qpn, {static_cast<std::uint64_t>(i), {0x1000 + 1024u * i, 1024, keys.lkey}});
  }
  EngineSink sink;
  sink.engine = &engine;
  FrameReader reader;
  std::size_t pos = 0;
  std::string reason;
  // Hand the input out in uneven pieces, as a socket would.
  auto read = [&](const iovec* iov, int count) -> ssize_t {
    if (pos == size) {
      errno = EAGAIN;
      return -1;
    }
    std::size_t budget = std::min<std::size_t>(size - pos, 1 + (data[pos] % 97));
    std::size_t done = 0;
    for (int i = 0; i < count && budget > 0; ++i) {
      const std::size_t n = std::min(budget, iov[i].iov_len);
      std::memcpy(iov[i].iov_base, data + pos, n);
      pos += n;
      done += n;
      budget -= n;
    }
    return static_cast<ssize_t>(done);
  };
  while (reader.pump(read, sink, reason, 1 << 20) == FrameReader::Result::kBudgetUsed) {
  }
  hub.deliver(1000);
  return 0;
}
