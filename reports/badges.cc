#include "badges.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "output_files.h"

namespace ernic::reports {
namespace {

struct BadgeSpec {
  Badge badge;
  const char* file_name;
  const char* label;
  const char* unit;
};

// Labels and units as rocm-ernic's README shows them.
constexpr BadgeSpec kBadgeSpecs[] = {
    {Badge::kRdma, "badge-rdma.json", "RDMA bandwidth", "GB/s"},
    {Badge::kTcp, "badge-tcp.json", "TCP/IP bandwidth", "GB/s"},
    {Badge::kNvmeof, "badge-nvmeof.json", "NVMe-oF 4K read", "M IOPS"},
};

std::string quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string badge_json(const std::string& label, const std::string& message,
                       const std::string& color) {
  return fmt::format("{{\"color\": {}, \"label\": {}, \"message\": {}, \"schemaVersion\": 1}}\n",
                     quoted(color), quoted(label), quoted(message));
}

std::string newest_runner_class(const RunIndex& index) {
  return index.runs.empty() ? std::string(kDefaultRunnerClass) : index.runs.back().runner;
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
      message = fmt::format("{:.2f} {}", *value, spec.unit);
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
    write_file_atomically(dir / badge.file_name, badge.content);
  }
}

}  // namespace ernic::reports
