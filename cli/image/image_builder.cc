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

#include "base/interrupt.h"
#include "base/local_process.h"
#include "frontend/verbs_environment.h"
#include "image/guest_files.h"
#include "image/image_digest.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

using guest_files::kStaticAddressArg;
using guest_files::read_text;
using guest_files::write_limits;
using guest_files::write_network_config;
using guest_files::write_text;

// Bump when the builder changes what it puts into an image: cached images then rebuild.
constexpr const char* kBuilderVersion = "ernicctl-image-builder/2";
constexpr const char* kVerbsProviderFiles[] = {"libernic-rdmav34.so", "libernic-cdev.so"};

using Seconds = std::chrono::duration<double>;

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
  // A line of the builder's own in the build log.
  void note(const std::string& text) { std::ofstream(log_, std::ios::app) << text << "\n"; }

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

// Fails with the fix when the build host cannot build: not root, or a program missing.
void check_build_host() {
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
}

// The staging folder of this build, not yet created (a stale one of the same name is removed).
fs::path fresh_staging_dir(const fs::path& out_dir, const fs::path& final_dir) {
  fs::create_directories(out_dir / "debootstrap");
  fs::permissions(out_dir, fs::perms(0755));
  fs::path staging =
      out_dir / fmt::format(".staging-{}-{}", final_dir.filename().string(), ::getpid());
  fs::remove_all(staging);
  return staging;
}

double seconds_since(std::chrono::steady_clock::time_point started) {
  return Seconds(std::chrono::steady_clock::now() - started).count();
}

double tenths(double seconds) {
  return std::round(seconds * 10) / 10;
}

// The stages of one build, run in order in the staging folder; each is timed for the manifest.
class ImageStages {
 public:
  ImageStages(const ImageRecipe& recipe, const ImageBuildOptions& options,
              std::string kernel_version, fs::path out_dir, fs::path staging)
      : recipe_(recipe),
        kernel_version_(std::move(kernel_version)),
        out_dir_(std::move(out_dir)),
        staging_(std::move(staging)),
        work_(staging_ / "work"),
        root_(work_ / "root"),
        build_(options, staging_ / "build.log") {
    fs::create_directories(staging_ / "host_keys");
    fs::permissions(staging_, fs::perms(0755));
    fs::create_directories(root_);
  }

  void run() {
    fs::path tarball = out_dir_ / "debootstrap" / tarball_name(recipe_);
    if (!fs::exists(tarball)) {
      timed("download", "download packages (debootstrap --make-tarball, cached for later builds)",
            [&] { download_packages(tarball); });
    }
    timed("debootstrap", "debootstrap " + recipe_.suite, [&] { unpack_packages(tarball); });
    timed("modules", "kernel modules " + kernel_version_,
          [&] { copy_modules(build_, recipe_, kernel_version_, root_); });
    timed("configure", "system configuration", [&] { configure_system(); });
    timed("ssh_keys", "SSH host keys and the image's user key", [&] {
      create_host_keys();
      create_user(create_user_key());
    });
    timed("packages", "package list and cleanup", [&] { record_packages(); });
    timed("kernel", "kernel and initrd for direct kernel boot", [&] { copy_kernel(); });
    timed("disk", "filesystem and qcow2", [&] { make_disk(); });
    fs::remove_all(work_);
  }

