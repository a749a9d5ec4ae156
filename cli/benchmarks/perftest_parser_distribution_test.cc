// perftest's per-iteration (-H) and per-second layouts, and the distributions read from them.
#include <catch2/catch.hpp>

#include "benchmarks/perftest_parser.h"
#include "samples.h"

namespace ernic {
namespace {

using testing::read_sample;

// Made from perftest's documented layout for -H/--report-histogram (print_report_lat): after
// the header, "#, usec" and one "N, value" line per measured iteration, sorted, then the row.
const char* kHistogramOutput =
    R"(---------------------------------------------------------------------------------------
                    Send Latency Test
 Dual-port       : OFF		Device         : rxe0
 TX depth        : 1
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
#, usec
1, 1.91
2, 2.05
3, 2.1
4, 2.3
5, 9.8
 64      6          1.91        9.80      2.10  	       3.63     	3.1		9.80 		9.80
---------------------------------------------------------------------------------------
)";

// Made from perftest's layout for rows printed while a duration-mode bandwidth test runs (what
// --run_infinitely prints every window, and ernicctl perf --report-per-second every second):
// rows of the same size under one header, then the summary row of the measured time.
const char* kPerSecondOutput =
    R"(---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 TX depth        : 128
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      15000            0.00               7.86  		   0.015000
 65536      15500            0.00               8.12  		   0.015500
 65536      15200            0.00               7.97  		   0.015200
 65536      45700            0.00               7.98  		   0.015233
---------------------------------------------------------------------------------------
)";

TEST_CASE("perftest -H: every iteration is read with its row, no warnings", "[perftest][parser]") {
  PerftestOutput output = parse_perftest_output(kHistogramOutput);
  INFO(output.error);
  REQUIRE(output.ok());
  CHECK(output.warnings.empty());
  const PerftestRow& row = output.tables.at(0).rows.at(0);
  CHECK(row.histogram == std::vector<double>{1.91, 2.05, 2.1, 2.3, 9.8});
  CHECK(row.histogram_unit == "usec");
  auto distribution = perftest_row_distribution(output.tables[0], row);
  REQUIRE(distribution);
  CHECK(distribution->kind == kLatencyDistribution);
  CHECK(distribution->distribution.count == 5);
  CHECK(distribution->distribution.median() == Approx(2.1));
  CHECK(perftest_output_to_json(output)["tables"][0]["rows"][0]["histogram"]["iterations"] == 5);
}

TEST_CASE("perftest -H: a header printed again after the histogram is the same table",
          "[perftest][parser]") {
  // ernicctl perf prints the histogram, a dashed line and the header again before the row.
  std::string text = kHistogramOutput;
  auto row = text.find(" 64      6");
  REQUIRE(row != std::string::npos);
  auto header_start = text.find(" #bytes");
  auto header_end = text.find('\n', header_start) + 1;
  text.insert(row,
              std::string(87, '-') + "\n" + text.substr(header_start, header_end - header_start));
  PerftestOutput output = parse_perftest_output(text);
  INFO(output.error);
  REQUIRE(output.ok());
  REQUIRE(output.tables.size() == 1);
  CHECK(output.tables[0].rows.at(0).histogram.size() == 5);
}

TEST_CASE("perftest latency rows without -H give a sketch of their printed percentiles",
          "[perftest][parser]") {
  PerftestOutput output = parse_perftest_output(read_sample("ib_send_lat_s64.client.txt"));
  REQUIRE(output.ok());
  const PerftestTable& table = output.tables.at(0);
  auto distribution = perftest_row_distribution(table, table.rows.at(0));
  REQUIRE(distribution);
  CHECK(distribution->distribution.count == 1000);
  CHECK(distribution->distribution.min == Approx(1909.10));
  CHECK(distribution->distribution.median() == Approx(23112.66));
  CHECK(distribution->distribution.quantile(0.99) == Approx(30174.04));
  CHECK(distribution->distribution.max == Approx(52816.43));
}

TEST_CASE("perftest per-second rows: the last row of a size is the result, the others a series",
          "[perftest][parser]") {
  PerftestOutput output = parse_perftest_output(kPerSecondOutput);
  REQUIRE(output.ok());
  const PerftestTable& table = output.tables.at(0);
  CHECK(table.rows.size() == 4);
  CHECK(table.row_for_size(65536)->iterations == 45700);
  auto distribution = perftest_row_distribution(table, *table.row_for_size(65536));
  REQUIRE(distribution);
  CHECK(distribution->kind == kBandwidthDistribution);
  const Distribution& series = distribution->distribution;
  REQUIRE(series.values.size() == 3);
  CHECK(series.values[1] == Approx(8.12 / 8));
  CHECK(series.interval_s == 1.0);
  // A single row (every recorded sample) has no series.
  PerftestOutput single = parse_perftest_output(read_sample("ib_write_bw_s65536.client.txt"));
  const PerftestTable& client = *single.table(PerftestSide::kClient);
  CHECK_FALSE(perftest_row_distribution(client, client.rows.at(0)));
}

TEST_CASE("the load generator's rung-2 line is read, and a malformed one is a warning",
          "[perftest][parser]") {
  std::string printed = std::string(kPerSecondOutput) + " Time to first QP in RTS: 12.34 ms\n";
  PerftestOutput output = parse_perftest_output(printed);
  REQUIRE(output.ok());
  REQUIRE(output.time_to_first_rts_ms);
  CHECK(*output.time_to_first_rts_ms == Approx(12.34));
  CHECK(output.warnings.empty());
  PerftestOutput garbled =
      parse_perftest_output(std::string(kPerSecondOutput) + " Time to first QP in RTS: soon\n");
  CHECK_FALSE(garbled.time_to_first_rts_ms);
  REQUIRE(garbled.warnings.size() == 1);
  CHECK_THAT(garbled.warnings[0], Catch::Contains("Time to first QP in RTS: soon"));
  // real perftest prints no such line
  CHECK_FALSE(
      parse_perftest_output(read_sample("ib_write_bw_s65536.client.txt")).time_to_first_rts_ms);
}

}  // namespace
}  // namespace ernic
