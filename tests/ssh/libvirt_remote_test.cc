// A "remote" libvirt host: the real qemu:///system daemon reached through qemu+ssh:// and a
// test sshd on a loopback port, so every call goes over the SSH transport exactly as it would to
// another machine (libvirt's test driver has no volume upload). Being this machine, what
// arrived "there" can be checked on disk. Needs root, libvirt-daemon-system and qemu.
#include <fmt/format.h>
#include <libvirt/libvirt.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "base/cleanup_stack.h"
#include "base/config_value.h"
#include "builtin_platform.h"
#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_handles.h"
#include "hosts/libvirt/libvirt_image_upload.h"
#include "hosts/libvirt/libvirt_provider.h"
#include "image/image_digest.h"
#include "scenario/platform.h"
#include "scenario/scenario_schema.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

std::string hex_token() {
  std::random_device device;
  return fmt::format("{:06x}", device() & 0xffffff);
}

void write_random_file(const fs::path& file, std::size_t bytes) {
  std::mt19937_64 random(std::random_device{}());
  std::ofstream out(file, std::ios::binary);
  for (std::size_t i = 0; i < bytes; i += 8) {
    std::uint64_t word = random();
    out.write(reinterpret_cast<const char*>(&word), 8);
  }
}

// qemu:///system (started when absent, stopped after when this started it) behind a loopback
// sshd; `uri` reaches it with the sshd's client key and known_hosts, nothing of root's ~/.ssh.
struct RemoteLibvirtHost {
  LibvirtDaemons daemons;
  testing::SshdServer sshd{testing::SshdOptions{}};
  std::string uri;
  ImageCacheOptions cache;
  std::vector<std::string> lines;

  RemoteLibvirtHost() {
    daemons.ensure_running(std::chrono::seconds(60));
    fs::path ssh = sshd.directory() / "ssh-for-libvirt";
    std::ofstream(ssh) << fmt::format(
        "#!/bin/sh\nexec ssh -F /dev/null -o UserKnownHostsFile={} -o StrictHostKeyChecking=yes "
        "-o BatchMode=yes -o ConnectTimeout=5 \"$@\"\n",
        sshd.known_hosts_file().string());
    fs::permissions(ssh, fs::perms::owner_all);
    uri = remote_uri(sshd.port());
    std::string pool = "ernic-images-t" + std::to_string(::getpid());
    cache.pool = pool;
    cache.dir = fs::path("/var/lib/libvirt/images") / pool;
    cache.run_token = hex_token();
    cache.progress = [this](const std::string& line) { lines.push_back(line); };
  }
  ~RemoteLibvirtHost() {
    remove_pool(cache.pool);
    daemons.stop_started();
  }

  std::string remote_uri(int port) const {
    // known_hosts= for ernicctl's own login to the libvirt host (down's guest region scan).
    return fmt::format("qemu+ssh://root@127.0.0.1:{}/system?command={}&keyfile={}&known_hosts={}",
                       port, (sshd.directory() / "ssh-for-libvirt").string(),
                       sshd.client_key().string(), sshd.known_hosts_file().string());
  }

  std::size_t lines_with(const std::string& text) const {
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const auto& l) {
      return l.find(text) != std::string::npos;
    }));
  }

  // Volumes of a pool, by name, through this machine's daemon.
  static std::vector<std::string> volumes(const std::string& pool_name) {
    LibvirtConnection local("qemu:///system");
    StoragePoolHandle pool = lookup_storage_pool(local.get(), pool_name);
    std::vector<std::string> names;
    if (!pool) {
      return names;
    }
    virStoragePoolRefresh(pool.get(), 0);
    virStorageVolPtr* found = nullptr;
    int count = virStoragePoolListAllVolumes(pool.get(), &found, 0);
    for (int i = 0; i < count; ++i) {
      StorageVolumeHandle volume(found[i]);
      names.push_back(virStorageVolGetName(volume.get()));
    }
    std::free(found);
    return names;
  }

  static std::set<std::string> volume_set(const std::string& pool_name) {
    auto names = volumes(pool_name);
    return {names.begin(), names.end()};
  }

  static void remove_pool(const std::string& pool_name) {
    LibvirtConnection local("qemu:///system");
    StoragePoolHandle pool = lookup_storage_pool(local.get(), pool_name);
    if (!pool) {
      return;
    }
    for (const auto& name : volumes(pool_name)) {
      if (StorageVolumeHandle volume = lookup_storage_volume(pool.get(), name)) {
        virStorageVolDelete(volume.get(), 0);
      }
    }
    virStoragePoolDestroy(pool.get());
    virStoragePoolDelete(pool.get(), 0);
    virStoragePoolUndefine(pool.get());
  }
};

