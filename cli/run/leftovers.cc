#include "run/leftovers.h"
#include "base/file_text.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <libvirt/libvirt.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "hosts/libvirt/libvirt_config.h"
#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_guest_region.h"
#include "hosts/libvirt/libvirt_handles.h"
#include "hosts/libvirt/libvirt_image_upload.h"
#include "hosts/libvirt/libvirt_resources.h"
#include "hosts/process_command.h"

namespace ernic {
namespace fs = std::filesystem;

namespace {

// Run tokens are six hex digits (Executor's random_token); test fixtures' names never are.
const std::regex kNamespaceName("^ernic-([0-9a-f]{6})-.+$");
const std::regex kDomainName("^ernic-([0-9a-f]{6})-.+$");
const std::regex kNetworkOrPoolName("^ernic-([0-9a-f]{6})$");
const std::regex kSocketDirName("^ernic-(?:ext-)?([0-9a-f]{6})$");
// Guest regions of embedded instances (emu::guest_region_path), which QEMU keeps open too.
const std::regex kGuestRegionName("^ernic-([0-9a-f]{6})-i[0-9]+$");
const fs::path kSharedMemory = "/dev/shm";
// RunLock's file, left behind when its ernicctl was killed (SIGKILL runs no destructor).
const std::regex kRunLockName("^ernicctl-run-([0-9a-f]{6})\\.lock$");

const fs::path kLibvirtImages = "/var/lib/libvirt/images";

std::optional<std::string> token_of(const std::string& name, const std::regex& pattern) {
  std::smatch match;
  if (std::regex_match(name, match, pattern)) {
    return match[1].str();
  }
  return std::nullopt;
}

const char* const kLocalLibvirt = "qemu:///system";

// Candidates found by name, before deciding which tokens are wanted.
struct Candidates {
  std::vector<Leftover> items;
  std::vector<std::string> notes;
  std::vector<std::string> errors;
};

void scan_names(Candidates& out) {
  std::error_code ignored;
  if (fs::exists("/run/netns")) {
    for (const auto& entry : fs::directory_iterator("/run/netns", ignored)) {
      std::string name = entry.path().filename().string();
      if (auto token = token_of(name, kNamespaceName)) {
        out.items.push_back({*token, "netns", name});
      }
    }
  }
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ignored)) {
    std::string name = entry.path().filename().string();
    if (auto token = token_of(name, kSocketDirName); token && entry.is_directory(ignored)) {
      out.items.push_back({*token, "directory", entry.path().string()});
    } else if (auto lock = token_of(name, kRunLockName); lock && entry.is_regular_file(ignored)) {
      out.items.push_back({*lock, "file", entry.path().string()});
    }
  }
  for (const auto& entry : fs::directory_iterator(kSharedMemory, ignored)) {
    std::string name = entry.path().filename().string();
    if (auto token = token_of(name, kGuestRegionName); token && entry.is_regular_file(ignored)) {
      out.items.push_back({*token, "file", entry.path().string()});
    }
  }
  if (fs::exists(kLibvirtImages)) {
    for (const auto& entry : fs::directory_iterator(kLibvirtImages, ignored)) {
      std::string name = entry.path().filename().string();
      if (auto token = token_of(name, kNetworkOrPoolName)) {
        out.items.push_back({*token, "directory", entry.path().string()});
      }
    }
  }
}

// Uploads a killed run left unfinished in a remote host's image cache pool (their claims,
// NAME.uploading-TOKEN).
void scan_unfinished_uploads(virConnectPtr connection, const std::string& uri, Candidates& out) {
  StoragePoolHandle cache = lookup_storage_pool(connection, kImageCachePool);
  if (!cache || virStoragePoolIsActive(cache.get()) != 1) {
    return;
  }
  virStoragePoolRefresh(cache.get(), 0);
  virStorageVolPtr* volumes = nullptr;
  int count = virStoragePoolListAllVolumes(cache.get(), &volumes, 0);
  for (int i = 0; i < count; ++i) {
    StorageVolumeHandle volume(volumes[i]);
    std::string name = virStorageVolGetName(volume.get());
    if (std::string token = upload_claim_token(name); !token.empty()) {
      out.items.push_back({token, "volume", std::string(kImageCachePool) + "/" + name, uri});
    }
  }
  free(volumes);
}

// A command on the machine of a remote libvirt URI, over the URI's own SSH login; its stdout.
std::string run_on_libvirt_machine(const std::string& uri, const std::string& script) {
  auto login = libvirt_host_login(LibvirtRunConfig{}, uri);
  if (!login) {
    throw std::runtime_error("not an SSH transport: its machine's files cannot be reached");
  }
  return run_on_libvirt_host(*login, script);
}

