#pragma once

// The history record (docs/history-format.md) as C++ types: rocm-ernic's keys at the top, and
// everything ernicctl adds under "ernicctl". `ernicctl run` writes it, and every reader (the run
// summary, the reports, `compare`, the history tools, the fast index) reads these types.
// Serialising a record written by ernicctl gives the same bytes as before the types existed.

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "history/distribution.h"
#include "history/rung.h"
#include "history/statistics.h"

namespace ernic {

inline constexpr const char* kDefaultRunnerClass = "self-hosted";  // records without `runner`

// The trend series a record carries (rocm-ernic's `series` keys, plus TCP from
// `badges.tcp_bw_GBs`, which has no sizes).
enum class Series { kBandwidth, kLatency, kNvmeof, kTcp };
inline constexpr std::array<Series, 4> kAllSeries = {Series::kBandwidth, Series::kLatency,
                                                     Series::kTcp, Series::kNvmeof};
// The badges a record carries, in the order of rocm-ernic's files.
enum class Badge { kRdma, kTcp, kNvmeof, kS3 };
inline constexpr std::array<Badge, 4> kAllBadges = {Badge::kRdma, Badge::kTcp, Badge::kNvmeof,
                                                    Badge::kS3};
// The badges `ernicctl run` always writes (null without a value).
inline constexpr std::array<Badge, 3> kRecordedBadges = {Badge::kRdma, Badge::kTcp, Badge::kNvmeof};

const char* series_key(Series s);  // "bandwidth", "latency", "nvmeof", "tcp"
const char* badge_key(Badge b);    // "rdma_bw_GBs", "tcp_bw_GBs", "nvmeof_iops_M", "s3_bw_GBs"

struct MetricDeclaration {
  std::string unit;
  std::string better;  // "higher" | "lower"
};

// summary[metric]: n, median, mean, min, max, p99 of the samples.
using MetricSummary = Statistics;

struct SampleRecord {
  int rep = 0;
  bool warm = false;
  std::optional<double> duration_s;
  std::optional<double> tool_s;
  std::map<std::string, double> metrics;
  // What the repetition's figures summarise, by kind (kLatencyDistribution, ...): written only
  // when the tool printed it.
  std::map<std::string, Distribution> distributions;
  // Points with several tenants (`tenants:`): which tenant (1-based) and, when its repetition
  // failed, why (it then has no metrics).
  std::optional<int> tenant;
  std::optional<std::string> tenant_name;
  std::optional<std::string> failure;
  // Why each earlier attempt of the repetition failed when its tool declared the failure
  // retryable (perftest's clock calibration) and it ran again; written only when it did.
  std::vector<std::string> retries;
};

// Jain's index over a point's tenants for its headline throughput metric, per repetition in
// which every tenant passed.
struct FairnessRepetition {
  int rep = 0;
  double jain = 0;
  double min_share = 0;  // the smallest tenant's x_i / sum x
  double max_share = 0;
};

struct FairnessRecord {
  std::string metric;
  int tenants = 0;
  Statistics jain;       // over the repetitions
  double min_share = 0;  // over every repetition
  double max_share = 0;
  std::vector<FairnessRepetition> repetitions;
  // A concurrent group's index: the metric's unit and the members it covers ("bulk[...] t1",
  // "probe[...]"), `tenants` of them; both empty for a point's own index.
  std::string unit;
  std::vector<std::string> members;
};

// One start of a `concurrent:` group (its entries' k-th points, run together) and Jain's index
// over the members that measure the same throughput, one per such metric and unit with at least
// two members (e.g. three bulk bandwidth tenants beside a latency tenant: over the three). Its
// figures are of the multi-tenant rung.
struct GroupRecord {
  int group = 0;  // 1-based, in scenario order
  std::string name;
  std::vector<std::string> points;  // the ids of the points that started together
  std::vector<FairnessRecord> fairness;
};

// What `compare`, the summary and the report call a group's index: "group NAME: A + B" with
// " (METRIC)" when the group has more than one index.
std::string group_figure_name(const GroupRecord& group, const FairnessRecord& fairness);

// One tenant of a point with several tenants: its hosts and command lines, keyed like the
// point's own `hosts` and `commands` ("server", "client").
struct TenantRecord {
  std::map<std::string, std::string> hosts;
  std::map<std::string, std::string> commands;
};

// What an emulator instance moved while a point ran: the deltas of its stats file's
// total_bytes_sent and total_bytes_received (every verb's payload, as rocm-ernic counts it).
struct InstanceTraffic {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
};

struct PointRecord {
  std::string id;
  std::string benchmark;
  std::string tool;  // the benchmark module that ran it: perftest, iperf3, fio, pingpong, ...
  std::map<std::string, std::string> params;  // canonical text (sizes in bytes)
  std::string status;                         // passed | failed | skipped
  std::optional<std::string> reason;
  std::vector<std::string> logs;
  std::optional<std::string> log;  // one log path, as older records and the docs' example hold
  std::map<std::string, std::string> commands;  // "client", and "server" for two-sided tools
  // The program that measured the point when the tool may run more than one ("perftest",
  // "ernicctl load generator"); nullopt: the tool itself, and in older records.
  std::optional<std::string> measured_by;
  std::map<std::string, std::string> hosts;  // "server", "client"
  // Points with several tenants: every tenant's hosts and commands by tenant name (`hosts` and
  // `commands` above stay the first tenant's, as single-tenant readers expect); empty otherwise.
  std::map<std::string, TenantRecord> tenants;
  std::optional<int> repetitions;
  std::optional<double> duration_s;
  std::map<std::string, MetricDeclaration> metrics;  // every metric the tool can report
  std::vector<SampleRecord> samples;
  std::map<std::string, MetricSummary> summary;  // passed points only
  std::optional<FairnessRecord> fairness;        // points with several tenants
  // The `concurrent:` group (1-based) the point ran in, beside the group's other points.
  std::optional<int> group;
  // The rung of the evaluation ladder its figures belong to (history/rung.h), and the metrics
  // whose rung differs; nullopt in records written before rungs (point_rung() derives it).
  std::optional<Rung> rung;
  std::map<std::string, Rung> metric_rungs;
  // Points on emulator instances: what each instance (by id) moved meanwhile; empty otherwise.
  std::map<std::string, InstanceTraffic> instances;

