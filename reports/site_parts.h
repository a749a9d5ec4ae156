#pragma once

// The pieces the trend page (site.cc) is rendered from: the per-run view the page builds for
// each runner class, and the writers of its tables and details sections.

#include <fmt/format.h>

#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "markup.h"
#include "run_index.h"
#include "site.h"

namespace ernic::reports {

// A run the page shows, with its anchor and, for runs with an ernicctl part, the full record.
struct ShownRun {
  std::size_t index = 0;  // into RunIndex::runs
  std::string anchor;
  std::optional<HistoryRecord> record;
};

inline std::string class_anchor(const std::string& name) {
  return "class-" + anchor_id(name);
}

// What every piece of the page writes with: the index, the options and the page text.
class PagePart {
 public:
  PagePart(const RunIndex& index, const SiteOptions& options, std::string& html)
      : index_(index), options_(options), html_(html), out_(std::back_inserter(html)) {}

  void out(std::string_view text) { html_.append(text); }

 protected:
  const RunIndex& index_;
  const SiteOptions& options_;
  std::string& html_;
  std::back_insert_iterator<std::string> out_;
};

// The last-runs table and the newest run's reference tables of one runner class (the newest of
// `shown` that recorded points).
void render_run_tables(const RunIndex& index, const SiteOptions& options, std::string& html,
                       const std::string& runner, const std::vector<ShownRun>& shown);

// One run's collapsible details section (id = its anchor).
void render_run_details(const RunIndex& index, const SiteOptions& options, std::string& html,
                        const ShownRun& shown);

}  // namespace ernic::reports
