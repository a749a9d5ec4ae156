#include <catch2/catch.hpp>

#include "setup/gid_index_step.h"
#include "setup/rdma_device_step.h"

namespace ernic {
namespace {

TEST_CASE("PCI ids are normalized", "[setup]") {
  CHECK(normalize_pci_id("0x1dd8") == "1dd8");
  CHECK(normalize_pci_id("0X1DD8") == "1dd8");
  CHECK(normalize_pci_id("1002") == "1002");
  CHECK(normalize_pci_id("0x15") == "0015");
  CHECK_FALSE(normalize_pci_id("-"));
  CHECK_FALSE(normalize_pci_id(""));
  CHECK_FALSE(normalize_pci_id("0x10000"));
  CHECK_FALSE(normalize_pci_id("1dg8"));
}

TEST_CASE("RDMA device listings are read with and without PCI parents", "[setup]") {
  auto devices = parse_rdma_listing(
      "rxe0 - - - -\n"
      "ionic_0 0x1dd8 0x1002 0x1dd8 0x5400\n"
      "half 0x1dd8 0x1002 - -\n");
  REQUIRE(devices.size() == 3);
  CHECK(devices[0].name == "half");  // sorted by name
  CHECK_FALSE(devices[0].pci);
  CHECK(devices[1].name == "ionic_0");
  REQUIRE(devices[1].pci);
  CHECK(devices[1].pci->display() == "1dd8:1002:1dd8:5400");
  CHECK(describe_rdma_devices(devices) ==
        "half (no PCI device), ionic_0 (1dd8:1002:1dd8:5400), rxe0 (no PCI device)");
  CHECK(describe_rdma_devices({}) == "none");
}

TEST_CASE("GIDs of addresses and the RoCE v2 preference", "[setup]") {
  CHECK(gid_of_address("192.168.200.10") == "0000:0000:0000:0000:0000:ffff:c0a8:c80a");
  CHECK(gid_of_address("fe80::a0:d1ff:fe00:1") == "fe80:0000:0000:0000:00a0:d1ff:fe00:0001");
  CHECK_FALSE(gid_of_address("guest1"));

  auto entries = parse_gid_listing(
      "0\tfe80:0000:0000:0000:00a0:d1ff:fe00:0001\tIB/RoCE v1\n"
      "1\tfe80:0000:0000:0000:00a0:d1ff:fe00:0001\tRoCE v2\n"
      "10\t0000:0000:0000:0000:0000:0000:0000:0000\t\n"
      "2\t0000:0000:0000:0000:0000:ffff:c0a8:c80a\tIB/RoCE v1\n"
      "3\t0000:0000:0000:0000:0000:ffff:c0a8:c80a\tRoCE v2\n");
  REQUIRE(entries.size() == 5);
  CHECK(entries.back().index == 10);  // sorted by index, not as the shell listed them
  CHECK(entries[3].type == "RoCE v2");
  CHECK(choose_gid(entries, "192.168.200.10", true)->index == 3);
  CHECK(choose_gid(entries, "192.168.200.10", false)->index == 2);
  CHECK(choose_gid(entries, "fe80::a0:d1ff:fe00:1", true)->index == 1);
  CHECK_FALSE(choose_gid(entries, "192.168.200.20", true));
  // Only a v1 entry: taken when v2 is preferred but missing.
  auto v1_only = parse_gid_listing("5\t0000:0000:0000:0000:0000:ffff:0a00:0001\tIB/RoCE v1\n");
  CHECK(choose_gid(v1_only, "10.0.0.1", true)->index == 5);
}

}  // namespace
}  // namespace ernic
