#include "base/diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace ernic {
namespace {

// Length of the well-formed UTF-8 sequence starting at text[i] (1 to 4), or 0.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t at) { return static_cast<unsigned char>(text[at]); };
  unsigned char lead = byte(i);
  std::size_t length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (lead >= 0xF5 || length == 0 || i + length > text.size()) {
    return 0;
  }
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      return 0;
    }
  }
  // Overlong three- and four-byte forms, surrogates and code points above U+10FFFF.
  unsigned char second = byte(i + 1);
  if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second >= 0xA0) ||
      (lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second >= 0x90)) {
    return 0;
  }
  return length;
}

// The code point of the well-formed UTF-8 sequence of `length` bytes at text[i].
char32_t decode_utf8(std::string_view text, std::size_t i, std::size_t length) {
  static constexpr unsigned char kLeadBits[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t code_point = static_cast<unsigned char>(text[i]) & kLeadBits[length];
  for (std::size_t k = 1; k < length; ++k) {
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  }
  return code_point;
}

// Code points a terminal or a line-based log reader does not show as a glyph: C1 controls, the
// line and paragraph separators (U+2028, U+2029: a line break to many readers), the format
// characters of Unicode's category Cf (invisible; the bidirectional ones reorder what follows)
// and the noncharacters.
bool is_non_printing(char32_t c) {
  struct Range {
    char32_t first, last;
  };
  static constexpr Range kRanges[] = {
      {0x80, 0x9F},       {0xAD, 0xAD},       {0x600, 0x605},     {0x61C, 0x61C},
      {0x6DD, 0x6DD},     {0x70F, 0x70F},     {0x890, 0x891},     {0x8E2, 0x8E2},
      {0x180E, 0x180E},   {0x200B, 0x200F},   {0x2028, 0x202E},   {0x2060, 0x2064},
      {0x2066, 0x206F},   {0xFDD0, 0xFDEF},   {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},
      {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},
      {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
  };
  if ((c & 0xFFFE) == 0xFFFE) {  // U+FFFE, U+FFFF and their copies in every plane
    return true;
  }
  return std::any_of(std::begin(kRanges), std::end(kRanges),
                     [c](const Range& range) { return c >= range.first && c <= range.last; });
}

}  // namespace

std::string escape_control_characters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      ++i;
    } else if (std::size_t length = c >= 0x80 ? utf8_length(text, i) : 0; length == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if (char32_t code_point = decode_utf8(text, i, length); is_non_printing(code_point)) {
      out += code_point > 0xFFFF ? fmt::format("\\U{:08x}", static_cast<std::uint32_t>(code_point))
                                 : fmt::format("\\u{:04x}", static_cast<std::uint32_t>(code_point));
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::string Diagnostic::format() const {
  std::string location = escape_control_characters(file);
  if (line > 0) {
    location += fmt::format(":{}:{}", line, column);
  }
  if (severity == Severity::kWarning) {
    location += ": warning";
  }
  std::string text = escape_control_characters(message);
  if (path.empty()) {
    return fmt::format("{}: {}", location, text);
  }
  return fmt::format("{}: {}: {}", location, escape_control_characters(path), text);
}

}  // namespace ernic
