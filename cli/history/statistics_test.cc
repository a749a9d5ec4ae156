#include "history/statistics.h"

#include <catch2/catch.hpp>

using namespace ernic;

TEST_CASE("exact Mann-Whitney U matches the tables") {
  // complete separation of 3 and 3: U = 0, two-sided p = 2 / C(6, 3) = 0.1
  auto separated = mann_whitney_u({1, 2, 3}, {4, 5, 6});
  REQUIRE(separated);
  CHECK(separated->exact);
  CHECK(separated->u == 0);
  CHECK(separated->p_value == Approx(0.1));
  // 5 against 5, fully separated: p = 2 / 252
  auto five = mann_whitney_u({10, 11, 12, 13, 14}, {1, 2, 3, 4, 5});
  CHECK(five->u == 25);
  CHECK(five->p_value == Approx(2.0 / 252));
  // interleaved samples are not significant
  auto mixed = mann_whitney_u({1, 4, 5, 8}, {2, 3, 6, 7});
  CHECK(mixed->p_value > 0.5);
}

TEST_CASE("ties use the normal approximation with tie correction") {
  auto tied = mann_whitney_u({1, 1, 1, 2, 2, 2, 3, 3}, {5, 5, 6, 6, 7, 7, 8, 8});
  REQUIRE(tied);
  CHECK_FALSE(tied->exact);
  CHECK(tied->p_value < 0.01);
  auto same = mann_whitney_u({2, 2, 2}, {2, 2, 2});
  CHECK(same->p_value == 1);
  CHECK_FALSE(mann_whitney_u({}, {1}));
}

TEST_CASE("smallest reachable p-value decides whether the test can be used") {
  CHECK(smallest_p_value(3, 3) == Approx(0.1));
  CHECK(smallest_p_value(3, 5) == Approx(2.0 / 56));
  CHECK(smallest_p_value(1, 100) == Approx(2.0 / 101));
  CHECK(smallest_p_value(0, 5) == 1);
}
