#include "history/record.h"

#include <catch2/catch.hpp>

namespace ernic {
namespace {

HostRecord host_with(const std::string& name, const std::string& accelerator) {
  HostRecord host;
  host.name = name;
  if (!accelerator.empty()) {
    host.facts["accelerator"] = accelerator;
  }
  return host;
}

TEST_CASE("the record's accelerator comes from the guests' facts", "[history]") {
  SECTION("no guests: processes on this machine") {
    RunAccelerator none = run_accelerator({host_with("server", ""), host_with("client", "")});
    CHECK(none.name == "none");
    CHECK_FALSE(none.functional_only);
  }
  SECTION("KVM guests measure performance") {
    RunAccelerator kvm = run_accelerator({host_with("g1", "kvm"), host_with("g2", "kvm")});
    CHECK(kvm.name == "kvm");
    CHECK_FALSE(kvm.functional_only);
  }
  SECTION("TCG guests are functional only") {
    RunAccelerator tcg = run_accelerator({host_with("g1", "tcg"), host_with("g2", "tcg")});
    CHECK(tcg.name == "tcg");
    CHECK(tcg.functional_only);
  }
  SECTION("one TCG guest is enough to make the numbers functional only") {
    RunAccelerator mixed =
        run_accelerator({host_with("g1", "kvm"), host_with("g2", "tcg"), host_with("netns", "")});
    CHECK(mixed.name == "mixed");
    CHECK(mixed.functional_only);
  }
}

}  // namespace
}  // namespace ernic