// Guest regions in a remote libvirt host's /dev/shm, made there by instances placed on it.
void scan_remote_regions(const std::string& uri, Candidates& out) {
  if (!libvirt_host_login(LibvirtRunConfig{}, uri)) {
    return;
  }
  try {
    std::istringstream names(run_on_libvirt_machine(uri, "ls -1 " + kSharedMemory.string()));
    for (std::string name; std::getline(names, name);) {
      if (auto token = token_of(name, kGuestRegionName)) {
        out.items.push_back({*token, "remote file", (kSharedMemory / name).string(), uri});
      }
    }
  } catch (const std::exception& e) {
    out.errors.push_back(fmt::format(
        "the machine of {} not reachable, its guest regions not removed: {}", uri, e.what()));
  }
}

void scan_libvirt(const std::string& uri, Candidates& out) {
  // Only a daemon that already runs is asked: finding leftovers never starts one.
  if (uri == kLocalLibvirt && !fs::exists("/run/libvirt/libvirt-sock") &&
      !fs::exists("/var/run/libvirt/libvirt-sock")) {
    return;
  }
  try {
    LibvirtConnection connection(uri);
    virDomainPtr* domains = nullptr;
    int count = virConnectListAllDomains(connection.get(), &domains, 0);
    for (int i = 0; i < count; ++i) {
      DomainHandle domain(domains[i]);
      std::string name = virDomainGetName(domain.get());
      if (auto token = token_of(name, kDomainName)) {
        out.items.push_back({*token, "domain", name, uri});
      }
    }
    free(domains);
    virNetworkPtr* networks = nullptr;
    count = virConnectListAllNetworks(connection.get(), &networks, 0);
    for (int i = 0; i < count; ++i) {
      NetworkHandle network(networks[i]);
      std::string name = virNetworkGetName(network.get());
      if (auto token = token_of(name, kNetworkOrPoolName)) {
        out.items.push_back({*token, "network", name, uri});
      }
    }
    free(networks);
    virStoragePoolPtr* pools = nullptr;
    count = virConnectListAllStoragePools(connection.get(), &pools, 0);
    for (int i = 0; i < count; ++i) {
      StoragePoolHandle pool(pools[i]);
      std::string name = virStoragePoolGetName(pool.get());
      if (auto token = token_of(name, kNetworkOrPoolName)) {
        out.items.push_back({*token, "pool", name, uri});
      }
    }
    free(pools);
    scan_unfinished_uploads(connection.get(), uri, out);
    scan_remote_regions(uri, out);
  } catch (const std::exception& e) {
    if (uri == kLocalLibvirt) {
      out.notes.push_back(fmt::format("libvirt not checked: {}", e.what()));
    } else {
      out.errors.push_back(fmt::format(
          "libvirt at {} not reachable, its domains, networks and pools not removed: {}", uri,
          e.what()));
    }
  }
}

// Processes of the wanted runs: emulator instances (their sockets live in the run's directory)
// and anything still inside one of the run's namespaces.
void scan_processes(const std::set<std::string>& tokens, const std::vector<Leftover>& namespaces,
                    std::vector<Leftover>& out) {
  std::map<ino_t, std::string> namespace_tokens;
  for (const auto& item : namespaces) {
    struct stat info {};
    if (::stat(("/run/netns/" + item.name).c_str(), &info) == 0) {
      namespace_tokens[info.st_ino] = item.token;
    }
  }
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator("/proc", ignored)) {
    std::string pid_text = entry.path().filename().string();
    if (pid_text.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(pid_text) == ::getpid()) {
      continue;
    }
    std::string owner;
    struct stat net {};
    if (::stat((entry.path() / "ns/net").c_str(), &net) == 0) {
      if (auto it = namespace_tokens.find(net.st_ino); it != namespace_tokens.end()) {
        owner = it->second;
      }
    }
    if (owner.empty()) {
      std::string cmdline = process_command_line(std::stoi(pid_text));
      for (const auto& token : tokens) {
        if (cmdline.find("/ernic-" + token + "/") != std::string::npos ||
            cmdline.find("/ernic-ext-" + token + "/") != std::string::npos) {
          owner = token;
        }
      }
    }
    if (!owner.empty()) {
      out.push_back({owner, "process", pid_text});
    }
  }
}

void remove_libvirt_object(const Leftover& item, virConnectPtr connection) {
  if (item.kind == "domain") {
    virDomainPtr domain = virDomainLookupByName(connection, item.name.c_str());
    if (domain == nullptr) {
      return;
    }
    // A domain whose QEMU died on its own stops between the check and the destroy; only a
    // domain still running after a failed destroy is an error.
    if (virDomainIsActive(domain) == 1 && virDomainDestroy(domain) != 0 &&
        virDomainIsActive(domain) == 1) {
      std::string error = libvirt_error_message();
      virDomainFree(domain);
      throw std::runtime_error(error);
    }
    if (virDomainIsPersistent(domain) == 1) {
      virDomainUndefineFlags(domain, VIR_DOMAIN_UNDEFINE_NVRAM);
    }
    virDomainFree(domain);
  } else if (item.kind == "network") {
    virNetworkPtr network = virNetworkLookupByName(connection, item.name.c_str());
    if (network == nullptr) {
      return;
    }
    if (virNetworkIsActive(network) == 1) {
      virNetworkDestroy(network);
    }
    if (virNetworkIsPersistent(network) == 1) {
      virNetworkUndefine(network);
    }
    virNetworkFree(network);
  } else if (item.kind == "volume") {
    auto slash = item.name.find('/');
    remove_unfinished_upload(connection, item.name.substr(0, slash), item.name.substr(slash + 1));
  } else if (item.kind == "pool") {
    remove_storage_pool(connection, item.name, PoolContents::kEverything);  // ernic-TOKEN's
  }
}

}  // namespace

