#include "image/image_builder.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/interrupt.h"
#include "image/local_process.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

// Bump when the builder changes what it puts into an image: cached images then rebuild.
constexpr const char* kBuilderVersion = "ernicctl-image-builder/2";
constexpr const char* kStaticAddressArg = "ernic.net";

using Seconds = std::chrono::duration<double>;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& file, const std::string& content,
                fs::perms mode = fs::perms(0644)) {
  fs::create_directories(file.parent_path());
  {
    std::ofstream out(file, std::ios::trunc);
    if (!out) {
      throw std::runtime_error(fmt::format("cannot write {}", file.string()));
    }
    out << content;
  }
  fs::permissions(file, mode);
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string joined;
  for (const auto& word : words) {
    if (!joined.empty()) {
      joined += separator;
    }
    joined += word;
  }
  return joined;
}

// One build: runs steps, logs them, and turns a failing program into an error naming the step.
class Build {
 public:
  Build(const ImageBuildOptions& options, fs::path log) : options_(options), log_(std::move(log)) {}

  void step(const std::string& what) {
    ++step_number_;
    current_ = what;
    if (options_.progress) {
      options_.progress(fmt::format("[{}] {}", step_number_, what));
    }
    std::ofstream(log_, std::ios::app) << "## " << what << "\n";
  }

  std::string run(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                  const std::vector<std::pair<std::string, std::string>>& env = {}) {
    LocalProcessOptions process;
    process.timeout = timeout;
    process.log_file = log_;
    process.stop = options_.stop;
    process.env = env;
    auto result = run_local(argv, process);
    if (result.interrupted) {
      throw std::runtime_error(fmt::format("image build interrupted during '{}'", current_));
    }
    if (!result.ok()) {
      throw std::runtime_error(
          fmt::format("image build step '{}' failed: {} {}\n{}\n(full log: {})", current_, argv[0],
                      result.describe(), result.tail(), log_.string()));
    }
    return result.output;
  }

  void check_stop() const {
    if ((options_.stop != nullptr && options_.stop->load()) || Interrupt::requested()) {
      throw std::runtime_error(fmt::format("image build interrupted during '{}'", current_));
    }
  }

 private:
  const ImageBuildOptions& options_;
  fs::path log_;
  int step_number_ = 0;
  std::string current_ = "start";
};

// Removes the staging folder unless the build published it.
class StagingGuard {
 public:
  explicit StagingGuard(fs::path dir) : dir_(std::move(dir)) {}
  ~StagingGuard() {
    if (!dir_.empty()) {
      std::error_code ignored;
      fs::remove_all(dir_, ignored);
    }
  }
  void release() { dir_.clear(); }

 private:
  fs::path dir_;
};

std::vector<std::string> installed_kernels(const fs::path& root) {
  std::vector<std::string> versions;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root / "boot", error)) {
    std::string file = entry.path().filename().string();
    if (file.rfind("vmlinuz-", 0) != 0) {
      continue;
    }
    std::string version = file.substr(std::strlen("vmlinuz-"));
    if (fs::exists(root / "boot" / ("initrd.img-" + version)) &&
        fs::is_directory(root / "lib/modules" / version)) {
      versions.push_back(version);
    }
  }
  std::sort(versions.begin(), versions.end(), [](const std::string& a, const std::string& b) {
    return strverscmp(a.c_str(), b.c_str()) < 0;
  });
  return versions;
}

std::string tarball_name(const ImageRecipe& recipe) {
  auto packages = recipe.packages;
  std::sort(packages.begin(), packages.end());
  std::string identity = fmt::format("{}\n{}\n{}\n{}", recipe.suite, recipe.variant, recipe.mirror,
                                     join(packages, ","));
  return fmt::format("{}-{}-{}.tgz", recipe.suite, recipe.variant,
                     sha256_hex(identity).substr(0, 12));
}

