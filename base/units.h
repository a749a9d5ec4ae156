#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ernic {

// Parses a byte size: "4096", "4KiB", "4K" (= KiB), "1MiB", "1.5GiB", "64kB" (= 64000).
// Returns nullopt for anything else, including negative, fractional-byte and overflowing values.
std::optional<std::uint64_t> parse_size(std::string_view text);
// Parses a duration: "10s", "500ms", "2m", "1m30s", "1h", "250us", or a bare number of seconds.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);
// Parses a bit rate the way iperf3 -b reads it: "0" (unlimited), "100M", "1G", "10Gbit",
// "500Kbit", "1.5G" (SI, bits per second).
std::optional<std::uint64_t> parse_bandwidth(std::string_view text);

// "4KiB", "1MiB", "8MiB", "1000B": exact binary units when they divide evenly.
std::string format_size(std::uint64_t bytes);
// "1.50 s", "250 ms", "12 us"
std::string format_duration(std::chrono::nanoseconds duration);
// Seconds as the compact form scenarios use, e.g. 90 s -> "1m30s".
std::string format_duration_short(std::chrono::nanoseconds duration);

}  // namespace ernic
