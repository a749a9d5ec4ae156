#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "run_index.h"

namespace ernic::reports {

struct SiteOptions {
  std::size_t chart_runs = 60;  // newest runs per runner class on the charts (0: all)
  std::size_t table_runs = 10;  // rows of the last-runs table
  std::string title = "ERNIC performance";
  std::string badge_runner;     // runner class of the badges; empty: the newest run's
};

// What `ernicctl report` wrote.
struct SiteSummary {
  std::filesystem::path page;
  std::size_t runs = 0;
  std::size_t runner_classes = 0;
  std::size_t charts = 0;
  std::vector<std::string> warnings;  // skipped lines, records that could not be reread
};

// The whole page as one polyglot HTML document (also well-formed XML): per runner class the
// trend charts (one inline SVG per series and size), the last runs, the newest run's reference
// tables, repeatability, A/B ratios, T_init and a details section per charted run that every
// figure links to. Needs no script and no network. Appends problems to `warnings`.
std::string render_page(const RunIndex& index, const SiteOptions& options,
                        std::vector<std::string>& warnings);

// Renders index.html and the three badge files into `out_dir`.
SiteSummary write_site(const RunIndex& index, const SiteOptions& options,
                       const std::filesystem::path& out_dir);

}  // namespace ernic::reports
