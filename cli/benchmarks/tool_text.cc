#include "benchmarks/tool_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ernic::tool_text {

std::string_view trim(std::string_view text) {
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return {};
  }
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) {
      break;
    }
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t at = 0;
  while ((at = line.find_first_not_of(" \t\r", at)) != std::string_view::npos) {
    auto end = line.find_first_of(" \t\r", at);
    if (end == std::string_view::npos) {
      words.push_back(line.substr(at));
      break;
    }
    words.push_back(line.substr(at, end - at));
    at = end;
  }
  return words;
}

std::string printable(std::string_view text) {
  std::string result(text);
  for (char& c : result) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x7f || (byte < 0x20 && c != '\t')) {
      c = '?';
    }
  }
  return result;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

std::optional<double> parse_number(std::string_view word) {
  double value = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_finite_number(std::string_view word) {
  auto value = parse_number(word);
  if (value && !std::isfinite(*value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::uint64_t> parse_unsigned(std::string_view word) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) {
    return std::nullopt;
  }
  return value;
}

int line_of_offset(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(),
                                         text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

}  // namespace ernic::tool_text
