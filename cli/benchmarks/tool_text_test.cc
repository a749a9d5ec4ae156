#include "benchmarks/tool_text.h"

#include <catch2/catch.hpp>
#include <cmath>

namespace ernic::tool_text {
namespace {

using Words = std::vector<std::string_view>;

TEST_CASE("columns split on any mix of spaces, TABs and CRs", "[tool_text]") {
  CHECK(split_words(" 65536\t 1000 \t\t9.31  9.30\r") == Words{"65536", "1000", "9.31", "9.30"});
  CHECK(split_words("one") == Words{"one"});
  CHECK(split_words(" \t\r").empty());
  CHECK(split_words("").empty());
}

TEST_CASE("lines keep empty lines between them and a last line without a newline", "[tool_text]") {
  CHECK(split_lines("a\n\nb") == Words{"a", "", "b"});
  CHECK(split_lines("a\n") == Words{"a"});
  CHECK(split_lines("").empty());
  CHECK(trim(" \t x y \r\n") == "x y");
  CHECK(trim(" \r\n").empty());
}

TEST_CASE("numbers are whole words; finite ones exclude nan and inf", "[tool_text]") {
  CHECK(parse_number("12.5") == 12.5);
  CHECK(parse_number("1e3") == 1000.0);
  CHECK_FALSE(parse_number("12.5x"));
  CHECK_FALSE(parse_number(""));
  CHECK(std::isnan(*parse_number("-nan")));
  CHECK(std::isinf(*parse_number("inf")));
  CHECK(parse_finite_number("0.25") == 0.25);
  CHECK_FALSE(parse_finite_number("-nan"));
  CHECK_FALSE(parse_finite_number("inf"));
  CHECK(parse_unsigned("65536") == 65536u);
  CHECK_FALSE(parse_unsigned("-1"));
  CHECK_FALSE(parse_unsigned("4K"));
  CHECK_FALSE(parse_unsigned("99999999999999999999"));
}

TEST_CASE("reported text is printable ASCII and line numbers count from 1", "[tool_text]") {
  CHECK(printable("ok\tfine") == "ok\tfine");
  CHECK(printable("bad\x01\xff\n") == "bad???");
  CHECK(line_of_offset("a\nb\nc", 0) == 1);
  CHECK(line_of_offset("a\nb\nc", 2) == 2);
  CHECK(line_of_offset("a\nb\nc", 4) == 3);
  CHECK(line_of_offset("a\nb\nc", 99) == 3);
}

}  // namespace
}  // namespace ernic::tool_text