  bool passed() const { return status == "passed"; }
  std::string param(const std::string& name) const;  // "" when absent
  // The metrics measured (in the summary or any sample), sorted.
  std::vector<std::string> measured_metrics() const;
  // samples[].metrics[name], in repetition order.
  std::vector<double> values(const std::string& metric) const;
  // samples[].distributions[kind] of the samples that have one, in repetition order.
  std::vector<const Distribution*> distributions(const std::string& kind) const;
  // summary[metric].median, else the median of the samples.
  std::optional<double> median(const std::string& metric) const;
  // The log files ("log" and "logs"), comma separated.
  std::string log_paths() const;
};

struct HostInfo {
  std::string name;
  std::string provider;
  std::string address;
  std::optional<double> t_init_s;
  std::map<std::string, std::string> facts;
  std::optional<double> vcpus;
  std::optional<double> memory_bytes;
};

struct ScenarioInfo {
  std::string name;
  std::string path;
  std::string sha256;
  std::string description;
};

struct EnvironmentInfo {
  std::optional<std::string> hostname;
  std::optional<std::string> kernel;
  std::optional<std::string> arch;
  std::optional<std::string> cpu_model;
  std::optional<unsigned> cpu_cores;
  std::optional<double> memory_bytes;
  std::optional<std::string> os;
};

struct AbPairRecord {
  std::string name;
  std::string a;
  std::string b;
  std::string metric;
};

// `run --attach`: the `ernicctl up` run whose hosts and instances the run used (their T_init is
// in that run's record).
struct AttachedToRecord {
  std::string up_run_dir;
  std::string up_run_token;
  std::optional<std::string> up_since;
  std::vector<std::string> rebuilt;  // instances whose program was rebuilt since they started
};

struct ErnicctlPart {
  int schema = 1;
  std::string version;
  std::string git_sha;
  std::string status;  // passed | failed | incomplete
  std::optional<std::string> error;
  std::string started;
  std::optional<std::string> finished;
  std::optional<double> duration_s;
  std::string run_dir;
  std::optional<std::string> run_token;
  // The flags that selected the points (`--only 'bw[*]' --repeat 3`); absent for a whole run.
  std::optional<std::string> selection;
  std::optional<AttachedToRecord> attached_to;
  ScenarioInfo scenario;
  std::string accelerator;  // none | kvm | tcg | mixed
  bool functional_only = false;
  EnvironmentInfo environment;
  std::vector<HostInfo> hosts;
  std::map<std::string, std::string> tools;  // tool versions
  nlohmann::json emulator;                   // what the emulator kind records (its "kind" first)
  std::vector<PointRecord> points;
  std::vector<GroupRecord> groups;  // concurrent groups' starts; absent when there are none
  std::vector<AbPairRecord> ab_pairs;
  // The trend series of a scenario that does not publish rocm-ernic's (history.publish: false),
  // whose top-level `series` is then empty; absent otherwise.
  std::map<std::string, std::map<std::string, double>> series;

