#pragma once

#include <libvirt/libvirt.h>

#include <chrono>
#include <string>
#include <vector>

namespace ernic {

// The last libvirt error of this thread as text ("unknown libvirt error" when none).
std::string libvirt_error_message();

// One connection to a libvirt daemon (or the in-process test driver). libvirt's default error
// printing to stderr is turned off: every failure becomes an exception with its message.
class LibvirtConnection {
 public:
  // Throws std::runtime_error naming the URI and libvirt's reason.
  explicit LibvirtConnection(const std::string& uri);
  ~LibvirtConnection();
  LibvirtConnection(const LibvirtConnection&) = delete;
  LibvirtConnection& operator=(const LibvirtConnection&) = delete;

  virConnectPtr get() const { return connection_; }
  const std::string& uri() const { return uri_; }

 private:
  std::string uri_;
  virConnectPtr connection_ = nullptr;
};

// Whether `uri` is a local system daemon this process may start when absent.
bool is_local_system_uri(const std::string& uri);

// Starts virtlogd and libvirtd on machines without systemd, where nothing else does. Only the
// daemons it started are stopped by stop_started(), so a user's running libvirtd is left alone.
class LibvirtDaemons {
 public:
  LibvirtDaemons() = default;
  ~LibvirtDaemons() = default;
  LibvirtDaemons(const LibvirtDaemons&) = delete;
  LibvirtDaemons& operator=(const LibvirtDaemons&) = delete;
  LibvirtDaemons(LibvirtDaemons&&) = default;
  LibvirtDaemons& operator=(LibvirtDaemons&&) = default;

  // Makes qemu:///system answer: starts virtlogd and libvirtd when they are not running, then
  // waits (up to `timeout`) until a connection opens. Throws with the fix when they cannot be
  // started (not installed, not root).
  void ensure_running(std::chrono::seconds timeout);
  // SIGTERM, bounded wait, SIGKILL for each daemon this object started, newest first.
  void stop_started();
  const std::vector<std::string>& started() const { return started_names_; }

 private:
  std::vector<std::string> started_names_;
  std::vector<int> started_pids_;
};

// The pid of a running daemon from its pid file, or 0.
int running_daemon_pid(const std::string& name);

}  // namespace ernic