// The guest's network at boot: DHCP by default (ClientIdentifier=mac, because the image's
// machine-id is empty and would otherwise ask for a new lease every boot), or a static address
// given on the kernel command line, written as a .network file before networkd starts (networkd
// removes addresses it did not configure, so `ip addr add` later would be undone).
void write_network_config(const fs::path& root) {
  write_text(root / "etc/systemd/network/90-ernic-dhcp.network",
             "[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=ipv6\n\n"
             "[DHCPv4]\nClientIdentifier=mac\n");
  write_text(root / "usr/local/sbin/ernic-net-config",
             fmt::format(R"(#!/bin/sh
# {0}=ADDRESS/PREFIX[,GATEWAY] on the kernel command line: a static address for the guest's
# Ethernet NIC. networkd uses the first matching .network file in name order across /etc, /run
# and /usr/lib, so 10-ernic-static wins over the DHCP default 90-ernic-dhcp.
spec=""
for word in $(cat /proc/cmdline); do
  case "$word" in
    {0}=*) spec="${{word#{0}=}}" ;;
  esac
done
[ -n "$spec" ] || exit 0
address="${{spec%%,*}}"
gateway=""
case "$spec" in
  *,*) gateway="${{spec#*,}}" ;;
esac
mkdir -p /run/systemd/network
{{
  printf '[Match]\nName=en* eth*\n\n[Network]\nAddress=%s\nLinkLocalAddressing=ipv6\n' "$address"
  if [ -n "$gateway" ]; then printf 'Gateway=%s\n' "$gateway"; fi
}} > /run/systemd/network/10-ernic-static.network
)",
                         kStaticAddressArg),
             fs::perms(0755));
  write_text(root / "etc/systemd/system/ernic-net-config.service",
             "[Unit]\nDescription=Static address from the kernel command line\n"
             "DefaultDependencies=no\nBefore=systemd-networkd.service network-pre.target\n"
             "Wants=network-pre.target\nAfter=local-fs.target\n\n"
             "[Service]\nType=oneshot\nExecStart=/usr/local/sbin/ernic-net-config\n\n"
             "[Install]\nWantedBy=sysinit.target\n");
}

void write_limits(const fs::path& root, const std::string& memlock) {
  // RDMA pins memory: the distro default (8 MiB) fails a 4 MiB perftest with a misleading
  // "Couldn't create CQ".
  write_text(root / "etc/security/limits.d/90-rdma-memlock.conf",
             fmt::format("* soft memlock {0}\n* hard memlock {0}\nroot soft memlock {0}\n"
                         "root hard memlock {0}\n",
                         memlock));
  write_text(root / "etc/systemd/system.conf.d/90-rdma-memlock.conf",
             fmt::format("[Manager]\nDefaultLimitMEMLOCK={}\n",
                         memlock == "unlimited" ? "infinity" : memlock));
}

void copy_modules(Build& build, const ImageRecipe& recipe, const std::string& version,
                  const fs::path& root) {
  fs::path source = fs::path("/lib/modules") / version;
  fs::path target = root / "lib/modules" / version;
  fs::remove_all(target);
  fs::create_directories(target.parent_path());
  build.run({"cp", "-a", source.string(), target.string()}, std::chrono::seconds(300));
  for (const auto& drop : recipe.modules_drop) {
    fs::remove_all(target / drop);
  }
  build.run({"depmod", "-b", root.string(), version}, std::chrono::seconds(300));
  std::string dependencies = read_text(target / "modules.dep");
  std::string builtin = read_text(target / "modules.builtin");
  for (const auto& module : recipe.modules_require) {
    // Module files use '-' and '_' interchangeably in names.
    std::string pattern_text;
    for (char c : module) {
      pattern_text += (c == '_' || c == '-') ? std::string("[_-]") : std::string(1, c);
    }
    std::regex pattern("(^|/)" + pattern_text + R"(\.ko(\.xz|\.zst|\.gz)?(:|$))",
                       std::regex::multiline);
    if (!std::regex_search(dependencies, pattern) && !std::regex_search(builtin, pattern)) {
      throw std::runtime_error(fmt::format(
          "kernel {}: module {} is required by the recipe but is not in the image (dropped by "
          "modules.drop, or not built for this kernel)",
          version, module));
    }
  }
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Earlier builds of the same recipe file (it was edited since): 500 MB each, never used again.
void remove_superseded_images(const fs::path& out_dir, const fs::path& keep,
                              const ImageRecipe& recipe) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(out_dir, error)) {
    std::string folder = entry.path().filename().string();
    if (entry.path() == keep || folder.rfind(recipe.name + "-", 0) != 0 ||
        !fs::exists(entry.path() / "manifest.json")) {
      continue;
    }
    try {
      auto manifest = nlohmann::json::parse(read_text(entry.path() / "manifest.json"));
      if (manifest.value("name", "") == recipe.name &&
          manifest.value("recipe", "") == recipe.file.string()) {
        fs::remove_all(entry.path(), error);
      }
    } catch (const nlohmann::json::exception&) {
      // Not one of ours: leave it.
    }
  }
}

}  // namespace

