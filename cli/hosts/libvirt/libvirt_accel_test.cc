#include "hosts/libvirt/libvirt_accel.h"

#include <catch2/catch.hpp>

namespace ernic {
namespace {

TEST_CASE("KVM only with vmx/svm in the CPU flags and a /dev/kvm that opens", "[libvirt]") {
  std::string no_vt = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm\n";
  std::string vmx = "processor\t: 0\nflags\t\t: fpu vme vmx de pse\n";
  std::string svm = "processor\t: 0\nflags\t\t: fpu svm\n";
  CHECK(choose_accelerator(no_vt, true).accelerator == Accelerator::kTcg);
  CHECK(choose_accelerator(no_vt, true).reason.find("no vmx/svm") != std::string::npos);
  CHECK(choose_accelerator(vmx, true).accelerator == Accelerator::kKvm);
  CHECK(choose_accelerator(svm, true).accelerator == Accelerator::kKvm);
  CHECK(choose_accelerator(vmx, false).accelerator == Accelerator::kTcg);
  // "vmx" inside another flag name is not vmx.
  CHECK(choose_accelerator("flags\t\t: fpu vmxnope\n", true).accelerator == Accelerator::kTcg);
}

TEST_CASE("remote hosts: the accelerator from libvirt's capabilities", "[libvirt]") {
  std::string with_vmx =
      "<capabilities><host><cpu><model>Skylake</model><feature name='vmx'/></cpu></host>"
      "<guest><arch name='x86_64'><domain type='qemu'/><domain type='kvm'/></arch></guest>"
      "</capabilities>";
  std::string without =
      "<capabilities><host><cpu><model>EPYC</model><feature name='hypervisor'/></cpu></host>"
      "<guest><arch name='x86_64'><domain type='qemu'/><domain type='kvm'/></arch></guest>"
      "</capabilities>";
  std::string no_kvm_domain =
      "<capabilities><host><cpu><feature name='svm'/></cpu></host>"
      "<guest><arch name='x86_64'><domain type='qemu'/></arch></guest></capabilities>";
  CHECK(choose_accelerator_from_capabilities(with_vmx).accelerator == Accelerator::kKvm);
  CHECK(choose_accelerator_from_capabilities(without).accelerator == Accelerator::kTcg);
  CHECK(choose_accelerator_from_capabilities(no_kvm_domain).accelerator == Accelerator::kTcg);
}

TEST_CASE("vfio-user support from QEMU's device list", "[libvirt]") {
  std::string qemu_7 =
      "name \"vfio-pci\", bus PCI, desc \"VFIO-based PCI device assignment\"\n"
      "name \"virtio-net-pci\", bus PCI\n";
  std::string qemu_10 = qemu_7 + "name \"vfio-user-pci\", bus PCI, desc \"VFIO over socket\"\n";
  CHECK_FALSE(parse_vfio_user_support(qemu_7).available);
  CHECK(parse_vfio_user_support(qemu_7).reason.find("soft-RoCE") != std::string::npos);
  CHECK(parse_vfio_user_support(qemu_10).available);
  // This machine's QEMU (Debian 12: 7.2) has none, and says why.
  auto local = detect_vfio_user_support();
  CHECK_FALSE(local.reason.empty());
  CHECK(detect_vfio_user_support("ernic-no-such-qemu").reason.find("not installed") !=
        std::string::npos);
}

}  // namespace
}  // namespace ernic
