#include "hosts/libvirt/libvirt_domain.h"

#include <fmt/format.h>
#include <libvirt/libvirt.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/local_process.h"
#include "hosts/libvirt/libvirt_connection.h"

namespace ernic {
namespace {

DomainSpec base_spec() {
  DomainSpec spec;
  spec.name = "ernic-t1-g1";
  spec.vcpus = 2;
  spec.memory_mib = 1024;
  spec.disk = "/var/lib/ernic/run/g1.qcow2";
  spec.kernel = "/var/cache/ernicctl/images/x/vmlinuz";
  spec.initrd = "/var/cache/ernicctl/images/x/initrd.img";
  spec.kernel_cmdline = "console=ttyS0 root=/dev/vda rw ernic.net=192.168.77.10/24";
  spec.network = "ernic-t1";
  spec.mac = guest_mac("t1", 0);
  spec.serial_log = "/var/lib/ernic/run/g1.serial.log";
  return spec;
}

// Every variant the provider can generate, by name.
std::map<std::string, DomainSpec> variants() {
  std::map<std::string, DomainSpec> all;
  all["tcg-network-kernel"] = base_spec();
  auto kvm = base_spec();
  kvm.accelerator = Accelerator::kKvm;
  all["kvm"] = kvm;
  auto bridge = base_spec();
  bridge.network.clear();
  bridge.bridge = "ernicbr0";
  all["bridge"] = bridge;
  auto disk_boot = base_spec();
  disk_boot.kernel.clear();
  disk_boot.initrd.clear();
  disk_boot.kernel_cmdline.clear();
  all["disk-boot"] = disk_boot;
  auto emulator = base_spec();
  emulator.vfio_user_socket = "/run/ernic/instance-1.sock";
  all["vfio-user"] = emulator;
  auto shared = base_spec();
  shared.shared_memory = true;
  all["shared-memory"] = shared;
  auto region = base_spec();
  region.guest_region = "ernic-abc123-i1";
  region.guest_region_mib = 128;
  all["guest-region"] = region;
  return all;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// virt-xml-validate exits 0 only for documents that match libvirt's RelaxNG schema.
void require_valid(const std::string& xml, const std::string& schema) {
  auto path = std::filesystem::temp_directory_path() /
              ("ernic-validate-" + std::to_string(::getpid()) + ".xml");
  write_file(path, xml);
  LocalProcessOptions options;
  options.timeout = std::chrono::seconds(60);
  auto result = run_local({"virt-xml-validate", path.string(), schema}, options);
  std::filesystem::remove(path);
  INFO(xml);
  INFO(result.output);
  REQUIRE(result.ok());
}

TEST_CASE("domain XML has the devices a headless direct-boot TCG guest needs", "[libvirt]") {
  auto xml = domain_xml(base_spec());
  CHECK(xml.find("<domain type='qemu'>") != std::string::npos);
  CHECK(xml.find("<cpu mode='maximum'/>") != std::string::npos);
  CHECK(xml.find("<acpi/>") != std::string::npos);
  CHECK(xml.find("<model type='none'/>") != std::string::npos);
  CHECK(xml.find("<graphics") == std::string::npos);
  CHECK(xml.find("<kernel>/var/cache/ernicctl/images/x/vmlinuz</kernel>") != std::string::npos);
  CHECK(xml.find("ernic.net=192.168.77.10/24</cmdline>") != std::string::npos);
  CHECK(xml.find("<log file='/var/lib/ernic/run/g1.serial.log' append='off'/>") !=
        std::string::npos);
  CHECK(xml.find("<source network='ernic-t1'/>") != std::string::npos);
  CHECK(xml.find("<vcpu placement='static'>2</vcpu>") != std::string::npos);
  CHECK(xml.find("<memory unit='MiB'>1024</memory>") != std::string::npos);
  CHECK(xml.find("memoryBacking") == std::string::npos);
  CHECK(xml.find("qemu:commandline") == std::string::npos);
}

TEST_CASE("KVM domains pass the host CPU through", "[libvirt]") {
  auto spec = base_spec();
  spec.accelerator = Accelerator::kKvm;
  auto xml = domain_xml(spec);
  CHECK(xml.find("<domain type='kvm'>") != std::string::npos);
  CHECK(xml.find("host-passthrough") != std::string::npos);
}

TEST_CASE("an attached emulator instance gets shared memfd memory and a vfio-user device",
          "[libvirt]") {
  auto spec = base_spec();
  spec.vfio_user_socket = "/run/ernic/it's.sock";
  auto xml = domain_xml(spec);
  CHECK(xml.find("<source type='memfd'/>") != std::string::npos);
  CHECK(xml.find("<access mode='shared'/>") != std::string::npos);
  CHECK(xml.find("xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'") != std::string::npos);
  // The JSON device argument, escaped for the attribute (quotes and the apostrophe).
  CHECK(
      xml.find("<qemu:arg value='{&quot;driver&quot;:&quot;vfio-user-pci&quot;,&quot;socket&quot;:"
               "{&quot;path&quot;:&quot;/run/ernic/it&apos;s.sock&quot;,&quot;type&quot;:&quot;"
               "unix&quot;}}'/>") != std::string::npos);
}

TEST_CASE("a guest served through a guest region gets an ivshmem-plain device of its file",
          "[libvirt]") {
  auto spec = base_spec();
  spec.guest_region = "ernic-abc123-i2";
  spec.guest_region_mib = 128;
  auto xml = domain_xml(spec);
  CHECK(xml.find("<shmem name='ernic-abc123-i2'>\n      <model type='ivshmem-plain'/>\n      "
                 "<size unit='M'>128</size>\n    </shmem>") != std::string::npos);
  // The guest's own RAM stays private: only the region is shared with the instance.
  CHECK(xml.find("memoryBacking") == std::string::npos);
  CHECK(domain_xml(base_spec()).find("<shmem") == std::string::npos);
}

TEST_CASE("domain specs libvirt would reject are refused with the reason", "[libvirt]") {
  auto no_disk = base_spec();
  no_disk.disk.clear();
  CHECK_THROWS_WITH(domain_xml(no_disk), Catch::Contains("no disk"));
  auto both = base_spec();
  both.bridge = "br0";
  CHECK_THROWS_WITH(domain_xml(both), Catch::Contains("exactly one of"));
  auto initrd_only = base_spec();
  initrd_only.kernel.clear();
  CHECK_THROWS_WITH(domain_xml(initrd_only), Catch::Contains("initrd needs a kernel"));
  NetworkSpec long_bridge{"n", "ernic-0123456789ab", "192.168.77.1", 24, "", ""};
  CHECK_THROWS_WITH(network_xml(long_bridge), Catch::Contains("longer than 15"));
}

TEST_CASE("guest MACs are stable per run and guest, and differ between guests", "[libvirt]") {
  CHECK(guest_mac("abc", 0) == guest_mac("abc", 0));
  CHECK(guest_mac("abc", 0) != guest_mac("abc", 1));
  CHECK(guest_mac("abc", 0) != guest_mac("abd", 0));
  CHECK(guest_mac("abc", 0).rfind("52:54:00:", 0) == 0);
  CHECK(guest_mac("abc", 0).size() == 17);
}

TEST_CASE("every generated variant is valid by libvirt's own schema", "[libvirt]") {
  REQUIRE(local_program_exists("virt-xml-validate"));
  for (const auto& [name, spec] : variants()) {
    SECTION(name) {
      require_valid(domain_xml(spec), "domain");
    }
  }
  SECTION("network, static") {
    require_valid(network_xml({"ernic-t1", "ernic-t1", "192.168.77.1", 24, "", ""}), "network");
  }
  SECTION("network, DHCP") {
    require_valid(network_xml({"ernic-t1", "ernic-t1", "192.168.77.1", 24, "192.168.77.100",
                               "192.168.77.199"}),
                  "network");
  }
  SECTION("pool and overlay") {
    require_valid(storage_pool_xml("ernic-t1", "/var/lib/ernic/run"), "storagepool");
    require_valid(overlay_volume_xml("g1.qcow2", "/images/disk.qcow2", "qcow2", 2ULL << 30),
                  "storagevol");
  }
}

TEST_CASE("every variant is defined, started and destroyed on libvirt's test driver", "[libvirt]") {
  LibvirtConnection connection("test:///default");
  // The test driver knows only its own default network; a variant naming ours needs it.
  auto network = network_xml({"ernic-t1", "ernic-t1", "192.168.77.1", 24, "", ""});
  virNetworkPtr net = virNetworkCreateXML(connection.get(), network.c_str());
  INFO(libvirt_error_message());
  REQUIRE(net != nullptr);
  for (const auto& [name, spec] : variants()) {
    if (!spec.bridge.empty()) {
      continue;  // the test driver has no host bridges
    }
    SECTION(name) {
      auto xml = domain_xml(spec);
      virDomainPtr domain = virDomainDefineXML(connection.get(), xml.c_str());
      INFO(xml);
      INFO(libvirt_error_message());
      REQUIRE(domain != nullptr);
      REQUIRE(virDomainCreate(domain) == 0);
      int state = 0;
      REQUIRE(virDomainGetState(domain, &state, nullptr, 0) == 0);
      CHECK(state == VIR_DOMAIN_RUNNING);
      // The definition libvirt kept is the one generated.
      char* kept = virDomainGetXMLDesc(domain, 0);
      REQUIRE(kept != nullptr);
      CHECK(std::string(kept).find(fmt::format("<vcpu placement='static'>{}</vcpu>", spec.vcpus)) !=
            std::string::npos);
      free(kept);
      REQUIRE(virDomainDestroy(domain) == 0);
      REQUIRE(virDomainUndefine(domain) == 0);
      virDomainFree(domain);
      CHECK(virDomainLookupByName(connection.get(), spec.name.c_str()) == nullptr);
    }
  }
  virNetworkDestroy(net);
  virNetworkFree(net);
}

}  // namespace
}  // namespace ernic