std::string resolve_kernel_version(const ImageRecipe& recipe, const fs::path& root) {
  auto versions = installed_kernels(root);
  if (recipe.kernel == "host") {
    if (versions.empty()) {
      throw std::runtime_error(
          "no Debian kernel to boot guests with: /boot has no vmlinuz with a matching initrd and "
          "/lib/modules (fix: apt-get install linux-image-amd64)");
    }
    return versions.back();
  }
  if (std::find(versions.begin(), versions.end(), recipe.kernel) == versions.end()) {
    throw std::runtime_error(fmt::format(
        "{}: kernel {} is not installed on this machine (fix: apt-get install linux-image-{})",
        recipe.file.string(), recipe.kernel, recipe.kernel));
  }
  return recipe.kernel;
}

std::string image_cache_key(const ImageRecipe& recipe, const std::string& kernel_version) {
  return sha256_hex(fmt::format("{}\nkernel={}\n{}", recipe.text, kernel_version, kBuilderVersion))
      .substr(0, 16);
}

fs::path image_dir(const ImageRecipe& recipe, const std::string& kernel_version,
                   const fs::path& out_dir) {
  return out_dir / fmt::format("{}-{}", recipe.name, image_cache_key(recipe, kernel_version));
}

ImageBuildResult build_image(const ImageRecipe& recipe, const ImageBuildOptions& options) {
  auto started = std::chrono::steady_clock::now();
  std::string kernel_version = resolve_kernel_version(recipe);
  fs::path out_dir = fs::absolute(options.out_dir);
  fs::path final_dir = image_dir(recipe, kernel_version, out_dir);
  ImageBuildResult result;
  if (!options.force && fs::exists(final_dir / "manifest.json")) {
    result.image = load_image_manifest(final_dir / "manifest.json");
    result.cached = true;
    return result;
  }
  if (::geteuid() != 0) {
    throw std::runtime_error("building an image needs root (debootstrap and chroot)");
  }
  for (const char* tool : {"debootstrap", "mkfs.ext4", "qemu-img", "ssh-keygen", "depmod"}) {
    if (!local_program_exists(tool)) {
      throw std::runtime_error(
          fmt::format("{} is not installed (fix: apt-get install debootstrap e2fsprogs qemu-utils "
                      "openssh-client kmod)",
                      tool));
    }
  }
  fs::create_directories(out_dir / "debootstrap");
  fs::permissions(out_dir, fs::perms(0755));
  fs::path staging =
      out_dir / fmt::format(".staging-{}-{}", final_dir.filename().string(), ::getpid());
  fs::remove_all(staging);
  StagingGuard guard(staging);
  fs::create_directories(staging / "host_keys");
  fs::permissions(staging, fs::perms(0755));
  fs::path work = staging / "work";
  fs::path root = work / "root";
  fs::create_directories(root);
  Build build(options, staging / "build.log");
  nlohmann::json step_seconds = nlohmann::json::object();
  // `id` keys the manifest's step_seconds; `what` is the progress line.
  auto timed = [&](const std::string& id, const std::string& what,
                   const std::function<void()>& body) {
    auto step_started = std::chrono::steady_clock::now();
    build.step(what);
    body();
    build.check_stop();
    step_seconds[id] =
        std::round(Seconds(std::chrono::steady_clock::now() - step_started).count() * 10) / 10;
  };

  std::string include = "--include=" + join(recipe.packages, ",");
  std::vector<std::string> debootstrap{"debootstrap", "--variant=" + recipe.variant, include};
  fs::path tarball = out_dir / "debootstrap" / tarball_name(recipe);
  if (!fs::exists(tarball)) {
    timed("download", "download packages (debootstrap --make-tarball, cached for later builds)",
          [&] {
            fs::path partial = tarball.string() + fmt::format(".partial-{}", ::getpid());
            auto argv = debootstrap;
            argv.push_back("--make-tarball=" + partial.string());
            argv.insert(argv.end(), {recipe.suite, (work / "download").string(), recipe.mirror});
            try {
              build.run(argv, std::chrono::seconds(1200));
            } catch (...) {
              fs::remove(partial);
              throw;
            }
            fs::rename(partial, tarball);
            fs::remove_all(work / "download");
          });
  }
  timed("debootstrap", "debootstrap " + recipe.suite, [&] {
    auto argv = debootstrap;
    argv.push_back("--unpack-tarball=" + tarball.string());
    argv.insert(argv.end(), {recipe.suite, root.string(), recipe.mirror});
    build.run(argv, std::chrono::seconds(1200));
  });

  timed("modules", "kernel modules " + kernel_version,
        [&] { copy_modules(build, recipe, kernel_version, root); });

  timed("configure", "system configuration", [&] {
    write_text(root / "etc/hostname", recipe.hostname + "\n");
    write_text(root / "etc/hosts",
               fmt::format("127.0.0.1 localhost\n127.0.1.1 {}\n", recipe.hostname));
    write_text(root / "etc/fstab", "/dev/vda / ext4 rw,relatime 0 1\n");
    // Empty: each boot gets its own machine-id.
    write_text(root / "etc/machine-id", "", fs::perms(0444));
    fs::remove(root / "var/lib/dbus/machine-id");
    write_limits(root, recipe.memlock);
    write_network_config(root);
    // Timers that only cost CPU in a short-lived test guest.
    for (const char* unit : {"apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer",
                             "fstrim.timer", "man-db.timer"}) {
      fs::path mask = root / "etc/systemd/system" / unit;
      fs::remove(mask);
      fs::create_symlink("/dev/null", mask);
    }
    build.run({"chroot", root.string(), "systemctl", "enable", "systemd-networkd",
               "ernic-net-config.service", "ssh.service"},
              std::chrono::seconds(120));
  });

  std::vector<HostKey> host_keys;
  timed("ssh_keys", "SSH host keys and the image's user key", [&] {
    for (const auto& entry : fs::directory_iterator(root / "etc/ssh")) {
      if (entry.path().filename().string().rfind("ssh_host_", 0) == 0) {
        fs::remove(entry.path());
      }
    }
    for (const char* type : {"ed25519", "ecdsa"}) {
      fs::path key = root / "etc/ssh" / fmt::format("ssh_host_{}_key", type);
      build.run({"ssh-keygen", "-q", "-t", type, "-N", "", "-C", "root@" + recipe.hostname, "-f",
                 key.string()},
                std::chrono::seconds(60));
      fs::copy_file(key.string() + ".pub",
                    staging / "host_keys" / (key.filename().string() + ".pub"));
      auto keys = parse_public_keys(read_text(key.string() + ".pub"));
      host_keys.insert(host_keys.end(), keys.begin(), keys.end());
    }
    write_text(root / "etc/ssh/sshd_config.d/50-ernic.conf",
               "HostKey /etc/ssh/ssh_host_ed25519_key\nHostKey /etc/ssh/ssh_host_ecdsa_key\n"
               "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
               "PermitRootLogin prohibit-password\nUseDNS no\n"
               // Benchmarks run long commands over one session: keep it alive.
               "ClientAliveInterval 15\nClientAliveCountMax 8\n");
    build.run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ernicctl@" + recipe.name, "-f",
               (staging / "id_ed25519").string()},
              std::chrono::seconds(60));
    std::string public_key = read_text(staging / "id_ed25519.pub");

    std::vector<std::string> useradd{"chroot",        root.string(), "useradd",
                                     "--create-home", "--shell",     "/bin/bash"};
    if (recipe.user_sudo) {
      useradd.insert(useradd.end(), {"--groups", "sudo"});
    }
    useradd.push_back(recipe.user);
    build.run(useradd, std::chrono::seconds(60));
    auto install_key = [&](const std::string& account, const fs::path& home) {
      fs::path ssh_dir = root / home.relative_path() / ".ssh";
      write_text(ssh_dir / "authorized_keys", public_key, fs::perms(0600));
      fs::permissions(ssh_dir, fs::perms(0700));
      build.run({"chroot", root.string(), "chown", "-R", account + ":", home.string() + "/.ssh"},
                std::chrono::seconds(60));
    };
    install_key(recipe.user, fs::path("/home") / recipe.user);
    if (recipe.root_login) {
      install_key("root", "/root");
    }
    if (recipe.user_sudo) {
      write_text(root / "etc/sudoers.d/90-ernic", recipe.user + " ALL=(ALL) NOPASSWD:ALL\n",
                 fs::perms(0440));
    }
  });

  nlohmann::json packages = nlohmann::json::object();
  timed("packages", "package list and cleanup", [&] {
    std::string listing =
        build.run({"chroot", root.string(), "dpkg-query", "-W", "-f=${Package}\t${Version}\n"},
                  std::chrono::seconds(60));
    std::istringstream lines(listing);
    std::string line;
    while (std::getline(lines, line)) {
      auto tab = line.find('\t');
      if (tab != std::string::npos) {
        packages[line.substr(0, tab)] = line.substr(tab + 1);
      }
    }
    for (const auto& package : recipe.packages) {
      if (!packages.contains(package)) {
        throw std::runtime_error(fmt::format("package {} is not installed in the image", package));
      }
    }
    for (const char* dir :
         {"var/lib/apt/lists", "var/cache/apt", "usr/share/doc", "usr/share/man"}) {
      std::error_code ignored;
      for (const auto& entry : fs::directory_iterator(root / dir, ignored)) {
        fs::remove_all(entry.path(), ignored);
      }
    }
  });

  timed("kernel", "kernel and initrd for direct kernel boot", [&] {
    fs::copy_file(fs::path("/boot") / ("vmlinuz-" + kernel_version), staging / "vmlinuz");
    fs::copy_file(fs::path("/boot") / ("initrd.img-" + kernel_version), staging / "initrd.img");
    fs::permissions(staging / "vmlinuz", fs::perms(0644));
    fs::permissions(staging / "initrd.img", fs::perms(0644));
  });

  timed("disk", "filesystem and qcow2", [&] {
    fs::path raw = work / "disk.raw";
    build.run({"truncate", "-s", std::to_string(recipe.disk_size), raw.string()},
              std::chrono::seconds(60));
    build.run({"mkfs.ext4", "-q", "-F", "-L", "ernic-root", "-d", root.string(), raw.string()},
              std::chrono::seconds(600));
    build.run(
        {"qemu-img", "convert", "-O", "qcow2", raw.string(), (staging / "disk.qcow2").string()},
        std::chrono::seconds(600));
    fs::permissions(staging / "disk.qcow2", fs::perms(0644));
  });
  fs::remove_all(work);

  nlohmann::json manifest = {
      {"format", "ernicctl-image/1"},
      {"name", recipe.name},
      {"recipe", recipe.file.string()},
      {"recipe_sha256", sha256_hex(recipe.text)},
      {"cache_key", image_cache_key(recipe, kernel_version)},
      {"builder", kBuilderVersion},
      {"built", utc_now()},
      {"build_seconds",
       std::round(Seconds(std::chrono::steady_clock::now() - started).count() * 10) / 10},
      {"step_seconds", step_seconds},
      {"suite", recipe.suite},
      {"disk", "disk.qcow2"},
      {"disk_format", "qcow2"},
      {"disk_size", recipe.disk_size},
      {"kernel",
       {{"version", kernel_version},
        {"image", "vmlinuz"},
        {"initrd", "initrd.img"},
        {"cmdline", recipe.kernel_cmdline}}},
      {"user",
       {{"name", recipe.user},
        {"private_key", "id_ed25519"},
        {"public_key", "id_ed25519.pub"},
        {"sudo", recipe.user_sudo},
        {"root_login", recipe.root_login}}},
      {"network", {{"static_arg", kStaticAddressArg}, {"dhcp", "ClientIdentifier=mac"}}},
      {"packages", packages},
  };
  nlohmann::json keys = nlohmann::json::array();
  for (const auto& key : host_keys) {
    std::string file = key.type == "ssh-ed25519" ? "host_keys/ssh_host_ed25519_key.pub"
                                                 : "host_keys/ssh_host_ecdsa_key.pub";
    keys.push_back({{"type", key.type}, {"key", key.base64}, {"file", file}});
  }
  manifest["host_keys"] = keys;
  write_text(staging / "manifest.json", manifest.dump(2) + "\n");

  if (fs::exists(final_dir)) {
    fs::remove_all(final_dir);  // --force, or an unfinished folder left by an older builder
  }
  fs::rename(staging, final_dir);
  guard.release();
  remove_superseded_images(out_dir, final_dir, recipe);
  result.image = load_image_manifest(final_dir / "manifest.json");
  result.seconds = Seconds(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace ernic
