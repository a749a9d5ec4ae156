#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "run_index.h"

namespace ernic::reports {

// One shields.io endpoint file.
struct BadgeFile {
  std::string file_name;  // badge-rdma.json, badge-tcp.json, badge-nvmeof.json, badge-s3.json
  std::string content;    // one line and a newline, exactly as rocm-ernic's publisher writes it
};

// The endpoint JSON with rocm-ernic's layout: keys sorted, ", " and ": " separators, non-ASCII
// escaped, trailing newline.
std::string badge_json(const std::string& label, const std::string& message,
                       const std::string& color);

// Badge text as rocm-ernic's current publisher prints it: a rate under 1 GB/s in MB/s with one
// decimal ("12.3 MB/s"), otherwise "%.2f GB/s"; IOPS (given in millions) as "1.23M IOPS" at or
// above a million, "152k IOPS" at or above a thousand, else the plain number ("999 IOPS").
std::string format_rate_GBs(double gigabytes_per_second);
std::string format_iops_millions(double millions);

// The four badges (rdma, tcp, nvmeof, s3) of one runner class. The class's newest run gives each
// value; when it has none, the newest earlier run of the same class that has one does, with " (as
// of YYYY-MM-DD)"; with no value in the class at all the message is "no data" in lightgrey.
std::vector<BadgeFile> render_badges(const RunIndex& index, const std::string& runner);

// The runner class of the newest run (self-hosted for an empty history).
std::string newest_runner_class(const RunIndex& index);

// Writes the badge files into `dir`, each replaced atomically.
void write_badges(const std::filesystem::path& dir, const std::vector<BadgeFile>& badges);

}  // namespace ernic::reports
