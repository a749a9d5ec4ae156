// Pieces every tool-output parser needs: lines, columns, numbers as the tools print them, and
// text safe to put in a JSON report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ernic::tool_text {

// Without leading and trailing spaces, TABs, CRs and LFs.
std::string_view trim(std::string_view text);

// The lines of `text` without their '\n'; a final line without one is still a line, an empty
// text has none.
std::vector<std::string_view> split_lines(std::string_view text);

// Words separated by any mix of spaces, TABs and CRs (tools align columns with both).
std::vector<std::string_view> split_words(std::string_view line);

// Tool output is ASCII; anything else (a binary file, a corrupted stream) is shown as '?' so
// that every string we report is valid UTF-8 for JSON.
std::string printable(std::string_view text);

bool contains(std::string_view text, std::string_view part);

// The whole word as a number the way printf prints one: "12.5", "1e3", and also "-nan" and "inf"
// (perftest prints -nan for the deviation of one sample); nullopt for "12x" or "".
std::optional<double> parse_number(std::string_view word);
// The same, but only finite numbers: a rate or a time of "inf" is no result.
std::optional<double> parse_finite_number(std::string_view word);
// The whole word as a decimal count.
std::optional<std::uint64_t> parse_unsigned(std::string_view word);

// The 1-based line number of byte `offset` in `text` (offsets past the end count as the end).
int line_of_offset(std::string_view text, std::size_t offset);

}  // namespace ernic::tool_text
