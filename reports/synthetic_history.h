#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ernic::reports {

// A made-up history for benchmarks and tests: records shaped like `ernicctl run` writes them
// (docs/history-format.md), with perftest send bandwidth and latency points at the tracked
// sizes, a write bandwidth point paired A/B with send, an iperf3 point, raw samples per
// repetition, hosts with T_init, spread over runner classes.
struct SyntheticOptions {
  std::size_t records = 1000;
  std::uint64_t seed = 1;
  std::size_t repetitions = 3;
  std::vector<std::string> runner_classes = {"github-hosted", "self-hosted"};
  double noise = 0.03;  // relative spread of the samples
};

// Record number `index` (0-based, time increases with it); deterministic for a seed.
nlohmann::json synthetic_record(std::size_t index, const SyntheticOptions& options);

// Writes options.records lines to `file` (replacing it).
void write_synthetic_history(const std::filesystem::path& file, const SyntheticOptions& options);

}  // namespace ernic::reports