TEST_CASE(
    "a file goes to a remote host's cache pool once, checked; a damaged copy is replaced and an "
    "interrupted upload never takes the final name",
    "[libvirt-remote]") {
  REQUIRE(::geteuid() == 0);
  RemoteLibvirtHost host;
  fs::path file = host.sshd.directory() / "disk.qcow2";
  write_random_file(file, (5 << 20) + 4096);
  std::string digest = file_sha256(file);
  auto connection = std::make_shared<LibvirtConnection>(host.uri);
  CleanupStack cleanup;
  host.cache.cleanup = &cleanup;
  ensure_image_cache_pool(connection->get(), host.cache);

  auto first = cache_file_remotely(connection, file, host.cache);
  CHECK(first.uploaded);
  CHECK(first.name == digest + "-disk.qcow2");
  CHECK(first.remote_path == host.cache.dir / first.name);
  CHECK(file_sha256(first.remote_path) == digest);  // "there" is this machine's disk
  CHECK(host.lines_with("uploaded to") == 1);
  CHECK(host.lines_with("uploading disk.qcow2") > 0);  // progress lines on the way
  auto verified = std::set<std::string>{first.name, verified_marker_name(first.name)};
  CHECK(RemoteLibvirtHost::volume_set(host.cache.pool) == verified);
  // The digest is remembered beside the file, for the size and time it was computed for.
  CHECK(fs::exists(file.string() + ".sha256"));

  host.lines.clear();
  auto second = cache_file_remotely(connection, file, host.cache);
  CHECK_FALSE(second.uploaded);
  CHECK(second.remote_path == first.remote_path);
  CHECK(host.lines_with("cached on") == 1);
  CHECK(host.lines_with("uploading") == 0);

  SECTION("a copy with the right size but an unwritten end is replaced") {
    {
      std::fstream damaged(first.remote_path, std::ios::in | std::ios::out | std::ios::binary);
      damaged.seekp(-4096, std::ios::end);
      damaged.write(std::string(4096, '\0').data(), 4096);
    }
    REQUIRE(file_sha256(first.remote_path) != digest);
    host.lines.clear();
    auto again = cache_file_remotely(connection, file, host.cache);
    CHECK(again.uploaded);
    CHECK(host.lines_with("replacing it") == 1);
    CHECK(file_sha256(again.remote_path) == digest);
  }
  SECTION("a truncated copy is replaced") {
    fs::resize_file(first.remote_path, 1 << 20);
    host.lines.clear();
    auto again = cache_file_remotely(connection, file, host.cache);
    CHECK(again.uploaded);
    CHECK(host.lines_with("1048576 bytes instead of") == 1);
    CHECK(file_sha256(again.remote_path) == digest);
  }
  SECTION("an upload stopped by Ctrl-C is never taken for a cached image") {
    fs::path other = host.sshd.directory() / "vmlinuz";
    write_random_file(other, 4 << 20);
    std::string name = file_sha256(other) + "-vmlinuz";
    std::string claim = upload_claim_name(name, host.cache.run_token);
    int chunks = 0;
    host.cache.stopped = [&] { return ++chunks > 2; };
    CHECK_THROWS_WITH(cache_file_remotely(connection, other, host.cache),
                      Catch::Contains("interrupted") && Catch::Contains("vmlinuz"));
    auto left = RemoteLibvirtHost::volume_set(host.cache.pool);
    CHECK(left.count(claim) == 1);
    CHECK(left.count(verified_marker_name(name)) == 0);
    SECTION("teardown removes the unfinished upload") {
      cleanup.run_all();
      CHECK(RemoteLibvirtHost::volume_set(host.cache.pool) == verified);
    }
    SECTION("the next run (the first one killed) uploads it again") {
      host.cache.stopped = nullptr;
      host.lines.clear();
      auto again = cache_file_remotely(connection, other, host.cache);
      CHECK(again.uploaded);
      CHECK(host.lines_with("never verified") == 1);
      CHECK(file_sha256(again.remote_path) == file_sha256(other));
      cleanup.run_all();  // the first attempt's undo leaves the verified upload alone
      verified.insert({name, verified_marker_name(name)});
      CHECK(RemoteLibvirtHost::volume_set(host.cache.pool) == verified);
    }
  }
}

