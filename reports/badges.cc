#include "badges.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "base/durable_file.h"

namespace ernic::reports {
namespace {

struct BadgeSpec {
  Badge badge;
  const char* file_name;
  const char* label;
  std::string (*format)(double value);
};

// Files, labels and formats as rocm-ernic's publisher writes them.
constexpr BadgeSpec kBadgeSpecs[] = {
    {Badge::kRdma, "badge-rdma.json", "RDMA bandwidth", format_rate_GBs},
    {Badge::kTcp, "badge-tcp.json", "TCP/IP bandwidth", format_rate_GBs},
    {Badge::kNvmeof, "badge-nvmeof.json", "NVMe-oF 4K read", format_iops_millions},
    {Badge::kS3, "badge-s3.json", "S3 1M GET", format_rate_GBs},
};

std::string quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string format_rate_GBs(double gigabytes_per_second) {
  if (gigabytes_per_second < 1) {
    return fmt::format("{:.1f} MB/s", gigabytes_per_second * 1000);
  }
  return fmt::format("{:.2f} GB/s", gigabytes_per_second);
}

std::string format_iops_millions(double millions) {
  // Millions as stored are decimal fractions (0.152): round away the binary noise of * 1e6 so
  // that 0.001 M is 1000 IOPS, not 999.9999999999999.
  double iops = std::round(millions * 1e9) / 1e3;
  if (iops >= 1e6) {
    return fmt::format("{:.2f}M IOPS", iops / 1e6);
  }
  if (iops >= 1e3) {
    return fmt::format("{:.0f}k IOPS", iops / 1e3);
  }
  return fmt::format("{:.0f} IOPS", iops);
}

std::string badge_json(const std::string& label, const std::string& message,
                       const std::string& color) {
  return fmt::format("{{\"color\": {}, \"label\": {}, \"message\": {}, \"schemaVersion\": 1}}\n",
                     quoted(color), quoted(label), quoted(message));
}

std::string newest_runner_class(const RunIndex& index) {
  return index.runs.empty() ? std::string(kDefaultRunnerClass) : index.runs.back().runner_class();
}

std::vector<BadgeFile> render_badges(const RunIndex& index, const std::string& runner) {
  auto runs = index.runs_of(runner);
  std::vector<BadgeFile> out;
  for (const auto& spec : kBadgeSpecs) {
    std::string message = "no data";
    std::string color = "lightgrey";
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
      const auto& run = index.runs[*it];
      auto value = run.badge(spec.badge);
      if (!value) {
        continue;
      }
      message = spec.format(*value);
      if (it != runs.rbegin() && !run.date().empty()) {
        message += fmt::format(" (as of {})", run.date());
      }
      color = "blue";
      break;
    }
    out.push_back({spec.file_name, badge_json(spec.label, message, color)});
  }
  return out;
}

void write_badges(const std::filesystem::path& dir, const std::vector<BadgeFile>& badges) {
  for (const auto& badge : badges) {
    write_file_durably(dir / badge.file_name, badge.content, {.durability = Durability::kDerived});
  }
}

}  // namespace ernic::reports
