#include "svg_chart.h"

#include <catch2/catch.hpp>

#include "testing/xml_check.h"

using namespace ernic::reports;

namespace {

ChartSpec spec_with(std::vector<std::optional<double>> values) {
  ChartSpec spec;
  spec.id = "chart-x";
  spec.title = "Send bandwidth, 4 KiB";
  spec.unit = "GB/s";
  spec.y_label = "GB/s, higher is better";
  spec.x_label = "runs, oldest to newest (commit sha)";
  spec.css_class = "s-bandwidth";
  for (std::size_t i = 0; i < values.size(); ++i) {
    spec.points.push_back(
        {"sha" + std::to_string(i), values[i], "#run-" + std::to_string(i), "tip & <run>"});
  }
  return spec;
}

}  // namespace

TEST_CASE("y scale rounds up to a readable step and starts at zero") {
  auto scale = y_scale_for(4.72);
  CHECK(scale.step == Approx(2.0));
  CHECK(scale.top == Approx(6.0));
  scale = y_scale_for(0.39);
  CHECK(scale.top >= 0.39 * 1.08);
  CHECK(scale.top / scale.step <= 6);
  scale = y_scale_for(0);
  CHECK(scale.top == 1);
}

TEST_CASE("a chart is well-formed SVG with axes, units, sha labels and the newest value") {
  auto svg = render_svg_chart(spec_with({0.36, 0.32, 0.39}));
  REQUIRE_FALSE(testing::xml_error(svg));
  auto texts = testing::xpath_values(svg, "//svg:text");
  auto has = [&](const std::string& text) {
    return std::find(texts.begin(), texts.end(), text) != texts.end();
  };
  CHECK(has("0.39 GB/s"));  // newest value labelled, with its unit
  CHECK(has("GB/s, higher is better"));
  CHECK(has("runs, oldest to newest (commit sha)"));
  CHECK(has("sha0"));
  CHECK(has("sha2"));
  auto links = testing::xpath_values(svg, "//svg:a/@href");
  CHECK(links == std::vector<std::string>{"#run-0", "#run-1", "#run-2"});
  auto titles = testing::xpath_values(svg, "//svg:circle/svg:title");
  REQUIRE(titles.size() == 3);
  CHECK(titles[0] == "tip & <run>");
}

TEST_CASE("a run without a value breaks the line instead of joining across it") {
  auto svg = render_svg_chart(spec_with({1.0, std::nullopt, 2.0, 3.0}));
  REQUIRE_FALSE(testing::xml_error(svg));
  auto d = testing::xpath_values(svg, "//svg:path[@class='line']/@d");
  REQUIRE(d.size() == 1);
  CHECK(std::count(d[0].begin(), d[0].end(), 'M') == 2);
  CHECK(testing::xpath_values(svg, "//svg:circle").size() == 3);
}

TEST_CASE("larger values sit higher on the chart") {
  auto svg = render_svg_chart(spec_with({1.0, 5.0}));
  auto cy = testing::xpath_values(svg, "//svg:circle/@cy");
  REQUIRE(cy.size() == 2);
  CHECK(std::stod(cy[1]) < std::stod(cy[0]));
}