Config scenario_top_level(const std::string& yaml) {
  return make_config(YAML::Load(yaml), top_level_schema(builtin_platform()), "s.yaml", "");
}

TEST_CASE(
    "guests on a remote URI use the image uploaded there, and teardown leaves nothing but the "
    "image cache pool",
    "[libvirt-remote]") {
  REQUIRE(::geteuid() == 0);
  RemoteLibvirtHost host;
  fs::path image = host.sshd.directory() / "image";
  fs::create_directories(image);
  testing::run_checked(
      {"qemu-img", "create", "-q", "-f", "qcow2", (image / "disk.qcow2").string(), "64M"});
  std::ofstream(image / "vmlinuz") << "not a kernel: QEMU refuses to start the domain";
  std::ofstream(image / "initrd.img") << "initrd";
  testing::run_checked(
      {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", (image / "id_ed25519").string()});
  testing::run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        (image / "ssh_host_ed25519_key").string()});
  std::ifstream host_key_file(image / "ssh_host_ed25519_key.pub");
  std::string key_type;
  std::string key;
  host_key_file >> key_type >> key;
  nlohmann::json manifest = {
      {"host_keys", {{{"type", key_type}, {"key", key}}}},
      {"format", "ernicctl-image/1"},
      {"name", "fake"},
      {"disk", "disk.qcow2"},
      {"kernel", {{"version", "6.1.0-test"}, {"image", "vmlinuz"}, {"initrd", "initrd.img"}}},
      {"user", {{"name", "ernic"}, {"private_key", "id_ed25519"}, {"root_login", true}}},
      {"network", {{"static_arg", "ernic.net"}}},
  };
  std::ofstream(image / "manifest.json") << manifest.dump(2);
  bool cache_existed =
      bool(lookup_storage_pool(LibvirtConnection("qemu:///system").get(), kImageCachePool));
  std::vector<std::string> cached_before = RemoteLibvirtHost::volumes(kImageCachePool);

  std::string token = hex_token();
  fs::path run_dir = host.sshd.directory() / "run";
  fs::create_directories(run_dir);
  CleanupStack cleanup;
  ProviderContext context;
  context.run_dir = run_dir;
  context.run_token = token;
  context.scenario = scenario_top_level("libvirt: {network: {subnet: 192.168.249.0/24}}");
  context.cleanup = &cleanup;
  HostSpec guest;
  guest.name = "g1";
  guest.provider = "libvirt";
  guest.config = make_config(
      YAML::Load(fmt::format("{{libvirt: {{uri: '{}', image: {}, accelerator: tcg, timeouts: "
                             "{{running: 20s, ssh: 3s}}}}}}",
                             host.uri, (image / "manifest.json").string())),
      host_schema_for(builtin_platform(), LibvirtProvider()), "s.yaml", "hosts[0]");
  LibvirtProvider provider;
  std::vector<std::string> said;
  provider.set_progress([&](const std::string& line) { said.push_back(line); });
  std::string failure;
  try {
    provider.create({guest}, context);
  } catch (const std::exception& error) {
    failure = error.what();
  }
  std::string text;
  for (const auto& line : said) {
    text += line + "\n";
  }
  INFO(text << failure);
  CHECK_THAT(failure, Catch::Contains("domain"));  // the fake kernel does not boot
  // The domain was defined with the kernel and initrd of the cache pool, its overlay backed by
  // the disk there.
  std::ifstream xml_file(run_dir / "g1.domain.xml");
  std::string xml((std::istreambuf_iterator<char>(xml_file)), std::istreambuf_iterator<char>());
  fs::path cache_dir = kImageCacheDir;
  CHECK(xml.find("<kernel>" + (cache_dir / (file_sha256(image / "vmlinuz") + "-vmlinuz")).string() +
                 "</kernel>") != std::string::npos);
  CHECK(xml.find((cache_dir / (file_sha256(image / "initrd.img") + "-initrd.img")).string()) !=
        std::string::npos);
  CHECK(text.find("disk.qcow2 (0 MiB) uploaded to") != std::string::npos);
  auto cached = RemoteLibvirtHost::volumes(kImageCachePool);
  std::string disk_volume = file_sha256(image / "disk.qcow2") + "-disk.qcow2";
  CHECK(std::count(cached.begin(), cached.end(), disk_volume) == 1);
  // The copy there is the qcow2 byte for byte (copied into the final name, not converted).
  CHECK(file_sha256(cache_dir / disk_volume) == file_sha256(image / "disk.qcow2"));

  cleanup.run_all();
  LibvirtConnection local("qemu:///system");
  std::string name = "ernic-" + token;
  CHECK_FALSE(lookup_domain(local.get(), name + "-g1"));
  CHECK_FALSE(lookup_network(local.get(), name));
  CHECK_FALSE(lookup_storage_pool(local.get(), name));
  CHECK_FALSE(fs::exists(fs::path("/var/lib/libvirt/images") / name));
  // The cache stays, with what was uploaded and no temporary volume.
  cached = RemoteLibvirtHost::volumes(kImageCachePool);
  CHECK(std::count(cached.begin(), cached.end(), disk_volume) == 1);
  CHECK(std::none_of(cached.begin(), cached.end(), [&](const std::string& volume) {
    return !upload_claim_token(volume).empty();
  }));

  // What this test put into the shared cache goes again.
  if (!cache_existed) {
    RemoteLibvirtHost::remove_pool(kImageCachePool);
  } else if (StoragePoolHandle pool = lookup_storage_pool(local.get(), kImageCachePool)) {
    for (const auto& volume : cached) {
      if (std::count(cached_before.begin(), cached_before.end(), volume) == 0) {
        if (StorageVolumeHandle added = lookup_storage_volume(pool.get(), volume)) {
          virStorageVolDelete(added.get(), 0);
        }
      }
    }
  }
}

