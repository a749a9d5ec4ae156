// The upload itself needs a libvirt daemon with volume upload (the test driver has none):
// tests/ssh/libvirt_remote_test.cc runs it over qemu+ssh://. Here, what needs no daemon.
#include "hosts/libvirt/libvirt_image_upload.h"

#include <catch2/catch.hpp>

#include "run/leftovers.h"

namespace ernic {
namespace {

TEST_CASE("an upload's claim carries the run token that down looks for", "[libvirt]") {
  std::string claim = upload_claim_name("0123abcd-disk.qcow2", "a1b2c3");
  CHECK(claim == "0123abcd-disk.qcow2.uploading-a1b2c3");
  CHECK(upload_claim_token(claim) == "a1b2c3");
  CHECK(upload_claim_token("0123abcd-disk.qcow2").empty());  // a cached image: kept
  CHECK(upload_claim_token(verified_marker_name("0123abcd-disk.qcow2")).empty());
  CHECK(upload_claim_token("x.uploading-t12345").empty());  // no run token
}

TEST_CASE("leftovers on a remote libvirt host are described with their URI", "[libvirt]") {
  Leftover remote{"a1b2c3", "domain", "ernic-a1b2c3-g1", "qemu+ssh://root@hv1/system"};
  CHECK(remote.describe() == "domain ernic-a1b2c3-g1 on qemu+ssh://root@hv1/system");
  Leftover local{"a1b2c3", "domain", "ernic-a1b2c3-g1", "qemu:///system"};
  CHECK(local.describe() == "domain ernic-a1b2c3-g1");
  Leftover process{"a1b2c3", "process", "123"};
  CHECK(process.describe() == "process 123");
}

}  // namespace
}  // namespace ernic
