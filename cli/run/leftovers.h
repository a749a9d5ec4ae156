#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

// What a run leaves on the machine is named after its token (ernic-<token>-<host> namespaces,
// ernic-<token>[-<guest>] libvirt domains, networks and pools, /tmp/ernic-<token> sockets), so
// it can be found again after ernicctl is gone: `ernicctl down` removes what `up` left, and
// what a killed run left. A live run holds a lock on its token, and is never touched.
namespace ernic {

// Held (flock) by a run for as long as its ernicctl process lives; the kernel releases it when
// the process dies, however it dies.
class RunLock {
 public:
  explicit RunLock(const std::string& token);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  static std::filesystem::path path_of(const std::string& token);
  // Whether a live process holds the lock of `token`.
  static bool held(const std::string& token);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

struct Leftover {
  std::string token;
  // "process", "netns", "domain", "network", "pool", "volume" (an unfinished upload's claim in
  // a remote host's image cache pool), "directory", "file", "remote file" (a guest region on a
  // remote libvirt host's machine, removed over its URI's SSH login)
  std::string kind;
  std::string name;   // pid, namespace, libvirt object name ("POOL/VOLUME" for a volume) or path
  std::string uri{};  // libvirt objects and remote files: the daemon (machine) they are on
  std::string describe() const;
};

struct LeftoverScan {
  std::vector<Leftover> found;
  std::set<std::string> live_tokens;  // runs still going: left alone
  std::vector<std::string> notes;     // e.g. "libvirt not reachable: domains not checked"
  // Remote libvirt hosts that could not be asked, each naming its URI and why: what a run left
  // there is still there.
  std::vector<std::string> errors;
};

// Everything named after a run token, for `tokens` (empty: every run whose ernicctl is gone),
// on this machine and in the libvirt daemons of `libvirt_uris` (domains, networks, pools, and
// unfinished uploads in a remote host's image cache pool; the cache itself is kept). The local
// daemon is only asked when it runs; a remote URI that does not answer is an error.
LeftoverScan find_leftovers(const std::set<std::string>& tokens,
                            const std::vector<std::string>& libvirt_uris);
inline LeftoverScan find_leftovers(const std::set<std::string>& tokens,
                                   const std::string& libvirt_uri) {
  return find_leftovers(tokens, std::vector<std::string>{libvirt_uri});
}

// Removes them: domains first (libvirt stops their QEMU), then processes (SIGTERM, then SIGKILL
// after `grace`), then networks, pools, volumes, namespaces and directories, each libvirt object
// through its own `uri` (`libvirt_uri` for one that names none). `on_error` hears what could not
// be removed and why.
void remove_leftovers(const std::vector<Leftover>& leftovers, const std::string& libvirt_uri,
                      const std::function<void(const Leftover&, const std::string&)>& on_error,
                      std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

}  // namespace ernic