TEST_CASE(
    "down removes a leftover domain and unfinished upload on the remote URIs the state names, and "
    "names an unreachable one",
    "[libvirt-remote]") {
  REQUIRE(::geteuid() == 0);
  RemoteLibvirtHost host;
  std::string token = hex_token();
  std::string domain = fmt::format("ernic-{}-g1", token);
  auto remote = std::make_shared<LibvirtConnection>(host.uri);
  std::string xml = fmt::format(
      "<domain type='qemu'><name>{}</name><memory unit='MiB'>64</memory><os><type "
      "arch='x86_64'>hvm</type></os></domain>",
      domain);
  REQUIRE(DomainHandle(virDomainDefineXML(remote->get(), xml.c_str())));
  ImageCacheOptions shared;  // the real cache pool's name, which down looks in
  bool cache_existed = bool(lookup_storage_pool(remote->get(), kImageCachePool));
  ensure_image_cache_pool(remote->get(), shared);
  // What a run killed in the middle of an upload leaves: the volume, unverified, and its claim.
  std::string unfinished = "0000-disk.qcow2";
  std::string claim = upload_claim_name(unfinished, token);
  StoragePoolHandle pool = lookup_storage_pool(remote->get(), kImageCachePool);
  for (const auto& name : {unfinished, claim}) {
    std::string volume_xml =
        fmt::format("<volume><name>{}</name><capacity unit='bytes'>4096</capacity></volume>", name);
    REQUIRE(StorageVolumeHandle(virStorageVolCreateXML(pool.get(), volume_xml.c_str(), 0)));
  }

  fs::path state_dir = host.sshd.directory() / "state";
  fs::create_directories(state_dir);
  std::string unreachable = host.remote_uri(1);  // nothing listens on port 1
  nlohmann::json state = {
      {"run_token", token},
      {"hosts",
       {{{"name", "g1"},
         {"provider", "libvirt"},
         {"facts", {{"uri", host.uri}, {"domain", domain}}}},
        {{"name", "g2"},
         {"provider", "libvirt"},
         {"facts", {{"uri", unreachable}, {"domain", domain}}}}}},
  };
  std::ofstream(state_dir / "up.json") << state.dump(2);
  // A guest region an instance placed on the remote host made there (this machine stands for
  // it); down runs with a /dev/shm of its own, so only the remote scan can find it.
  const fs::path region = fmt::format("/dev/shm/ernic-{}-i1", token);
  std::ofstream(region) << "region";
  std::string output;
  int status = testing::run_program(
      {"unshare", "--mount", "--propagation", "private", "sh", "-c",
       "mount -t tmpfs -o size=1m ernic-controller-shm /dev/shm && exec \"$0\" \"$@\"",
       ERNIC_BINARY, "down", "--state-dir", state_dir.string()},
      &output);
  INFO(output);
  CHECK(status == 1);
  CHECK(output.find("removed remote file " + region.string() + " on " + host.uri) !=
        std::string::npos);
  CHECK_FALSE(fs::exists(region));
  CHECK(output.find("error: libvirt at " + unreachable + " not reachable") != std::string::npos);
  CHECK(output.find("removed domain " + domain + " on " + host.uri) != std::string::npos);
  CHECK(output.find("removed volume ernic-images/" + claim) != std::string::npos);
  CHECK_FALSE(lookup_domain(remote->get(), domain));
  auto left = RemoteLibvirtHost::volumes(kImageCachePool);
  CHECK(std::count(left.begin(), left.end(), claim) == 0);
  CHECK(std::count(left.begin(), left.end(), unfinished) == 0);
  CHECK(fs::exists(state_dir / "up.json"));  // kept: the next down tries g2's host again

  state["hosts"].erase(1);
  std::ofstream(state_dir / "up.json") << state.dump(2);
  std::string second;
  status = testing::run_program({ERNIC_BINARY, "down", "--state-dir", state_dir.string()}, &second);
  INFO("the second down:\n" << second);
  CHECK(status == 0);
  CHECK_FALSE(fs::exists(state_dir / "up.json"));
  if (!cache_existed) {
    RemoteLibvirtHost::remove_pool(kImageCachePool);
  }
}

