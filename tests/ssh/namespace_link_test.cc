#include <catch2/catch.hpp>
#include <memory>

#include "sshd_fixture.h"

// The link that stands for a network between two remote machines in the multi-machine tests:
// the two namespaces reach each other over it, the caller's namespace does not.
namespace ernic {
namespace {

using testing::NamespaceLink;
using testing::TestNamespace;

// Whether the sshd at address:port answers from `ns` (null: the caller's namespace). Its
// banner, not a bare connect: a machine's default route may lead to a gateway that accepts any
// connection.
bool reaches_sshd(const TestNamespace* ns, const std::string& address, std::uint16_t port) {
  std::vector<std::string> probe{
      "timeout", "3", "bash", "-c",
      "exec 3<>/dev/tcp/" + address + "/" + std::to_string(port) + " && head -c 4 <&3"};
  std::string output;
  const int status =
      ns != nullptr ? ns->exec(probe, &output) : testing::run_program(probe, &output);
  return status == 0 && output == "SSH-";
}

TEST_CASE("a namespace link joins two namespaces and only them", "[ssh][netns]") {
  TestNamespace a("la");
  TestNamespace b("lb");
  auto link = std::make_unique<NamespaceLink>(a, b);
  testing::SshdServer listener(testing::SshdOptions{b.name(), link->b_address(), 0, false});
  CHECK(reaches_sshd(&a, link->b_address(), listener.port()));
  CHECK(reaches_sshd(&b, link->b_address(), listener.port()));
  // Not from here: the caller has no route into the link's subnet.
  CHECK_FALSE(reaches_sshd(nullptr, link->b_address(), listener.port()));
  // Removed with the link object.
  const std::string b_address = link->b_address();
  link.reset();
  CHECK_FALSE(reaches_sshd(&a, b_address, listener.port()));
}

}  // namespace
}  // namespace ernic
