#include "commands/doctor_checks.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

namespace ernic {
namespace {
namespace fs = std::filesystem;

fs::path fake_proc(long wmem, long rmem) {
  fs::path root = fs::temp_directory_path() / "ernic-doctor-proc";
  fs::remove_all(root);
  fs::create_directories(root / "sys/net/core");
  std::ofstream(root / "sys/net/core/wmem_max") << wmem << "\n";
  std::ofstream(root / "sys/net/core/rmem_max") << rmem << "\n";
  return root;
}

TEST_CASE("doctor: socket buffers below 16 MiB are missing, with the sysctl that fixes them",
          "[doctor]") {
  auto root = fake_proc(4194304, 33554432);
  auto low = check_socket_buffers(root, false);
  CHECK(low.level == DoctorCheck::Level::kMissing);
  CHECK(low.fix.find("net.core.wmem_max=16777216") != std::string::npos);
  CHECK(low.fix.find("rmem_max") == std::string::npos);  // that one is large enough

  auto fixed = check_socket_buffers(root, true);
  CHECK(fixed.level == DoctorCheck::Level::kOk);
  std::ifstream in(root / "sys/net/core/wmem_max");
  long value = 0;
  in >> value;
  CHECK(value == kMinimumSocketBuffer);
  fs::remove_all(root);
}

TEST_CASE("doctor: missing tools are named with the packages that install them", "[doctor]") {
  auto check = check_tools(
      {{"sh", "dash"}, {"ernic-no-such-tool", "ernic-pkg"}, {"ernic-other-missing", "ernic-pkg"}});
  CHECK(check.level == DoctorCheck::Level::kMissing);
  CHECK(check.detail == "not found: ernic-no-such-tool, ernic-other-missing");
  CHECK(check.fix == "apt-get install ernic-pkg");
  CHECK(check_tools({{"sh", "dash"}}).level == DoctorCheck::Level::kOk);
}

TEST_CASE("doctor: network administration from the capability set", "[doctor]") {
  fs::path root = fs::temp_directory_path() / "ernic-doctor-caps";
  fs::create_directories(root / "self");
  std::ofstream(root / "self/status") << "Name:\tx\nCapEff:\t0000000000000000\n";
  auto without = check_network_admin(root);
  CHECK(without.level == DoctorCheck::Level::kMissing);
  CHECK(without.fix.find("root") != std::string::npos);
  std::ofstream(root / "self/status") << "Name:\tx\nCapEff:\t000001ffffffffff\n";
  CHECK(check_network_admin(root).detail.find("CAP_NET_ADMIN yes") != std::string::npos);
  fs::remove_all(root);
}

}  // namespace
}  // namespace ernic
