#include "base/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace ernic {
namespace {

struct NumberAndSuffix {
  double value;
  bool integral;
  std::string suffix;
};

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// Splits "1.5GiB" into 1.5 and "GiB". Rejects signs, exponents and empty numbers.
std::optional<NumberAndSuffix> split_number(std::string_view text) {
  text = trim(text);
  std::size_t i = 0;
  bool seen_digit = false;
  bool seen_dot = false;
  while (i < text.size()) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      seen_digit = true;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!seen_digit) {
    return std::nullopt;
  }
  std::string number(text.substr(0, i));
  double value = std::strtod(number.c_str(), nullptr);
  if (!std::isfinite(value)) {
    return std::nullopt;
  }
  return NumberAndSuffix{value, !seen_dot, std::string(trim(text.substr(i)))};
}

std::optional<std::uint64_t> scale(double value, double multiplier) {
  double result = value * multiplier;
  if (result >= 18446744073709551615.0 || result < 0) {
    return std::nullopt;
  }
  double rounded = std::round(result);
  if (std::fabs(rounded - result) > 1e-6 * std::max(1.0, result)) {
    return std::nullopt;  // a fraction of a unit that is not a whole number
  }
  return static_cast<std::uint64_t>(rounded);
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  auto parsed = split_number(text);
  if (!parsed) {
    return std::nullopt;
  }
  const std::string& s = parsed->suffix;
  double multiplier = 0;
  if (s.empty() || s == "B") {
    multiplier = 1;
  } else if (s == "K" || s == "KiB" || s == "k") {
    multiplier = 1024.0;
  } else if (s == "M" || s == "MiB") {
    multiplier = 1024.0 * 1024;
  } else if (s == "G" || s == "GiB") {
    multiplier = 1024.0 * 1024 * 1024;
  } else if (s == "T" || s == "TiB") {
    multiplier = 1024.0 * 1024 * 1024 * 1024;
  } else if (s == "kB" || s == "KB") {
    multiplier = 1e3;
  } else if (s == "MB") {
    multiplier = 1e6;
  } else if (s == "GB") {
    multiplier = 1e9;
  } else {
    return std::nullopt;
  }
  return scale(parsed->value, multiplier);
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  text = trim(text);
  if (text.empty()) {
    return std::nullopt;
  }
  // A bare number is seconds.
  if (auto bare = split_number(text); bare && bare->suffix.empty()) {
    auto ns = scale(bare->value, 1e9);
    if (!ns || *ns > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return std::chrono::nanoseconds(static_cast<std::int64_t>(*ns));
  }
  // Otherwise a sequence of number+unit, largest first: "1h2m3s", "1m30s", "500ms".
  double total = 0;
  double last_unit = std::numeric_limits<double>::infinity();
  while (!text.empty()) {
    std::size_t i = 0;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (i == 0) {
      return std::nullopt;
    }
    std::string number(text.substr(0, i));
    if (std::count(number.begin(), number.end(), '.') > 1) {
      return std::nullopt;
    }
    double value = std::strtod(number.c_str(), nullptr);
    text.remove_prefix(i);
    std::size_t j = 0;
    while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) {
      ++j;
    }
    std::string_view unit = text.substr(0, j);
    text.remove_prefix(j);
    double unit_ns = 0;
    if (unit == "h") {
      unit_ns = 3600e9;
    } else if (unit == "m" || unit == "min") {
      unit_ns = 60e9;
    } else if (unit == "s") {
      unit_ns = 1e9;
    } else if (unit == "ms") {
      unit_ns = 1e6;
    } else if (unit == "us") {
      unit_ns = 1e3;
    } else if (unit == "ns") {
      unit_ns = 1;
    } else {
      return std::nullopt;
    }
    if (unit_ns >= last_unit) {
      return std::nullopt;  // "1s1m" or "1s1s"
    }
    last_unit = unit_ns;
    total += value * unit_ns;
  }
  if (!std::isfinite(total) || total > 9.2e18) {
    return std::nullopt;
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(total)));
}

std::optional<std::uint64_t> parse_bandwidth(std::string_view text) {
  auto parsed = split_number(text);
  if (!parsed) {
    return std::nullopt;
  }
  std::string s = parsed->suffix;
  for (const char* tail : {"bit/s", "bps", "bit"}) {
    std::string_view t(tail);
    if (s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0) {
      s.resize(s.size() - t.size());
      break;
    }
  }
  double multiplier = 0;
  if (s.empty()) {
    multiplier = 1;
  } else if (s == "K" || s == "k") {
    multiplier = 1e3;
  } else if (s == "M" || s == "m") {
    multiplier = 1e6;
  } else if (s == "G" || s == "g") {
    multiplier = 1e9;
  } else if (s == "T" || s == "t") {
    multiplier = 1e12;
  } else {
    return std::nullopt;
  }
  double bits = parsed->value * multiplier;
  if (bits >= 1.8e19) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(std::llround(bits));
}

std::string format_size(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{}{}", bytes, kUnits[unit]);
}

std::string format_duration(std::chrono::nanoseconds duration) {
  double ns = static_cast<double>(duration.count());
  if (ns >= 1e9) {
    return fmt::format("{:.2f} s", ns / 1e9);
  }
  if (ns >= 1e6) {
    return fmt::format("{:.1f} ms", ns / 1e6);
  }
  return fmt::format("{:.0f} us", ns / 1e3);
}

std::string format_duration_short(std::chrono::nanoseconds duration) {
  auto total_ms = std::chrono::duration_cast<std::chrono::milliseconds>(duration).count();
  if (total_ms % 1000 != 0) {
    return fmt::format("{}ms", total_ms);
  }
  long long s = total_ms / 1000;
  std::string out;
  if (s >= 3600) {
    out += fmt::format("{}h", s / 3600);
    s %= 3600;
  }
  if (s >= 60) {
    out += fmt::format("{}m", s / 60);
    s %= 60;
  }
  if (s > 0 || out.empty()) {
    out += fmt::format("{}s", s);
  }
  return out;
}

}  // namespace ernic