// Not a test: the figures docs/guests.md gives for the real image (run by hand with
// `ssh_tests "[.upload-timing]"` after `ernicctl image build`).
TEST_CASE("upload timing of the cached guest image over loopback ssh", "[.upload-timing]") {
  RemoteLibvirtHost host;
  fs::path images = "/var/cache/ernicctl/images";
  fs::path disk;
  for (const auto& entry : fs::directory_iterator(images)) {
    if (fs::exists(entry.path() / "disk.qcow2")) {
      disk = entry.path() / "disk.qcow2";
    }
  }
  REQUIRE_FALSE(disk.empty());
  auto start = std::chrono::steady_clock::now();
  file_sha256(disk);  // what the first run with this image pays once
  double hash_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto connection = std::make_shared<LibvirtConnection>(host.uri);
  ensure_image_cache_pool(connection->get(), host.cache);
  start = std::chrono::steady_clock::now();
  auto first = cache_file_remotely(connection, disk, host.cache);
  double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  auto second = cache_file_remotely(connection, disk, host.cache);
  double second_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& line : host.lines) {
    std::cout << line << "\n";
  }
  std::cout << fmt::format(
      "{} ({} bytes): hash {:.1f} s; first {:.1f} s (upload {:.1f}, read back {:.1f}, the "
      "rest {:.1f}); cached {:.2f} s\n",
      disk.string(), fs::file_size(disk), hash_s, first_s, first.upload_seconds,
      first.verify_seconds, first_s - first.upload_seconds - first.verify_seconds, second_s);
  CHECK(first.uploaded);
  CHECK_FALSE(second.uploaded);
}

}  // namespace
}  // namespace ernic
