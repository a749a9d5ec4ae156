#include "hosts/libvirt/libvirt_guest_region.h"

#include <yaml-cpp/yaml.h>
#include <catch2/catch.hpp>

#include "builtin_platform.h"
#include "scenario/platform.h"
#include "scenario/scenario_builder.h"

namespace ernic {
namespace {

TEST_CASE("QEMU's user and group from libvirt's DAC security model", "[libvirt]") {
  const std::string capabilities =
      "<capabilities><host><secmodel><model>none</model><doi>0</doi></secmodel>"
      "<secmodel><model>dac</model><doi>0</doi>"
      "<baselabel type='kvm'>+64055:+994</baselabel>"
      "<baselabel type='qemu'>+64055:+64055</baselabel></secmodel></host></capabilities>";
  auto tcg = qemu_dac_owner(capabilities, Accelerator::kTcg);
  REQUIRE(tcg);
  CHECK(tcg->uid == 64055);
  CHECK(tcg->gid == 64055);
  auto kvm = qemu_dac_owner(capabilities, Accelerator::kKvm);
  REQUIRE(kvm);
  CHECK(kvm->gid == 994);
  // No DAC driver (QEMU runs as libvirtd's user): nothing to hand over.
  CHECK_FALSE(
      qemu_dac_owner("<capabilities><host><secmodel><model>none</model></secmodel>"
                     "</host></capabilities>",
                     Accelerator::kTcg));
}

TEST_CASE("a guest region on this machine needs QEMU's ivshmem-plain", "[libvirt]") {
  const std::string with = "name \"virtio-net-pci\"\nname \"ivshmem-plain\", bus PCI\n";
  const std::string without = "name \"virtio-net-pci\", bus PCI\n";
  CHECK(guest_region_unsupported("g1", "qemu:///system", with).empty());
  CHECK_THAT(guest_region_unsupported("g1", "qemu:///system", without),
             Catch::Contains("hosts.g1: QEMU on this machine has no ivshmem-plain"));
  // Another machine's QEMU is not probed from here: the run's preflight asks it over SSH
  // (LibvirtProvider::check_machines), with the same verdict naming that machine.
  CHECK(guest_region_unsupported("g2", "qemu+ssh://lab@box/system", without).empty());
  CHECK(ivshmem_missing("g2", "box", with).empty());
  CHECK_THAT(ivshmem_missing("g2", "box", without),
             Catch::StartsWith("hosts.g2: QEMU on box has no ivshmem-plain device"));
  // The test driver boots nothing: nothing to check.
  CHECK(guest_region_unsupported("g3", "test:///default", without).empty());
}

// A scenario's top level as the loader types it (the emulator section by its kind's schema).
Config scenario_top_level(const std::string& emulator) {
  return build_scenario(builtin_platform(),
                        YAML::Load("version: 1\nname: s\n" + emulator +
                                   "\nhosts: [{name: h, provider: local}]\n"
                                   "benchmarks: [{name: b, tool: iperf3, server: h, client: h}]\n"),
                        "s.yaml")
      .settings;
}

TEST_CASE("only a guest attached to an instance of an embedded emulator is served by one",
          "[libvirt]") {
  const Config embedded = scenario_top_level("emulator: {kind: embedded, instances: 2}");
  CHECK(served_by_embedded_instance(embedded, 1));
  CHECK_FALSE(served_by_embedded_instance(embedded, 0));  // no `instance:`
  // rocm-ernic's instances attach over vfio-user (emulator_socket), not a region.
  CHECK_FALSE(served_by_embedded_instance(
      scenario_top_level("emulator: {kind: external, binary: /opt/rocm-ernic}"), 1));
  CHECK_FALSE(served_by_embedded_instance(scenario_top_level(""), 1));
}

}  // namespace
}  // namespace ernic
