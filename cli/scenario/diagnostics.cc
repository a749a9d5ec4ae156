#include "scenario/diagnostics.h"

#include <fmt/format.h>

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
    } else if (c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
      i += 2;
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