  void write_manifest(std::chrono::steady_clock::time_point started) const {
    nlohmann::json manifest = {
        {"format", "ernicctl-image/1"},
        {"name", recipe_.name},
        {"recipe", recipe_.file.string()},
        {"recipe_sha256", sha256_hex(recipe_.text)},
        {"cache_key", image_cache_key(recipe_, kernel_version_)},
        {"builder", kBuilderVersion},
        {"verbs_provider", verbs_provider_digest()},
        {"built", utc_now()},
        {"build_seconds", tenths(seconds_since(started))},
        {"step_seconds", step_seconds_},
        {"suite", recipe_.suite},
        {"disk", "disk.qcow2"},
        {"disk_format", "qcow2"},
        {"disk_size", recipe_.disk_size},
        {"kernel",
         {{"version", kernel_version_},
          {"image", "vmlinuz"},
          {"initrd", "initrd.img"},
          {"cmdline", recipe_.kernel_cmdline}}},
        {"user",
         {{"name", recipe_.user},
          {"private_key", "id_ed25519"},
          {"public_key", "id_ed25519.pub"},
          {"sudo", recipe_.user_sudo},
          {"root_login", recipe_.root_login}}},
        {"network", {{"static_arg", kStaticAddressArg}, {"dhcp", "ClientIdentifier=mac"}}},
        {"packages", packages_},
    };
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& key : host_keys_) {
      std::string file = key.type == "ssh-ed25519" ? "host_keys/ssh_host_ed25519_key.pub"
                                                   : "host_keys/ssh_host_ecdsa_key.pub";
      keys.push_back({{"type", key.type}, {"key", key.base64}, {"file", file}});
    }
    manifest["host_keys"] = keys;
    write_text(staging_ / "manifest.json", manifest.dump(2) + "\n");
  }

 private:
  // `id` keys the manifest's step_seconds; `what` is the progress line.
  void timed(const std::string& id, const std::string& what, const std::function<void()>& body) {
    auto step_started = std::chrono::steady_clock::now();
    build_.step(what);
    body();
    build_.check_stop();
    step_seconds_[id] = tenths(seconds_since(step_started));
  }

  std::vector<std::string> debootstrap_argv() const {
    return {"debootstrap", "--variant=" + recipe_.variant,
            "--include=" + join(recipe_.packages, ",")};
  }

  void download_packages(const fs::path& tarball) {
    fs::path partial = tarball.string() + fmt::format(".partial-{}", ::getpid());
    auto argv = debootstrap_argv();
    argv.push_back("--make-tarball=" + partial.string());
    argv.insert(argv.end(), {recipe_.suite, (work_ / "download").string(), recipe_.mirror});
    try {
      build_.run(argv, std::chrono::seconds(1200));
    } catch (...) {
      fs::remove(partial);
      throw;
    }
    fs::rename(partial, tarball);
    fs::remove_all(work_ / "download");
  }

  void unpack_packages(const fs::path& tarball) {
    auto argv = debootstrap_argv();
    argv.push_back("--unpack-tarball=" + tarball.string());
    argv.insert(argv.end(), {recipe_.suite, root_.string(), recipe_.mirror});
    build_.run(argv, std::chrono::seconds(1200));
  }

  // The ERNIC verbs provider of this ernicctl, for guests an embedded instance serves through a
  // guest region (the instance-device step points libibverbs at it). Part of the cache key: an
  // image never carries a provider other than the one its instance speaks to.
  void install_verbs_provider() {
    const fs::path from = emu::verbs_library_dir();
    const fs::path to = root_ / fs::path(emu::kGuestVerbsLibraryDir).relative_path();
    for (const char* file : kVerbsProviderFiles) {
      if (!fs::exists(from / file)) {
        build_.note(fmt::format("no {} beside ernicctl: the image has no ERNIC verbs provider",
                                (from / file).string()));
        continue;
      }
      fs::create_directories(to);
      fs::copy_file(from / file, to / file, fs::copy_options::overwrite_existing);
      fs::permissions(to / file, fs::perms(0755));
    }
  }

  void configure_system() {
    write_text(root_ / "etc/hostname", recipe_.hostname + "\n");
    write_text(root_ / "etc/hosts",
               fmt::format("127.0.0.1 localhost\n127.0.1.1 {}\n", recipe_.hostname));
    write_text(root_ / "etc/fstab", "/dev/vda / ext4 rw,relatime 0 1\n");
    // Empty: each boot gets its own machine-id.
    write_text(root_ / "etc/machine-id", "", fs::perms(0444));
    fs::remove(root_ / "var/lib/dbus/machine-id");
    write_limits(root_, recipe_.memlock);
    write_network_config(root_);
    install_verbs_provider();
    // Timers that only cost CPU in a short-lived test guest.
    for (const char* unit : {"apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer",
                             "fstrim.timer", "man-db.timer"}) {
      fs::path mask = root_ / "etc/systemd/system" / unit;
      fs::remove(mask);
      fs::create_symlink("/dev/null", mask);
    }
    build_.run({"chroot", root_.string(), "systemctl", "enable", "systemd-networkd",
                "ernic-net-config.service", "ssh.service"},
               std::chrono::seconds(120));
  }

  // Fresh host keys for this image (never the build host's), and sshd's settings.
  void create_host_keys() {
    for (const auto& entry : fs::directory_iterator(root_ / "etc/ssh")) {
      if (entry.path().filename().string().rfind("ssh_host_", 0) == 0) {
        fs::remove(entry.path());
      }
    }
    for (const char* type : {"ed25519", "ecdsa"}) {
      fs::path key = root_ / "etc/ssh" / fmt::format("ssh_host_{}_key", type);
      build_.run({"ssh-keygen", "-q", "-t", type, "-N", "", "-C", "root@" + recipe_.hostname, "-f",
                  key.string()},
                 std::chrono::seconds(60));
      fs::copy_file(key.string() + ".pub",
                    staging_ / "host_keys" / (key.filename().string() + ".pub"));
      auto keys = parse_public_keys(read_text(key.string() + ".pub"));
      host_keys_.insert(host_keys_.end(), keys.begin(), keys.end());
    }
    write_text(root_ / "etc/ssh/sshd_config.d/50-ernic.conf",
               "HostKey /etc/ssh/ssh_host_ed25519_key\nHostKey /etc/ssh/ssh_host_ecdsa_key\n"
               "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
               "PermitRootLogin prohibit-password\nUseDNS no\n"
               // Benchmarks run long commands over one session: keep it alive.
               "ClientAliveInterval 15\nClientAliveCountMax 8\n");
  }

  // The key ernicctl logs in with, kept next to the image; returns its public half.
  std::string create_user_key() {
    build_.run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ernicctl@" + recipe_.name,
                "-f", (staging_ / "id_ed25519").string()},
               std::chrono::seconds(60));
    return read_text(staging_ / "id_ed25519.pub");
  }

  void create_user(const std::string& public_key) {
    std::vector<std::string> useradd{"chroot",        root_.string(), "useradd",
                                     "--create-home", "--shell",      "/bin/bash"};
    if (recipe_.user_sudo) {
      useradd.insert(useradd.end(), {"--groups", "sudo"});
    }
    useradd.push_back(recipe_.user);
    build_.run(useradd, std::chrono::seconds(60));
    authorize_key(recipe_.user, fs::path("/home") / recipe_.user, public_key);
    if (recipe_.root_login) {
      authorize_key("root", "/root", public_key);
    }
    if (recipe_.user_sudo) {
      write_text(root_ / "etc/sudoers.d/90-ernic", recipe_.user + " ALL=(ALL) NOPASSWD:ALL\n",
                 fs::perms(0440));
    }
  }

  void authorize_key(const std::string& account, const fs::path& home,
                     const std::string& public_key) {
    fs::path ssh_dir = root_ / home.relative_path() / ".ssh";
    write_text(ssh_dir / "authorized_keys", public_key, fs::perms(0600));
    fs::permissions(ssh_dir, fs::perms(0700));
    build_.run({"chroot", root_.string(), "chown", "-R", account + ":", home.string() + "/.ssh"},
               std::chrono::seconds(60));
  }

  // The installed packages with their versions, for the manifest; then what a guest never reads.
  void record_packages() {
    std::string listing =
        build_.run({"chroot", root_.string(), "dpkg-query", "-W", "-f=${Package}\t${Version}\n"},
                   std::chrono::seconds(60));
    std::istringstream lines(listing);
    std::string line;
    while (std::getline(lines, line)) {
      auto tab = line.find('\t');
      if (tab != std::string::npos) {
        packages_[line.substr(0, tab)] = line.substr(tab + 1);
      }
    }
    for (const auto& package : recipe_.packages) {
      if (!packages_.contains(package)) {
        throw std::runtime_error(fmt::format("package {} is not installed in the image", package));
      }
    }
    for (const char* dir :
         {"var/lib/apt/lists", "var/cache/apt", "usr/share/doc", "usr/share/man"}) {
      std::error_code ignored;
      for (const auto& entry : fs::directory_iterator(root_ / dir, ignored)) {
        fs::remove_all(entry.path(), ignored);
      }
    }
  }

  void copy_kernel() {
    fs::copy_file(fs::path("/boot") / ("vmlinuz-" + kernel_version_), staging_ / "vmlinuz");
    fs::copy_file(fs::path("/boot") / ("initrd.img-" + kernel_version_), staging_ / "initrd.img");
    fs::permissions(staging_ / "vmlinuz", fs::perms(0644));
    fs::permissions(staging_ / "initrd.img", fs::perms(0644));
  }

  void make_disk() {
    fs::path raw = work_ / "disk.raw";
    build_.run({"truncate", "-s", std::to_string(recipe_.disk_size), raw.string()},
               std::chrono::seconds(60));
    build_.run({"mkfs.ext4", "-q", "-F", "-L", "ernic-root", "-d", root_.string(), raw.string()},
               std::chrono::seconds(600));
    build_.run(
        {"qemu-img", "convert", "-O", "qcow2", raw.string(), (staging_ / "disk.qcow2").string()},
        std::chrono::seconds(600));
    fs::permissions(staging_ / "disk.qcow2", fs::perms(0644));
  }

  const ImageRecipe& recipe_;
  std::string kernel_version_;
  fs::path out_dir_;
  fs::path staging_;
  fs::path work_;
  fs::path root_;
  Build build_;
  nlohmann::json step_seconds_ = nlohmann::json::object();
  std::vector<HostKey> host_keys_;
  nlohmann::json packages_ = nlohmann::json::object();
};

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

