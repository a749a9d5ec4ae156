#include "frontend/verbs_device.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "test_dir.h"

namespace ernic::emu::verbs_device {
namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("GIDs convert between the instance's text, bytes and sysfs' form") {
  const auto v6 = gid_bytes("fe80::a0:d1ff:fe00:1");
  REQUIRE(v6);
  CHECK(gid_sysfs(*v6) == "fe80:0000:0000:0000:00a0:d1ff:fe00:0001");
  CHECK(gid_text(*v6) == "fe80::a0:d1ff:fe00:1");
  // RoCE v2 maps an IPv4 address into the GID; the mesh knows it by the dotted quad.
  const auto v4 = gid_bytes("10.77.0.1");
  REQUIRE(v4);
  CHECK(gid_sysfs(*v4) == "0000:0000:0000:0000:0000:ffff:0a4d:0001");
  CHECK(gid_text(*v4) == "10.77.0.1");
  CHECK_FALSE(gid_bytes("not-a-gid"));
}

TEST_CASE("the node GUID is the MAC's EUI-64") {
  CHECK(node_guid("02:00:00:00:00:01") == 0x000000fffe000001ull);
  CHECK(node_guid("a2:d1:00:00:00:07") == 0xa0d100fffe000007ull);
  CHECK(node_guid("nonsense") == 0);
}

TEST_CASE("the sysfs folder has what libibverbs reads to discover and describe the device") {
  TestDir dir("verbs-sysfs");
  const auto root = dir / "sysfs";
  write_sysfs(root.string(),
              {"ernic_1", "/tmp/e1.sock", "", "02:00:00:00:00:01", {"fe80::1", "10.77.0.1"}});
  CHECK(read(root / "class/infiniband_verbs/abi_version") == "6\n");
  CHECK(read(root / "class/infiniband_verbs/ernic_uverbs0/ibdev") == "ernic_1\n");
  CHECK(read(root / "class/infiniband_verbs/ernic_uverbs0/dev") == "0:0\n");
  const auto ib = root / "class/infiniband/ernic_1";
  CHECK(read(ib / "ernic_socket") == "/tmp/e1.sock\n");
  CHECK_FALSE(std::filesystem::exists(ib / "ernic_region"));
  CHECK(read(ib / "node_guid") == "0000:00ff:fe00:0001\n");
  CHECK(read(ib / "device/vendor") == "0x1dd8\n");
  CHECK(read(ib / "device/device") == "0x1002\n");
  CHECK(read(ib / "device/subsystem_device") == "0x5400\n");
  CHECK(read(ib / "ports/1/gids/1") == "0000:0000:0000:0000:0000:ffff:0a4d:0001\n");
  CHECK(read(ib / "ports/1/gid_attrs/types/0") == "RoCE v2\n");
  CHECK_FALSE(std::filesystem::exists(ib / "ports/1/gids/2"));
  // A guest's folder names the region it reaches its instance through, and no socket.
  const auto guest = dir / "guest";
  write_sysfs(guest.string(), {"ernic_3",
                               "",
                               "/sys/bus/pci/devices/0000:00:05.0/resource2",
                               "02:00:00:00:00:03",
                               {"fe80::3"}});
  CHECK(read(guest / "class/infiniband/ernic_3/ernic_region") ==
        "/sys/bus/pci/devices/0000:00:05.0/resource2\n");
  CHECK_FALSE(std::filesystem::exists(guest / "class/infiniband/ernic_3/ernic_socket"));
  CHECK_THROWS_WITH(write_sysfs(root.string(), {"ernic_2", "/s", "", "02:00:00:00:00:02", {"x"}}),
                    Catch::Contains("GID 'x'"));
}

}  // namespace
}  // namespace ernic::emu::verbs_device
