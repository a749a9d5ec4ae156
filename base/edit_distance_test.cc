#include "base/edit_distance.h"

#include <catch2/catch.hpp>

TEST_CASE("edit distance counts insertions, deletions and substitutions") {
  CHECK(ernic::edit_distance("", "") == 0);
  CHECK(ernic::edit_distance("provider", "provider") == 0);
  CHECK(ernic::edit_distance("provder", "provider") == 1);
  CHECK(ernic::edit_distance("kitten", "sitting") == 3);
  CHECK(ernic::edit_distance("abc", "") == 3);
}

TEST_CASE("closest match suggests plausible typos only") {
  std::vector<std::string> keys = {"name", "provider", "address", "repetitions", "timeout"};
  CHECK(ernic::closest_match("provder", keys) == "provider");
  CHECK(ernic::closest_match("Repetitons", keys) == "repetitions");
  CHECK(ernic::closest_match("timeuot", keys) == "timeout");
  CHECK(ernic::closest_match("zzzzzz", keys).empty());
}
