#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ernic::reports {

// Text for an XML or HTML element or attribute: escapes the five markup characters and drops
// characters XML 1.0 forbids (control characters from a tool's output would otherwise make the
// whole page or JUnit file unparsable).
std::string escape_markup(std::string_view text);

// A figure for a table cell or chart label: at most `significant` significant digits, no
// trailing zeros, no exponent for the magnitudes benchmarks produce ("4.72", "0.001", "393.7").
std::string format_figure(double value, int significant = 4);

// format_figure, or "–" (an en dash) when there is no value.
std::string format_optional(const std::optional<double>& value, int significant = 4);

// An id attribute made from arbitrary text: letters, digits, '-' and '_' kept, others '_'.
std::string anchor_id(std::string_view text);

// "4 KiB", "64 KiB", "1 MiB", "8 MiB", "1000 B": how sizes in bytes read in tables.
std::string size_label(std::uint64_t bytes);

}  // namespace ernic::reports
