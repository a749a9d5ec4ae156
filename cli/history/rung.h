#pragma once

// The evaluation ladder (methodology item 6): performance is claimed per rung, never across.
// Every figure of a record belongs to one rung; this file declares the rungs and the one rule
// that assigns a figure its rung from what a record holds.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ernic {

struct PointRecord;

enum class Rung {
  kInit = 1,          // guest boot to device ready: the hosts' T_init
  kRuntimeStart = 2,  // driver loaded, QPs created: time from process start to the first QP in RTS
  kExecution = 3,     // one benchmark point
  kSustained = 4,     // a long or repeated point (`sustained: true`)
  kMultiTenant = 5,   // a point run on several tenants at once, and its fairness index
};
inline constexpr std::array<Rung, 5> kAllRungs = {
    Rung::kInit, Rung::kRuntimeStart, Rung::kExecution, Rung::kSustained, Rung::kMultiTenant};

// "init", "runtime-start", "execution", "sustained", "multi-tenant".
const char* rung_name(Rung rung);
int rung_number(Rung rung);
// "Rung 3: execution", for headings and table cells.
std::string rung_label(Rung rung);
// 1..5, else nullopt.
std::optional<Rung> rung_from_number(int number);

// A point metric that measures the runtime start (time_to_first_rts_ms, rts_ms, perftest's
// time_to_first_row_ms upper bound, ...).
bool is_runtime_start_metric(std::string_view metric);
// What a figure of the metric bounds rather than measures, for its label: "upper bound" for
// perftest's time to its first table row (an upper bound of the time to the first QP in RTS);
// "" for a metric that measures what it names.
const char* metric_qualifier(std::string_view metric);
// The metric's name as figures are labelled: "time_to_first_row_ms (upper bound)", else the name.
std::string metric_label(std::string_view metric);
// The point metric a multi-tenant point's record carries for Jain's index.
inline constexpr const char* kJainIndexMetric = "jain_index";
// The fairness index of a multi-tenant point (jain_index).
bool is_fairness_metric(std::string_view metric);

// The rule, from what the point holds (for records written before rungs, and for the writer):
// several tenants, a fairness index or a concurrent group -> multi-tenant; params.sustained
// true -> sustained; else execution.
Rung derive_point_rung(const PointRecord& point);
// A metric's rung in a point of rung `point_rung`: runtime-start metrics are rung 2, the
// fairness index rung 5, every other metric the point's.
Rung derive_metric_rung(Rung point_rung, std::string_view metric);

// What the writer records: the point's derived rung, and every declared or measured metric
// whose rung differs from it.
void assign_rungs(PointRecord& point);

// The rung the record gives the point, else the derived one.
Rung point_rung(const PointRecord& point);
// The rung of one figure of the point: the record's override for the metric, else the point's
// recorded rung; derived for records without rungs.
Rung metric_rung(const PointRecord& point, const std::string& metric);

// The point's measured metrics whose figures are of `rung`, sorted.
std::vector<std::string> metrics_of_rung(const PointRecord& point, Rung rung);
// Whether a view of `rung` shows the point: it measured a figure of that rung, or it measured
// nothing (failed, skipped) and is itself of that rung.
bool shows_in_rung(const PointRecord& point, Rung rung);

// T_init (the hosts' t_init_s) is rung 1.
inline constexpr Rung kTInitRung = Rung::kInit;

}  // namespace ernic