std::string verbs_provider_digest() {
  const fs::path dir = emu::verbs_library_dir();
  std::string digests;
  for (const char* file : kVerbsProviderFiles) {
    if (fs::exists(dir / file)) {
      digests += fmt::format("{}={}\n", file, file_sha256(dir / file));
    }
  }
  return digests.empty() ? "none" : sha256_hex(digests);
}

std::string image_cache_key(const ImageRecipe& recipe, const std::string& kernel_version) {
  return sha256_hex(fmt::format("{}\nkernel={}\n{}\nverbs provider={}", recipe.text, kernel_version,
                                kBuilderVersion, verbs_provider_digest()))
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
  check_build_host();
  fs::path staging = fresh_staging_dir(out_dir, final_dir);
  StagingGuard guard(staging);
  ImageStages stages(recipe, options, kernel_version, out_dir, staging);
  stages.run();
  stages.write_manifest(started);

  if (fs::exists(final_dir)) {
    fs::remove_all(final_dir);  // --force, or an unfinished folder left by an older builder
  }
  fs::rename(staging, final_dir);
  guard.release();
  remove_superseded_images(out_dir, final_dir, recipe);
  result.image = load_image_manifest(final_dir / "manifest.json");
  result.seconds = seconds_since(started);
  return result;
}

}  // namespace ernic
