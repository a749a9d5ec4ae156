// Jain's fairness index and shares on hand-computed cases.
#include <catch2/catch.hpp>

#include "history/statistics.h"

namespace ernic {
namespace {

TEST_CASE("jain_index: equal shares give 1", "[fairness]") {
  CHECK(*jain_index({2.5, 2.5, 2.5, 2.5}) == Approx(1.0));
  CHECK(*jain_index({7}) == Approx(1.0));
  std::vector<double> equal = shares({3, 3, 3});
  REQUIRE(equal.size() == 3);
  CHECK(equal[0] == Approx(1.0 / 3));
}

TEST_CASE("jain_index: one tenant alone, the others at 0, gives 1/n", "[fairness]") {
  CHECK(*jain_index({4, 0, 0, 0}) == Approx(0.25));
  CHECK(*jain_index({0, 9}) == Approx(0.5));
  std::vector<double> alone = shares({0, 5, 0});
  CHECK(alone == std::vector<double>{0, 1, 0});
}

TEST_CASE("jain_index: a worked three-tenant case", "[fairness]") {
  // (1 + 2 + 3)^2 / (3 * (1 + 4 + 9)) = 36 / 42.
  CHECK(*jain_index({1, 2, 3}) == Approx(36.0 / 42));
  // (2 + 2 + 4)^2 / (3 * 24) = 64 / 72.
  CHECK(*jain_index({2, 2, 4}) == Approx(64.0 / 72));
  std::vector<double> split = shares({2, 2, 4});
  CHECK(split[0] == Approx(0.25));
  CHECK(split[2] == Approx(0.5));
}

TEST_CASE("jain_index: nothing measured has no index", "[fairness]") {
  CHECK_FALSE(jain_index({}).has_value());
  CHECK_FALSE(jain_index({0, 0}).has_value());
  CHECK(shares({0, 0}).empty());
}

}  // namespace
}  // namespace ernic
