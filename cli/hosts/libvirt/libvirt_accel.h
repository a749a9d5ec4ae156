#pragma once

#include <string>

#include "hosts/libvirt/libvirt_domain.h"

namespace ernic {

// Which accelerator guests get, and why: recorded with every result, because numbers measured
// under TCG are functional only.
struct AcceleratorChoice {
  Accelerator accelerator = Accelerator::kTcg;
  std::string reason;
};

// KVM only when the CPU has hardware virtualization (vmx or svm) and /dev/kvm can be opened.
// /dev/kvm existing proves nothing: a nested paravirtual KVM without vmx/svm answers the API
// but cannot boot a stock kernel.
AcceleratorChoice choose_accelerator(const std::string& cpuinfo, bool dev_kvm_opens);
// The same from a libvirt capabilities document (for remote URIs): the host CPU's features and
// whether a kvm domain type is offered.
AcceleratorChoice choose_accelerator_from_capabilities(const std::string& capabilities_xml);
// This machine: /proc/cpuinfo and /dev/kvm.
AcceleratorChoice detect_local_accelerator();

// Whether QEMU can attach an emulator instance (a vfio-user client device).
struct VfioUserSupport {
  bool available = false;
  std::string reason;  // why not, or which device
};

// From the output of `qemu-system-x86_64 -device help`.
VfioUserSupport parse_vfio_user_support(const std::string& device_help);
VfioUserSupport detect_vfio_user_support(const std::string& qemu_binary = "qemu-system-x86_64");

}  // namespace ernic
