#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace ernic::emu {

// One SEQPACKET message with optional file descriptors (SCM_RIGHTS). send returns false on
// error (errno set); receive returns the byte count (0 at end of stream, -1 on error) and
// appends received descriptors to `fds`.
bool send_message(int socket, std::span<const std::byte> data, std::span<const int> fds = {});
// One sendmsg (MSG_NOSIGNAL) of `iov` with `fds` riding on its first byte (at most 8); returns
// what sendmsg returns (EINVAL for too many descriptors).
ssize_t send_with_fds(int socket, const iovec* iov, int count, std::span<const int> fds);
long receive_message(int socket, std::vector<std::byte>& data, std::vector<int>& fds);

}  // namespace ernic::emu
