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

TEST_CASE("drift is the last tenth's median over the first tenth's", "[statistics][drift]") {
  // 20 samples: tenths of two; first {10, 12} -> 11, last {8, 10} -> 9
  std::vector<double> series = {10, 12};
  series.insert(series.end(), 16, 11.0);
  series.insert(series.end(), {8, 10});
  REQUIRE(drift(series));
  CHECK(*drift(series) == Approx(9.0 / 11.0));
  // 10 samples: tenths of one sample each
  CHECK(*drift({2, 9, 9, 9, 9, 9, 9, 9, 9, 3}) == Approx(1.5));
  // 29 samples: a tenth is 2 samples (rounded down), the third and the 27th are in the middle
  std::vector<double> uneven(29, 100.0);
  uneven[0] = 4;
  uneven[1] = 6;
  uneven[27] = 10;
  uneven[28] = 20;
  CHECK(*drift(uneven) == Approx(15.0 / 5.0));
  // a steady series does not drift
  CHECK(*drift(std::vector<double>(40, 3.5)) == Approx(1.0));
}

TEST_CASE("drift needs four samples and a non-zero start", "[statistics][drift]") {
  // fewer than ten: a tenth is one sample, the first against the last
  CHECK(*drift({1, 2, 3, 4, 5, 6, 7, 8, 9}) == Approx(9.0));
  CHECK(*drift({4, 1, 1, 2}) == Approx(0.5));
  CHECK_FALSE(drift({4, 1, 2}));
  CHECK_FALSE(drift({}));
  CHECK_FALSE(drift({0, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
}

TEST_CASE("the worst interval is the lowest throughput or the highest latency",
          "[statistics][drift]") {
  auto low = worst_interval({3, 1, 2, 1}, true);
  REQUIRE(low);
  CHECK(low->index == 1);  // the first of the two equally bad
  CHECK(low->value == 1);
  auto high = worst_interval({3, 1, 7, 2}, false);
  REQUIRE(high);
  CHECK(high->index == 2);
  CHECK(high->value == 7);
  CHECK_FALSE(worst_interval({}, true));
}
