#include "markup.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace ernic::reports {

std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (byte < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += ' ';  // not allowed in XML 1.0, even as a character reference
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string format_figure(double value, int significant) {
  if (!std::isfinite(value)) {
    return std::isnan(value) ? "NaN" : (value > 0 ? "inf" : "-inf");
  }
  if (value == 0) {
    return "0";
  }
  int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  int decimals = std::max(0, significant - 1 - magnitude);
  decimals = std::min(decimals, 9);
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text.find('.') != std::string::npos) {
    while (!text.empty() && text.back() == '0') {
      text.pop_back();
    }
    if (!text.empty() && text.back() == '.') {
      text.pop_back();
    }
  }
  return text == "-0" ? "0" : text;
}

std::string format_optional(const std::optional<double>& value, int significant) {
  return value ? format_figure(*value, significant) : "\u2013";
}

std::string anchor_id(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_';
    out += keep ? c : '_';
  }
  return out;
}

std::string size_label(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024;
  constexpr std::uint64_t kMiB = kKiB * 1024;
  constexpr std::uint64_t kGiB = kMiB * 1024;
  if (bytes >= kGiB && bytes % kGiB == 0) {
    return fmt::format("{} GiB", bytes / kGiB);
  }
  if (bytes >= kMiB && bytes % kMiB == 0) {
    return fmt::format("{} MiB", bytes / kMiB);
  }
  if (bytes >= kKiB && bytes % kKiB == 0) {
    return fmt::format("{} KiB", bytes / kKiB);
  }
  return fmt::format("{} B", bytes);
}

}  // namespace ernic::reports
