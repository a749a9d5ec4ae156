// The libvirt provider against libvirt's in-process test driver (no daemon): domains, network,
// pool and overlays are real libvirt objects there, and readiness is checked against a real
// sshd on a loopback address standing in for the guest.
#include "hosts/libvirt/libvirt_provider.h"

#include <fmt/format.h>
#include <libvirt/libvirt.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "base/cleanup_stack.h"
#include "base/config_value.h"
#include "base/local_process.h"
#include "base/subprocess.h"
#include "builtin_platform.h"
#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_readiness.h"
#include "private_home.h"
#include "scenario/platform.h"
#include "scenario/scenario_schema.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

std::string token() {
  std::random_device device;
  return fmt::format("t{:05x}", device() & 0xfffff);
}

void keygen(const fs::path& file) {
  LocalProcessOptions options;
  options.timeout = std::chrono::seconds(60);
  auto result =
      run_local({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", file.string()}, options);
  REQUIRE(result.ok());
}

std::string read(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A throwaway folder with an image manifest whose disk, kernel and keys exist.
struct FakeImage {
  fs::path dir;
  fs::path manifest;

  FakeImage() {
    dir = fs::temp_directory_path() / ("ernic-fake-image-" + token());
    fs::create_directories(dir);
    LocalProcessOptions options;
    options.timeout = std::chrono::seconds(60);
    REQUIRE(
        run_local({"qemu-img", "create", "-q", "-f", "qcow2", (dir / "disk.qcow2").string(), "64M"},
                  options)
            .ok());
    std::ofstream(dir / "vmlinuz") << "kernel";
    std::ofstream(dir / "initrd.img") << "initrd";
    keygen(dir / "id_ed25519");
    keygen(dir / "ssh_host_ed25519_key");
    auto host_key = parse_public_keys(read(dir / "ssh_host_ed25519_key.pub")).at(0);
    nlohmann::json json = {
        {"format", "ernicctl-image/1"},
        {"name", "fake"},
        {"disk", "disk.qcow2"},
        {"disk_size", 64 << 20},
        {"kernel",
         {{"version", "6.1.0-test"},
          {"image", "vmlinuz"},
          {"initrd", "initrd.img"},
          {"cmdline", "console=ttyS0"}}},
        {"user", {{"name", "ernic"}, {"private_key", "id_ed25519"}, {"root_login", true}}},
        {"host_keys", {{{"type", host_key.type}, {"key", host_key.base64}}}},
        {"network", {{"static_arg", "ernic.net"}}},
    };
    manifest = dir / "manifest.json";
    std::ofstream(manifest) << json.dump(2);
  }
  ~FakeImage() { fs::remove_all(dir); }
};

// A real sshd on ADDRESS:22 presenting `host_key`, accepting `authorized` public keys.
struct LoopbackSshd {
  fs::path dir;
  std::unique_ptr<Subprocess> process;

  LoopbackSshd(const std::string& address, const fs::path& host_key, const fs::path& authorized) {
    dir = fs::temp_directory_path() / ("ernic-sshd-" + token());
    fs::create_directories(dir);
    fs::create_directories("/run/sshd");
    fs::copy_file(host_key, dir / "host_key");
    fs::permissions(dir / "host_key", fs::perms(0600));
    fs::copy_file(authorized, dir / "authorized_keys");
    std::ofstream(dir / "sshd_config") << fmt::format(
        "Port 22\nListenAddress {}\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\n"
        "PasswordAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n",
        address, (dir / "host_key").string(), (dir / "sshd.pid").string(),
        (dir / "authorized_keys").string());
    SpawnOptions options;
    options.argv = testing::with_private_home(
        dir / "home", {"/usr/sbin/sshd", "-D", "-e", "-f", (dir / "sshd_config").string()});
    process = Subprocess::spawn(options, nullptr);
    for (int attempt = 0; attempt < 100; ++attempt) {
      if (probe_ssh_banner(address, 22, std::chrono::milliseconds(500)).empty()) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL("sshd did not start: " << process->stderr_text());
  }
  ~LoopbackSshd() {
    process->terminate(std::chrono::milliseconds(2000));
    fs::remove_all(dir);
  }
};

// A host entry as the loader types it: the keys every host has (`instance`, ...) and libvirt's.
Config host_entry(const std::string& yaml) {
  static const ObjectSchema schema = host_schema_for(builtin_platform(), LibvirtProvider());
  return make_config(YAML::Load(yaml), schema, "s.yaml", "hosts[0]");
}

// The scenario's top level as the loader types it.
Config scenario_settings(const std::string& yaml) {
  return make_config(YAML::Load(yaml), top_level_schema(builtin_platform()), "s.yaml", "");
}

std::string schema_errors(const std::string& yaml) {
  Diagnostics problems;
  validate(YAML::Load(yaml), libvirt_host_schema(), "s.yaml", "hosts[0]", problems);
  std::string text;
  for (const auto& problem : problems) {
    text += problem.path + ": " + problem.message + "\n";
  }
  return text;
}

HostSpec guest(const std::string& name, const fs::path& manifest, const std::string& ssh_timeout) {
  HostSpec spec;
  spec.name = name;
  spec.provider = "libvirt";
  spec.config = host_entry(
      fmt::format("{{name: {}, provider: libvirt, libvirt: {{uri: 'test:///default', image: {}, "
                  "timeouts: {{running: 5s, ssh: {}, host_key: 10s}}}}}}",
                  name, manifest.string(), ssh_timeout));
  return spec;
}

struct Run {
  std::string run_token = token();
  fs::path run_dir = fs::temp_directory_path() / ("ernic-libvirt-run-" + run_token);
  CleanupStack cleanup;
  ProviderContext context;

  explicit Run(const std::string& subnet) {
    fs::create_directories(run_dir);
    context.run_dir = run_dir;
    context.run_token = run_token;
    context.scenario = scenario_settings(fmt::format(
        "libvirt: {{network: {{subnet: {}}}, pool_dir: {}}}", subnet, (run_dir / "pool").string()));
    context.cleanup = &cleanup;
  }
  ~Run() {
    cleanup.run_all();
    fs::remove_all(run_dir);
  }

  // The run's libvirt objects that exist on the test driver.
  std::vector<std::string> objects() const {
    LibvirtConnection connection("test:///default");
    std::vector<std::string> found;
    std::string network = "ernic-" + run_token;
    if (virNetworkPtr net = virNetworkLookupByName(connection.get(), network.c_str())) {
      found.push_back("network");
      virNetworkFree(net);
    }
    if (virStoragePoolPtr pool = virStoragePoolLookupByName(connection.get(), network.c_str())) {
      found.push_back("pool");
      virStoragePoolFree(pool);
    }
    for (const char* name : {"g1", "g2"}) {
      std::string domain = network + "-" + name;
      if (virDomainPtr found_domain = virDomainLookupByName(connection.get(), domain.c_str())) {
        found.push_back(std::string("domain ") + name);
        virDomainFree(found_domain);
      }
    }
    return found;
  }
};

TEST_CASE("guest addresses: given ones are kept, the rest count up from .10", "[libvirt]") {
  CHECK(assign_guest_addresses({"", "", ""}, "192.168.77.0/24") ==
        std::vector<std::string>{"192.168.77.10", "192.168.77.11", "192.168.77.12"});
  CHECK(assign_guest_addresses({"", "192.168.77.10", ""}, "192.168.77.0/24") ==
        std::vector<std::string>{"192.168.77.11", "192.168.77.10", "192.168.77.12"});
  CHECK_THROWS_WITH(assign_guest_addresses({"10.0.0.5"}, "192.168.77.0/24"),
                    Catch::Contains("outside the guests' subnet"));
  CHECK_THROWS_WITH(assign_guest_addresses(std::vector<std::string>(7, ""), "192.168.77.0/28"),
                    Catch::Contains("no room"));
  CHECK_THROWS_WITH(assign_guest_addresses({""}, "192.168.77.0"), Catch::Contains("not a subnet"));
}

TEST_CASE("host entries are parsed with errors naming the host and key", "[libvirt]") {
  HostSpec spec;
  spec.name = "g1";
  spec.config =
      host_entry("{libvirt: {vcpus: 2, memory: 2GiB, image: images/x.yaml, timeouts: {ssh: 5m}}}");
  auto config = parse_libvirt_guest(spec, "/scenarios");
  CHECK(config.vcpus == 2);
  CHECK(config.memory_mib == 2048);
  CHECK(config.image == "/scenarios/images/x.yaml");
  CHECK(config.timeouts.ssh == std::chrono::seconds(300));
  CHECK(config.uri == "qemu:///system");

  CHECK(config.timeouts.running == std::chrono::seconds(60));  // the default

  // What the schema can say, the schema says, located; the provider checks the rest.
  spec.config = host_entry("{libvirt: {memory: 12}}");
  CHECK_THROWS_WITH(parse_libvirt_guest(spec, "."),
                    Catch::Contains("hosts.g1.libvirt.memory: expected a size of at least 128MiB"));
  CHECK_THAT(schema_errors("{libvirt: {vcpu: 2}}"),
             Catch::Contains("hosts[0].libvirt.vcpu: unknown key 'vcpu'; did you mean 'vcpus'?"));
  CHECK_THAT(schema_errors("{libvirt: {accelerator: hvf}}"),
             Catch::Contains("hosts[0].libvirt.accelerator: expected one of auto, kvm, tcg"));
  CHECK_THAT(schema_errors("{libvirt: {timeouts: {boot: 5s}}}"),
             Catch::Contains("hosts[0].libvirt.timeouts.boot: unknown key 'boot'"));
}

TEST_CASE(
    "a guest whose sshd never answers fails in stage 'ssh', and teardown removes its "
    "domain, overlay, pool and network",
    "[libvirt]") {
  FakeImage image;
  Run run("127.77.1.0/24");  // loopback: nothing listens there, nothing leaves the machine
  LibvirtProvider provider;
  CHECK_THROWS_WITH(
      provider.create({guest("g1", image.manifest, "2s"), guest("g2", image.manifest, "2s")},
                      run.context),
      Catch::Contains("g1: readiness stage 'ssh' failed") && Catch::Contains("127.77.1.10:22") &&
          Catch::Contains("timeout 2 s"));
  CHECK(run.objects() == std::vector<std::string>{"network", "pool", "domain g1", "domain g2"});
  // The domain generated for g1 carries its static address for the image's network unit.
  CHECK(read(run.run_dir / "g1.domain.xml").find("ernic.net=127.77.1.10/24") != std::string::npos);
  CHECK(run.cleanup.size() == 8);  // network, pool, 2 x (overlay, undefine, destroy)
  std::vector<std::string> errors;
  run.cleanup.run_all([&](const std::string& what, const std::string& why) {
    errors.push_back(what + ": " + why);
  });
  CHECK(errors.empty());
  CHECK(run.objects().empty());
}

TEST_CASE(
    "a guest presenting the image's host key is ready; T_init and the accelerator are "
    "recorded",
    "[libvirt]") {
  REQUIRE(::geteuid() == 0);
  FakeImage image;
  LoopbackSshd sshd("127.77.2.10", image.dir / "ssh_host_ed25519_key",
                    image.dir / "id_ed25519.pub");
  Run run("127.77.2.0/24");
  LibvirtProvider provider;
  auto hosts = provider.create({guest("g1", image.manifest, "10s")}, run.context);
  REQUIRE(hosts.size() == 1);
  auto* guest_host = dynamic_cast<LibvirtGuest*>(hosts[0].get());
  REQUIRE(guest_host != nullptr);
  CHECK(guest_host->address() == "127.77.2.10");
  CHECK(guest_host->t_init_s() > 0);
  CHECK(guest_host->facts().at("accelerator") == "tcg");
  CHECK(guest_host->facts().at("domain") == "ernic-" + run.run_token + "-g1");
  CHECK(guest_host->ssh_target().user == "root");
  CHECK(guest_host->check_alive().empty());
  auto known_hosts = read(guest_host->ssh_target().known_hosts);
  CHECK(known_hosts.find("127.77.2.10 ssh-ed25519 ") == 0);
  // Commands go over SSH (SshHost, strict against the image's host keys) to the "guest".
  auto result = guest_host->run(CommandSpec{{"sh", "-c", "echo from-guest; exit 3"}, {}, {}});
  CHECK(result.exit_code == 3);
  CHECK(result.out == "from-guest\n");
  run.cleanup.run_all();
  CHECK(run.objects().empty());
  CHECK_FALSE(guest_host->check_alive().empty());
}

TEST_CASE("a guest presenting another host key fails in stage 'host_key' at once", "[libvirt]") {
  REQUIRE(::geteuid() == 0);
  FakeImage image;
  keygen(image.dir / "impostor_key");
  LoopbackSshd sshd("127.77.3.10", image.dir / "impostor_key", image.dir / "id_ed25519.pub");
  Run run("127.77.3.0/24");
  LibvirtProvider provider;
  auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(provider.create({guest("g1", image.manifest, "10s")}, run.context),
                    Catch::Contains("stage 'host_key'") && Catch::Contains("HOST KEY MISMATCH"));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(8));
}

TEST_CASE("dry run lists the network, overlays, domains and readiness stages", "[libvirt]") {
  FakeImage image;
  Run run("192.168.77.0/24");
  LibvirtProvider provider;
  auto lines = provider.describe({guest("g1", image.manifest, "10s")}, run.context);
  std::string text;
  for (const auto& line : lines) {
    text += line + "\n";
  }
  CHECK(text.find("net-create") != std::string::npos);
  CHECK(text.find("192.168.77.10") != std::string::npos);
  CHECK(text.find("running <= 5s") != std::string::npos);
  CHECK(run.objects().empty());  // describing creates nothing
}

}  // namespace
}  // namespace ernic
