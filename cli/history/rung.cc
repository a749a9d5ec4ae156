#include "history/rung.h"

#include <fmt/format.h>

#include <set>

#include "history/history_record.h"

namespace ernic {
namespace {

bool truthy(const std::string& text) {
  return text == "true" || text == "1" || text == "yes";
}

}  // namespace

const char* rung_name(Rung rung) {
  switch (rung) {
    case Rung::kInit:
      return "init";
    case Rung::kRuntimeStart:
      return "runtime-start";
    case Rung::kExecution:
      return "execution";
    case Rung::kSustained:
      return "sustained";
    case Rung::kMultiTenant:
      return "multi-tenant";
  }
  return "execution";
}

int rung_number(Rung rung) {
  return static_cast<int>(rung);
}

std::string rung_label(Rung rung) {
  return fmt::format("Rung {}: {}", rung_number(rung), rung_name(rung));
}

std::optional<Rung> rung_from_number(int number) {
  for (Rung rung : kAllRungs) {
    if (rung_number(rung) == number) {
      return rung;
    }
  }
  return std::nullopt;
}

bool is_runtime_start_metric(std::string_view metric) {
  // The load generator's time to its first QP in RTS (rts_ms, time_to_rts_ms,
  // time_to_first_rts_ms), and perftest's time to its first table row, the upper bound.
  for (std::string_view suffix : {"rts_ms", "rts_s", "first_row_ms", "first_row_s"}) {
    if (metric == suffix || metric.ends_with("_" + std::string(suffix))) {
      return true;
    }
  }
  return false;
}

const char* metric_qualifier(std::string_view metric) {
  for (std::string_view suffix : {"first_row_ms", "first_row_s"}) {
    if (metric == suffix || metric.ends_with("_" + std::string(suffix))) {
      return "upper bound";
    }
  }
  return "";
}

std::string metric_label(std::string_view metric) {
  std::string qualifier = metric_qualifier(metric);
  return qualifier.empty() ? std::string(metric) : std::string(metric) + " (" + qualifier + ")";
}

bool is_fairness_metric(std::string_view metric) {
  return metric == kJainIndexMetric;
}

Rung derive_point_rung(const PointRecord& point) {
  std::set<int> tenants;
  for (const auto& sample : point.samples) {
    tenants.insert(sample.tenant.value_or(1));
  }
  bool fairness = point.fairness.has_value() || point.metrics.count(kJainIndexMetric) > 0 ||
                  point.summary.count(kJainIndexMetric) > 0;
  // A point of a concurrent group ran beside the group's other points: not a solo execution.
  if (tenants.size() > 1 || fairness || point.group) {
    return Rung::kMultiTenant;
  }
  if (truthy(point.param("sustained"))) {
    return Rung::kSustained;
  }
  return Rung::kExecution;
}

Rung derive_metric_rung(Rung point_rung, std::string_view metric) {
  if (is_runtime_start_metric(metric)) {
    return Rung::kRuntimeStart;
  }
  if (is_fairness_metric(metric)) {
    return Rung::kMultiTenant;
  }
  return point_rung;
}

void assign_rungs(PointRecord& point) {
  Rung rung = derive_point_rung(point);
  point.rung = rung;
  point.metric_rungs.clear();
  std::vector<std::string> metrics = point.measured_metrics();
  for (const auto& [name, declaration] : point.metrics) {
    metrics.push_back(name);
  }
  for (const auto& metric : metrics) {
    if (Rung own = derive_metric_rung(rung, metric); own != rung) {
      point.metric_rungs[metric] = own;
    }
  }
}

Rung point_rung(const PointRecord& point) {
  return point.rung.value_or(derive_point_rung(point));
}

Rung metric_rung(const PointRecord& point, const std::string& metric) {
  if (point.rung) {
    auto it = point.metric_rungs.find(metric);
    return it != point.metric_rungs.end() ? it->second : *point.rung;
  }
  return derive_metric_rung(derive_point_rung(point), metric);
}

std::vector<std::string> metrics_of_rung(const PointRecord& point, Rung rung) {
  std::vector<std::string> out;
  for (const auto& metric : point.measured_metrics()) {
    if (metric_rung(point, metric) == rung) {
      out.push_back(metric);
    }
  }
  return out;
}

bool shows_in_rung(const PointRecord& point, Rung rung) {
  if (point.measured_metrics().empty()) {
    return point_rung(point) == rung;
  }
  return !metrics_of_rung(point, rung).empty();
}

}  // namespace ernic