  std::string emulator_kind() const;
};

using SeriesValues = std::map<std::string, std::map<std::string, double>>;  // bandwidth -> size

// The fields every history line carries at its top level, rocm-ernic's and ernicctl's alike:
// all a trend chart, a badge or a comparison's baseline needs of a run.
struct RecordHead {
  std::string generated;  // "%Y-%m-%d %H:%M:%S UTC"
  std::string sha;
  std::string run_id;
  std::string node;
  std::optional<std::string> runner;
  SeriesValues series;
  std::map<std::string, std::optional<double>> badges;

  // `runner`, or self-hosted for records without it.
  std::string runner_class() const;
  // (size in bytes, value) of one series, sizes ascending; TCP is one entry of size 0 from the
  // tcp badge.
  std::vector<std::pair<std::uint64_t, double>> values(Series s) const;
  std::optional<double> badge(Badge b) const;
  // "YYYY-MM-DD" of `generated`, or "" when it has none.
  std::string date() const;
};

struct HistoryRecord : RecordHead {
  std::optional<ErnicctlPart> ernicctl;

  const std::vector<PointRecord>& points() const;
  // The ernicctl part's status, scenario name and accelerator ("" for rocm-ernic's records).
  std::string run_status() const { return ernicctl ? ernicctl->status : ""; }
  std::string scenario_name() const { return ernicctl ? ernicctl->scenario.name : ""; }
  std::string accelerator() const { return ernicctl ? ernicctl->accelerator : ""; }
};

// Reads a record, tolerating missing and mistyped fields (they keep their defaults). With
// `problems`, every field of the wrong type is named there ("series.bandwidth.4096 must be a
// number"), as `history validate` reports them.
HistoryRecord read_history_record(const nlohmann::json& json,
                                  std::vector<std::string>* problems = nullptr);

// Parses one history line. nullopt with `error` set when it is not a JSON object (invalid JSON,
// or a number out of double's range such as 1e999).
std::optional<nlohmann::json> parse_history_line(std::string_view text, std::string& error);

void to_json(nlohmann::json& json, const HistoryRecord& record);
void from_json(const nlohmann::json& json, HistoryRecord& record);
void to_json(nlohmann::json& json, const ErnicctlPart& part);
void to_json(nlohmann::json& json, const PointRecord& point);
void to_json(nlohmann::json& json, const HostInfo& host);
void to_json(nlohmann::json& json, const EnvironmentInfo& environment);
void to_json(nlohmann::json& json, const FairnessRecord& fairness);
std::optional<FairnessRecord> read_fairness(const nlohmann::json& json);
void to_json(nlohmann::json& json, const GroupRecord& group);
void to_json(nlohmann::json& json, const Distribution& distribution);
// nullopt (with a problem named when `problems` is given) when it is not a distribution.
std::optional<Distribution> read_distribution(const nlohmann::json& json, const std::string& path,
                                              std::vector<std::string>* problems);

}  // namespace ernic
