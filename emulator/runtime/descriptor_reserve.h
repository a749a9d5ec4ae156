#pragma once

namespace ernic::emu {

// One descriptor held back for the moment the process reaches its descriptor limit: a
// listener that cannot accept (EMFILE) would keep the connection in its backlog, stay readable
// and spin the event loop. With the reserve it accepts the connection and closes it at once,
// which refuses it, and the instance carries on with what it has.
class DescriptorReserve {
 public:
  DescriptorReserve();
  ~DescriptorReserve();
  DescriptorReserve(const DescriptorReserve&) = delete;
  DescriptorReserve& operator=(const DescriptorReserve&) = delete;

  // After accept() failed with EMFILE or ENFILE: accepts one pending connection on
  // `listen_fd` and closes it. False when there was none (or even that failed).
  bool refuse_one(int listen_fd);

  static bool at_limit(int error);

 private:
  int spare_ = -1;
};

}  // namespace ernic::emu
