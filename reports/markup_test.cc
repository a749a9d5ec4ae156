#include "markup.h"

#include <catch2/catch.hpp>

#include "testing/xml_check.h"

using namespace ernic::reports;

TEST_CASE("escape_markup escapes markup and drops characters XML forbids") {
  CHECK(escape_markup("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  std::string hostile = "bad\x01\x1b[31m";
  auto escaped = escape_markup(hostile);
  CHECK(escaped == "bad  [31m");
  CHECK_FALSE(testing::xml_error("<p>" + escaped + "</p>"));
  CHECK(testing::xml_error("<p>" + hostile + "</p>"));  // the check itself catches the raw text
}

TEST_CASE("format_figure keeps significant digits without trailing zeros") {
  CHECK(format_figure(4.72) == "4.72");
  CHECK(format_figure(393.74) == "393.7");
  CHECK(format_figure(0.001) == "0.001");
  CHECK(format_figure(2.0) == "2");
  CHECK(format_figure(4455.15) == "4455");
  CHECK(format_figure(0) == "0");
  CHECK(format_figure(-0.0001, 2) == "-0.0001");
  CHECK(format_optional(std::nullopt) == "\u2013");
}

TEST_CASE("size_label and anchor_id") {
  CHECK(size_label(4096) == "4 KiB");
  CHECK(size_label(1048576) == "1 MiB");
  CHECK(size_label(8388608) == "8 MiB");
  CHECK(size_label(1000) == "1000 B");
  CHECK(anchor_id("run 1/2:x") == "run_1_2_x");
}