std::string Leftover::describe() const {
  std::string text = kind + " " + name;
  return uri.empty() || uri == kLocalLibvirt ? text : text + " on " + uri;
}

fs::path RunLock::path_of(const std::string& token) {
  return fs::temp_directory_path() / fmt::format("ernicctl-run-{}.lock", token);
}

RunLock::RunLock(const std::string& token) : path_(path_of(token)) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_EX | LOCK_NB);
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) {
    std::error_code ignored;
    fs::remove(path_, ignored);
    ::close(fd_);
  }
}

bool RunLock::held(const std::string& token) {
  int fd = ::open(path_of(token).c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  return busy;
}

LeftoverScan find_leftovers(const std::set<std::string>& tokens,
                            const std::vector<std::string>& libvirt_uris) {
  Candidates candidates;
  scan_names(candidates);
  for (const auto& uri : std::set<std::string>(libvirt_uris.begin(), libvirt_uris.end())) {
    scan_libvirt(uri, candidates);
  }
  LeftoverScan scan;
  scan.notes = candidates.notes;
  scan.errors = candidates.errors;
  std::set<std::string> wanted;
  std::vector<Leftover> namespaces;
  for (const auto& item : candidates.items) {
    bool asked = tokens.empty() || tokens.contains(item.token);
    if (!asked) {
      continue;
    }
    if (RunLock::held(item.token)) {
      scan.live_tokens.insert(item.token);
      continue;
    }
    wanted.insert(item.token);
    scan.found.push_back(item);
    if (item.kind == "netns") {
      namespaces.push_back(item);
    }
  }
  for (const auto& token : tokens) {
    if (!RunLock::held(token)) {
      wanted.insert(token);
    } else {
      scan.live_tokens.insert(token);
    }
  }
  std::vector<Leftover> processes;
  scan_processes(wanted, namespaces, processes);
  scan.found.insert(scan.found.begin(), processes.begin(), processes.end());
  return scan;
}

void remove_leftovers(const std::vector<Leftover>& leftovers, const std::string& libvirt_uri,
                      const std::function<void(const Leftover&, const std::string&)>& on_error,
                      std::chrono::milliseconds grace) {
  std::map<std::string, std::unique_ptr<LibvirtConnection>> connections;  // by URI
  auto remove = [&](const Leftover& item) {
    try {
      if (item.kind == "netns") {
        run_or_throw({"ip", "netns", "delete", item.name});
      } else if (item.kind == "directory") {
        fs::remove_all(item.name);
      } else if (item.kind == "file") {
        fs::remove(item.name);
      } else if (item.kind == "remote file") {
        run_on_libvirt_machine(item.uri, "rm -f " + shell_quote(item.name));
      } else {
        const std::string& uri = item.uri.empty() ? libvirt_uri : item.uri;
        auto& connection = connections[uri];
        if (!connection) {
          connection = std::make_unique<LibvirtConnection>(uri);
        }
        remove_libvirt_object(item, connection->get());
      }
    } catch (const std::exception& e) {
      on_error(item, e.what());
    }
  };
  // Domains before processes: libvirt stops its own QEMU and notices; a QEMU killed behind its
  // back leaves the domain half-stopped while libvirt catches up.
  for (const auto& item : leftovers) {
    if (item.kind == "domain") {
      remove(item);
    }
  }
  // Then processes: an emulator instance or a server in a namespace holds what comes next.
  std::vector<pid_t> signalled;
  for (const auto& item : leftovers) {
    if (item.kind == "process") {
      pid_t pid = std::stoi(item.name);
      if (process_running(pid)) {
        ::kill(pid, SIGTERM);
        signalled.push_back(pid);
      }
    }
  }
  auto deadline = std::chrono::steady_clock::now() + grace;
  for (pid_t pid : signalled) {
    while (process_running(pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (process_running(pid)) {
      ::kill(pid, SIGKILL);
    }
  }
  for (const char* kind :
       {"network", "pool", "volume", "netns", "directory", "file", "remote file"}) {
    for (const auto& item : leftovers) {
      if (item.kind == kind) {
        remove(item);
      }
    }
  }
}

}  // namespace ernic
