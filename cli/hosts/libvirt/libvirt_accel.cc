#include "hosts/libvirt/libvirt_accel.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "base/local_process.h"

namespace ernic {
namespace {

bool has_hardware_virtualization(const std::string& cpuinfo) {
  static const std::regex kFlags{R"(^flags\s*:.*\b(vmx|svm)\b)", std::regex::multiline};
  return std::regex_search(cpuinfo, kFlags);
}

}  // namespace

AcceleratorChoice choose_accelerator(const std::string& cpuinfo, bool dev_kvm_opens) {
  if (!has_hardware_virtualization(cpuinfo)) {
    return {Accelerator::kTcg,
            "the CPU has no vmx/svm flag (a paravirtual /dev/kvm cannot boot a stock kernel): "
            "TCG, results are functional only"};
  }
  if (!dev_kvm_opens) {
    return {Accelerator::kTcg,
            "the CPU has vmx/svm but /dev/kvm cannot be opened (module kvm_intel/kvm_amd not "
            "loaded, or no permission): TCG, results are functional only"};
  }
  return {Accelerator::kKvm, "the CPU has vmx/svm and /dev/kvm opens: KVM"};
}

AcceleratorChoice choose_accelerator_from_capabilities(const std::string& capabilities_xml) {
  // <host><cpu>...<feature name='vmx'/>...</cpu>: only the host section names features.
  auto host_end = capabilities_xml.find("</host>");
  std::string host = capabilities_xml.substr(0, host_end);
  static const std::regex kFeature{R"(<feature\s+name=['"](vmx|svm)['"])"};
  static const std::regex kKvmDomain{R"(<domain\s+type=['"]kvm['"])"};
  if (!std::regex_search(host, kFeature)) {
    return {Accelerator::kTcg,
            "the libvirt host's CPU has no vmx/svm feature: TCG, results are functional only"};
  }
  if (!std::regex_search(capabilities_xml, kKvmDomain)) {
    return {Accelerator::kTcg,
            "the libvirt host's CPU has vmx/svm but libvirt offers no kvm domains: TCG, results "
            "are functional only"};
  }
  return {Accelerator::kKvm, "the libvirt host's CPU has vmx/svm and libvirt offers kvm: KVM"};
}

AcceleratorChoice detect_local_accelerator() {
  std::ifstream in("/proc/cpuinfo");
  std::stringstream cpuinfo;
  cpuinfo << in.rdbuf();
  int fd = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
  bool opens = fd >= 0;
  if (opens) {
    ::close(fd);
  }
  return choose_accelerator(cpuinfo.str(), opens);
}

VfioUserSupport parse_vfio_user_support(const std::string& device_help) {
  static const std::regex kDevice{R"re(name\s+"vfio-user-pci")re"};
  if (std::regex_search(device_help, kDevice)) {
    return {true, "QEMU has the vfio-user-pci device"};
  }
  return {false,
          "QEMU has no vfio-user-pci device (it needs QEMU 10.1 or newer built with vfio-user): "
          "the emulated NIC cannot be attached; use soft-RoCE on the guest network instead"};
}

VfioUserSupport detect_vfio_user_support(const std::string& qemu_binary) {
  if (!local_program_exists(qemu_binary)) {
    return {false,
            fmt::format("{} is not installed (fix: apt-get install qemu-system-x86)", qemu_binary)};
  }
  LocalProcessOptions options;
  options.timeout = std::chrono::seconds(30);
  auto result = run_local({qemu_binary, "-device", "help"}, options);
  if (!result.ok()) {
    return {false, fmt::format("`{} -device help` failed: {}", qemu_binary, result.describe())};
  }
  return parse_vfio_user_support(result.output);
}

}  // namespace ernic
