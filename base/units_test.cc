#include "base/units.h"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;

TEST_CASE("sizes parse with binary and decimal units") {
  CHECK(*ernic::parse_size("4096") == 4096);
  CHECK(*ernic::parse_size("4KiB") == 4096);
  CHECK(*ernic::parse_size("4K") == 4096);
  CHECK(*ernic::parse_size("1MiB") == 1048576);
  CHECK(*ernic::parse_size("8MiB") == 8388608);
  CHECK(*ernic::parse_size("1.5GiB") == 1610612736);
  CHECK(*ernic::parse_size("64kB") == 64000);
  CHECK(*ernic::parse_size(" 2 MiB ") == 2097152);
}

TEST_CASE("nonsense sizes are rejected") {
  for (const char* bad :
       {"", "KiB", "-4KiB", "4 parsecs", "1.5", "0.3B", "1e3", "4KiB4", "99999999999TiB"}) {
    INFO(bad);
    CHECK_FALSE(ernic::parse_size(bad).has_value());
  }
}

TEST_CASE("durations parse with units and combinations") {
  CHECK(*ernic::parse_duration("10s") == 10s);
  CHECK(*ernic::parse_duration("500ms") == 500ms);
  CHECK(*ernic::parse_duration("1m30s") == 90s);
  CHECK(*ernic::parse_duration("1h") == 3600s);
  CHECK(*ernic::parse_duration("2") == 2s);
  CHECK(*ernic::parse_duration("250us") == 250us);
  for (const char* bad : {"", "ten", "10 parsecs", "1s1m", "s", "1.2.3s", "-5s"}) {
    INFO(bad);
    CHECK_FALSE(ernic::parse_duration(bad).has_value());
  }
}

TEST_CASE("bandwidths parse like iperf3 -b") {
  CHECK(*ernic::parse_bandwidth("0") == 0);
  CHECK(*ernic::parse_bandwidth("100M") == 100000000);
  CHECK(*ernic::parse_bandwidth("1G") == 1000000000);
  CHECK(*ernic::parse_bandwidth("10Gbit") == 10000000000);
  CHECK(*ernic::parse_bandwidth("1.5G") == 1500000000);
  CHECK_FALSE(ernic::parse_bandwidth("fast").has_value());
  CHECK_FALSE(ernic::parse_bandwidth("10X").has_value());
}

TEST_CASE("sizes and durations format back") {
  CHECK(ernic::format_size(4096) == "4KiB");
  CHECK(ernic::format_size(8388608) == "8MiB");
  CHECK(ernic::format_size(1000) == "1000B");
  CHECK(ernic::format_duration_short(90s) == "1m30s");
  CHECK(ernic::format_duration_short(1500ms) == "1500ms");
}
