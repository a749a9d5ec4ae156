// The provider's libvirt resources on libvirt's in-process test driver: each pushes its undo
// the moment it exists, the undo removes exactly it, and `ernicctl status` reads a domain's
// condition through the provider.
#include "hosts/libvirt/libvirt_resources.h"

#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "base/local_process.h"
#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_handles.h"
#include "hosts/libvirt/libvirt_provider.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

struct TestDriverRun {
  static inline int runs = 0;
  LibvirtConnectionPtr connection = std::make_shared<LibvirtConnection>("test:///default");
  // The test driver lives in this process: its pid and a count make names no other test uses.
  std::string name = fmt::format("ernic-r{}-{}", ::getpid(), ++runs);
  fs::path dir = fs::temp_directory_path() / (name + "-resources");
  CleanupStack cleanup;

  TestDriverRun() {
    fs::create_directories(dir);
    LocalProcessOptions options;
    options.timeout = std::chrono::seconds(60);
    REQUIRE(
        run_local({"qemu-img", "create", "-q", "-f", "qcow2", (dir / "base.qcow2").string(), "64M"},
                  options)
            .ok());
  }
  ~TestDriverRun() {
    cleanup.run_all();
    fs::remove_all(dir);
  }
  NetworkSpec network() const { return {name, name.substr(0, 15), "192.168.78.1", 24, "", ""}; }
  std::string condition(const std::string& domain) const {
    LibvirtProvider provider;
    return provider.host_condition({{"domain", domain}, {"uri", "test:///default"}});
  }
};

TEST_CASE("network, pool, overlay and domain each push their undo as they appear", "[libvirt]") {
  TestDriverRun run;
  virConnectPtr libvirt = run.connection->get();
  create_network(run.connection, run.network(), "192.168.78.0/24", run.cleanup);
  CHECK(run.cleanup.size() == 1);
  CHECK(lookup_network(libvirt, run.name) != nullptr);

  fs::path pool_dir = run.dir / "pool";
  create_storage_pool(run.connection, run.name, pool_dir, run.cleanup);
  CHECK(run.cleanup.size() == 2);
  StoragePoolHandle pool = lookup_storage_pool(libvirt, run.name);
  REQUIRE(pool != nullptr);
  CHECK(virStoragePoolIsActive(pool.get()) == 1);

  OverlaySpec overlay{.guest = "g1",
                      .pool = run.name,
                      .pool_dir = pool_dir,
                      .volume = "g1.qcow2",
                      .base = run.dir / "base.qcow2",
                      .base_format = "qcow2",
                      .capacity_bytes = 64 << 20};
  create_overlay(run.connection, overlay, run.cleanup);
  CHECK(run.cleanup.size() == 3);
  CHECK(lookup_storage_volume(pool.get(), "g1.qcow2") != nullptr);

  DomainSpec spec;
  spec.name = run.name + "-g1";
  spec.disk = pool_dir / "g1.qcow2";
  spec.network = run.name;
  spec.serial_log = run.dir / "g1.serial.log";
  std::string xml = domain_xml(spec);
  auto before = std::chrono::steady_clock::now();
  auto started = define_and_start_domain(run.connection, "g1", spec.name, xml, run.cleanup);
  CHECK(started >= before);
  CHECK(run.cleanup.size() == 5);  // undefine, then destroy
  CHECK(domain_state(libvirt, spec.name) == VIR_DOMAIN_RUNNING);
  CHECK(run.condition(spec.name) == "up");

  // A second domain of the same name is refused before anything is pushed.
  CHECK_THROWS_WITH(define_and_start_domain(run.connection, "g1", spec.name, xml, run.cleanup),
                    Catch::Contains("already exists"));
  CHECK(run.cleanup.size() == 5);

  DomainHandle domain = lookup_domain(libvirt, spec.name);
  REQUIRE(virDomainDestroy(domain.get()) == 0);
  CHECK(run.condition(spec.name) == "stopped");
  CHECK(std::string(domain_state_name(domain_state(libvirt, spec.name))) == "shut off");

  std::vector<std::string> errors;
  run.cleanup.run_all([&](const std::string& what, const std::string& why) {
    errors.push_back(what + ": " + why);
  });
  CHECK(errors.empty());
  CHECK(run.condition(spec.name) == "gone");
  CHECK(domain_state(libvirt, spec.name) == -1);
  CHECK(lookup_storage_pool(libvirt, run.name) == nullptr);
  CHECK(lookup_network(libvirt, run.name) == nullptr);
}

TEST_CASE("a resource libvirt refuses is an error naming it, with no undo pushed", "[libvirt]") {
  TestDriverRun run;
  create_network(run.connection, run.network(), "192.168.78.0/24", run.cleanup);
  CHECK_THROWS_WITH(create_network(run.connection, run.network(), "192.168.78.0/24", run.cleanup),
                    Catch::Contains("cannot create libvirt network " + run.name) &&
                        Catch::Contains("192.168.78.0/24"));
  OverlaySpec no_pool{.guest = "g1", .pool = run.name, .volume = "g1.qcow2"};
  CHECK_THROWS_WITH(create_overlay(run.connection, no_pool, run.cleanup),
                    Catch::Contains("hosts.g1: cannot create the overlay"));
  DomainSpec spec;
  spec.name = run.name + "-g1";
  spec.disk = run.dir / "missing.qcow2";
  spec.network = run.name;
  std::string bad_xml = domain_xml(spec) + "<garbage";
  CHECK_THROWS_WITH(define_and_start_domain(run.connection, "g1", spec.name, bad_xml, run.cleanup),
                    Catch::Contains("hosts.g1: libvirt rejected domain " + spec.name));
  CHECK(run.cleanup.size() == 1);  // the network alone
}

TEST_CASE("a guest's condition is unknown without its domain or without libvirt", "[libvirt]") {
  LibvirtProvider provider;
  CHECK(provider.host_condition({}) == "unknown");
  CHECK(provider.host_condition({{"domain", "x"}, {"uri", "nosuchdriver:///x"}}) == "unknown");
}

}  // namespace
}  // namespace ernic
