#include "benchmarks/perftest_parser.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "samples.h"

namespace ernic {
namespace {

using testing::read_sample;

// The sample with its lines [from, to) replaced by `replacement` (1-based, like the parser's
// line numbers).
std::string splice_lines(const std::string& text, int from, int to,
                         const std::string& replacement) {
  std::istringstream in(text);
  std::string line;
  std::string result;
  for (int number = 1; std::getline(in, line); ++number) {
    if (number == from) {
      result += replacement;
    }
    if (number < from || number >= to) {
      result += line + "\n";
    }
  }
  return result;
}

double bw_gbs_from_mib(double value) {
  return value * 1048576.0 / 1e9;
}

TEST_CASE("perftest bw client sweep: every size, units from the header", "[perftest]") {
  PerftestOutput output = parse_perftest_output(read_sample("ib_read_bw_a_n20.client.txt"));
  REQUIRE(output.ok());
  REQUIRE(output.tables.size() == 1);
  const PerftestTable& table = output.tables[0];
  CHECK(table.test == "RDMA_Read BW Test");
  CHECK(table.verb == "read");
  CHECK(table.mode == PerftestMode::kBandwidth);
  CHECK(table.side == PerftestSide::kClient);
  CHECK(table.unit() == "MB/sec");
  CHECK(table.header_line == 24);
  REQUIRE(table.rows.size() == 23);
  CHECK(table.rows.front().bytes == 2);
  CHECK(table.rows.back().bytes == 8388608);

  const PerftestRow* row = table.row_for_size(4096);
  REQUIRE(row != nullptr);
  CHECK(row->iterations == 20);
  CHECK(table.value(*row, "BW peak") == Approx(14.08));
  CHECK(table.value(*row, "BW average") == Approx(13.53));
  CHECK(table.value(*row, "MsgRate") == Approx(0.003465));
  auto metrics = perftest_row_metrics(table, *row);
  CHECK(metrics.at("bw_peak_GBs") == Approx(bw_gbs_from_mib(14.08)));
  CHECK(metrics.at("bw_avg_GBs") == Approx(0.01418723).epsilon(1e-6));
  CHECK(metrics.at("msg_rate_mpps") == Approx(0.003465));

  // 0.00 in BW peak means not measured; 0.00 in BW average is a (rounded) measurement.
  const PerftestRow* smallest = table.row_for_size(2);
  REQUIRE(smallest != nullptr);
  CHECK_FALSE(table.value(*smallest, "BW peak").has_value());
  CHECK(table.value(*smallest, "BW average") == Approx(0.0));
  auto smallest_metrics = perftest_row_metrics(table, *smallest);
  CHECK(smallest_metrics.count("bw_peak_GBs") == 0);
  CHECK(smallest_metrics.at("bw_avg_GBs") == 0.0);
  CHECK(output.warnings.size() == 1);  // "Device not recognized to implement inline feature"
}

TEST_CASE("perftest bw server of a write/read sweep prints only the last size", "[perftest]") {
  for (const char* name : {"ib_read_bw_a_n20.server.txt", "ib_write_bw_a_n20.server.txt"}) {
    INFO(name);
    PerftestOutput output = parse_perftest_output(read_sample(name));
    REQUIRE(output.ok());
    REQUIRE(output.tables.size() == 1);
    CHECK(output.tables[0].side == PerftestSide::kServer);
    REQUIRE(output.tables[0].rows.size() == 1);
    CHECK(output.tables[0].rows[0].bytes == 8388608);
  }
  PerftestOutput write = parse_perftest_output(read_sample("ib_write_bw_a_n20.server.txt"));
  const PerftestTable& table = write.tables[0];
  CHECK(table.verb == "write");
  CHECK(table.value(table.rows[0], "BW peak") == Approx(22.49));
}

TEST_CASE("perftest send bw receiver: peak not measured is absent, not zero", "[perftest]") {
  PerftestOutput output = parse_perftest_output(read_sample("ib_send_bw_s65536.server.txt"));
  REQUIRE(output.ok());
  const PerftestTable& table = output.tables.at(0);
  CHECK(table.side == PerftestSide::kServer);
  CHECK(table.verb == "send");
  const PerftestRow* row = table.row_for_size(65536);
  REQUIRE(row != nullptr);
  CHECK(row->iterations == 1000);
  CHECK_FALSE(table.value(*row, "BW peak").has_value());
  auto metrics = perftest_row_metrics(table, *row);
  CHECK(metrics.count("bw_peak_GBs") == 0);
  CHECK(metrics.at("bw_avg_GBs") == Approx(bw_gbs_from_mib(8.31)));

  PerftestOutput sweep = parse_perftest_output(read_sample("ib_send_bw_a_n20.server.txt"));
  REQUIRE(sweep.ok());
  const PerftestTable& sweep_table = sweep.tables.at(0);
  REQUIRE(sweep_table.rows.size() == 23);
  for (const auto& each : sweep_table.rows) {
    CHECK_FALSE(sweep_table.value(each, "BW peak").has_value());
  }
  CHECK(sweep_table.value(*sweep_table.row_for_size(128), "BW average") == Approx(600.65));

  PerftestOutput client = parse_perftest_output(read_sample("ib_send_bw_s65536.client.txt"));
  REQUIRE(client.ok());
  CHECK(client.tables[0].side == PerftestSide::kClient);
  CHECK(client.tables[0].value(client.tables[0].rows[0], "BW peak") == Approx(9.86));
  CHECK(client.tables[0].value(client.tables[0].rows[0], "BW average") == Approx(8.29));
}

TEST_CASE("perftest Gb/sec table (--report_gbits) converts to GB/s by dividing by 8",
          "[perftest]") {
  PerftestOutput output =
      parse_perftest_output(read_sample("perftest-ib_write_bw-a-report_gbits-nvidia-docs.txt"));
  REQUIRE(output.ok());
  const PerftestTable& table = output.tables.at(0);
  CHECK(table.unit() == "Gb/sec");
  CHECK(table.side == PerftestSide::kClient);
  REQUIRE(table.rows.size() == 23);
  const PerftestRow* row = table.row_for_size(65536);
  REQUIRE(row != nullptr);
  CHECK(row->iterations == 5000);
  auto metrics = perftest_row_metrics(table, *row);
  CHECK(metrics.at("bw_peak_GBs") == Approx(92.39 / 8));
  CHECK(metrics.at("bw_avg_GBs") == Approx(11.5475));
  CHECK(metrics.at("msg_rate_mpps") == Approx(0.176196));
}

TEST_CASE("perftest MiB/sec header (perftest 24.07+) reads like MB/sec", "[perftest]") {
  std::string text = read_sample("ib_write_bw_s65536.client.txt");
  std::string mib = text;
  for (auto at = mib.find("MB/sec"); at != std::string::npos; at = mib.find("MB/sec", at)) {
    mib.replace(at, 6, "MiB/sec");
  }
  PerftestOutput output = parse_perftest_output(mib);
  REQUIRE(output.ok());
  const PerftestTable& table = output.tables.at(0);
  CHECK(table.unit() == "MiB/sec");
  auto metrics = perftest_row_metrics(table, table.rows.at(0));
  CHECK(metrics.at("bw_peak_GBs") == Approx(bw_gbs_from_mib(13.51)));
  CHECK(metrics.at("bw_avg_GBs") == Approx(0.012289310).epsilon(1e-6));
}

TEST_CASE("perftest unknown bandwidth unit: no metric rather than a wrong one", "[perftest]") {
  std::string text = read_sample("ib_write_bw_s65536.client.txt");
  for (auto at = text.find("MB/sec"); at != std::string::npos; at = text.find("MB/sec", at)) {
    text.replace(at, 6, "furlongs");
  }
  PerftestOutput output = parse_perftest_output(text);
  REQUIRE(output.ok());
  auto metrics = perftest_row_metrics(output.tables[0], output.tables[0].rows.at(0));
  CHECK(metrics.count("bw_peak_GBs") == 0);
  CHECK(metrics.count("bw_avg_GBs") == 0);
  CHECK(metrics.at("msg_rate_mpps") == Approx(0.000188));
}

TEST_CASE("perftest latency: columns by name, min and max never swapped", "[perftest]") {
  PerftestOutput output = parse_perftest_output(read_sample("ib_read_lat_a_n10.client.txt"));
  REQUIRE(output.ok());
  const PerftestTable& table = output.tables.at(0);
  CHECK(table.mode == PerftestMode::kLatency);
  CHECK(table.verb == "read");
  CHECK(table.unit() == "usec");
  REQUIRE(table.rows.size() == 23);
  const PerftestRow* row = table.row_for_size(65536);
  REQUIRE(row != nullptr);
  auto metrics = perftest_row_metrics(table, *row);
  CHECK(metrics.at("lat_min_us") == Approx(2816.84));
  CHECK(metrics.at("lat_max_us") == Approx(44722.96));
  CHECK(metrics.at("lat_typical_us") == Approx(3301.75));
  CHECK(metrics.at("lat_avg_us") == Approx(3371.50));
  CHECK(metrics.at("lat_stdev_us") == Approx(430.07));
  CHECK(metrics.at("lat_p99_us") == Approx(44722.96));
  CHECK(metrics.at("lat_p999_us") == Approx(44722.96));
  for (const auto& each : table.rows) {
    auto m = perftest_row_metrics(table, each);
    CHECK(m.at("lat_min_us") <= m.at("lat_typical_us"));
    CHECK(m.at("lat_typical_us") <= m.at("lat_max_us"));
  }
  // t_stdev printed as -nan is not a number.
  auto last = perftest_row_metrics(table, *table.row_for_size(8388608));
  CHECK(last.count("lat_stdev_us") == 0);
  CHECK(last.at("lat_typical_us") == Approx(493747.64));

  PerftestOutput single = parse_perftest_output(read_sample("ib_read_lat_s64.client.txt"));
  REQUIRE(single.ok());
  auto m = perftest_row_metrics(single.tables[0], single.tables[0].rows.at(0));
  CHECK(single.tables[0].rows[0].iterations == 1000);
  CHECK(m.at("lat_min_us") == Approx(219.47));
  CHECK(m.at("lat_max_us") == Approx(2757.08));
  CHECK(m.at("lat_p99_us") == Approx(871.94));
  CHECK(m.at("lat_p999_us") == Approx(2757.08));
}

TEST_CASE("perftest latency servers: write and send print a table, read prints none",
          "[perftest]") {
  PerftestOutput write = parse_perftest_output(read_sample("ib_write_lat_s64.server.txt"));
  REQUIRE(write.ok());
  CHECK(write.tables[0].side == PerftestSide::kServer);
  CHECK(perftest_row_metrics(write.tables[0], write.tables[0].rows.at(0)).at("lat_typical_us") ==
        Approx(22001.27));
  PerftestOutput send = parse_perftest_output(read_sample("ib_send_lat_a_n10.server.txt"));
  REQUIRE(send.ok());
  CHECK(send.tables[0].side == PerftestSide::kServer);
  CHECK(send.tables[0].rows.size() == 23);

  PerftestOutput read = parse_perftest_output(read_sample("ib_read_lat_a_n10.server.txt"));
  CHECK_FALSE(read.ok());
  CHECK(read.tables.empty());
  CHECK_THAT(read.error, Catch::Contains("no result table") && Catch::Contains("ib_read_lat"));
}

TEST_CASE("perftest old 5-column latency header, in any column order", "[perftest]") {
  std::string old_header =
      "------------------------------------------------------------------\n"
      "                    Send Latency Test\n"
      " TX depth        : 1\n"
      "------------------------------------------------------------------\n"
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
      " 2       1000          0.98           5.06         1.01   \n"
      " 4       1000          0.97           13.63        1.00   \n"
      "------------------------------------------------------------------\n";
  PerftestOutput output = parse_perftest_output(old_header);
  REQUIRE(output.ok());
  const PerftestTable& table = output.tables.at(0);
  CHECK(table.columns.size() == 5);
  auto metrics = perftest_row_metrics(table, *table.row_for_size(4));
  CHECK(metrics.at("lat_min_us") == Approx(0.97));
  CHECK(metrics.at("lat_max_us") == Approx(13.63));
  CHECK(metrics.at("lat_typical_us") == Approx(1.00));
  CHECK(metrics.count("lat_avg_us") == 0);
  CHECK(metrics.count("lat_p99_us") == 0);

  // Same numbers with t_max printed before t_min: mapping follows the header names.
  std::string reordered =
      " #bytes #iterations    t_max[usec]    t_min[usec]  t_typical[usec]\n"
      " 4       1000          13.63          0.97         1.00   \n"
      "------------------------------------------------------------------\n";
  PerftestOutput swapped = parse_perftest_output(reordered);
  REQUIRE(swapped.ok());
  auto swapped_metrics = perftest_row_metrics(swapped.tables[0], swapped.tables[0].rows.at(0));
  CHECK(swapped_metrics.at("lat_min_us") == Approx(0.97));
  CHECK(swapped_metrics.at("lat_max_us") == Approx(13.63));
}

TEST_CASE("perftest server and client interleaved in one stream", "[perftest]") {
  PerftestOutput output = parse_perftest_output(
      read_sample("perftest-ib_write_bw-a-loopback-interleaved-superbench.log"));
  REQUIRE(output.ok());
  REQUIRE(output.tables.size() == 2);
  const PerftestTable* client = output.table(PerftestSide::kClient);
  const PerftestTable* server = output.table(PerftestSide::kServer);
  REQUIRE(client != nullptr);
  REQUIRE(server != nullptr);
  CHECK(client->test == "RDMA_Write BW Test");
  CHECK(client->rows.size() == 23);
  REQUIRE(server->rows.size() == 1);
  CHECK(server->rows[0].bytes == 8388608);
  const PerftestRow* row = client->row_for_size(4096);
  REQUIRE(row != nullptr);
  CHECK(row->iterations == 2000);
  CHECK(client->value(*row, "BW peak") == Approx(10034.02));
  CHECK(client->value(*row, "BW average") == Approx(9948.41));
  CHECK(client->value(*row, "MsgRate") == Approx(2.546793));

  PerftestOutput eight =
      parse_perftest_output(read_sample("perftest-ib_write_bw-8M-loopback-superbench.log"));
  REQUIRE(eight.ok());
  REQUIRE(eight.tables.size() == 2);
  CHECK(eight.tables[0].side == PerftestSide::kClient);
  CHECK(eight.tables[1].side == PerftestSide::kServer);
  for (const auto& table : eight.tables) {
    REQUIRE(table.rows.size() == 1);
    CHECK(table.rows[0].iterations == 20000);
    CHECK(table.value(table.rows[0], "BW average") == Approx(24056.72));
  }
}

TEST_CASE("perftest warnings between rows do not break the table", "[perftest]") {
  std::string text = read_sample("ib_send_bw_a_n20.client.txt");
  std::string warning =
      "Conflicting CPU frequency values detected: 1500.000000 != 2400.000000. CPU Frequency is "
      "not max.\n";
  std::string with_warnings = splice_lines(text, 30, 30, warning);
  with_warnings = splice_lines(with_warnings, 40, 40, warning);
  PerftestOutput output = parse_perftest_output(with_warnings);
  REQUIRE(output.ok());
  CHECK(output.tables.at(0).rows.size() == 23);
  REQUIRE(output.warnings.size() == 2);
  CHECK_THAT(output.warnings[0], Catch::StartsWith("line 30: Conflicting CPU frequency"));
  CHECK(output.tables[0].value(*output.tables[0].row_for_size(16384), "BW peak") == Approx(11.64));
}

TEST_CASE("perftest partial table then a completion error is a failure with the rows",
          "[perftest]") {
  std::string text = read_sample("ib_send_bw_a_n20.client.txt");
  // Keep the header and the first 10 rows (sizes 2 .. 1024), then the errors perftest prints.
  std::string partial = splice_lines(text, 33, 1000,
                                     " Completion with error at client\n"
                                     " Failed status 12: wr_id 0 syndrom 0x81\n"
                                     "scnt=128, ccnt=0\n");
  PerftestOutput output = parse_perftest_output(partial);
  CHECK_FALSE(output.ok());
  CHECK(output.error_line == 33);
  CHECK_THAT(output.error, Catch::Contains("Completion with error at client") &&
                               Catch::Contains("IBV_WC_RETRY_EXC_ERR"));
  REQUIRE(output.tables.size() == 1);
  CHECK(output.tables[0].rows.size() == 10);
  CHECK(output.tables[0].rows.back().bytes == 1024);

  ParsedFile file = parse_perftest_file(partial);
  CHECK_THAT(file.error, Catch::StartsWith("perftest: line 33: Completion with error"));
  CHECK(file.data["tables"][0]["rows"].size() == 10);
  CHECK(file.data["tables"][0]["complete"] == false);
}

TEST_CASE("perftest output cut short without an error message is not a result", "[perftest]") {
  std::string text = read_sample("ib_write_bw_a_n20.client.txt");
  std::string cut = splice_lines(text, 37, 1000, "");  // header at 22, rows 23..36
  PerftestOutput output = parse_perftest_output(cut);
  CHECK_FALSE(output.ok());
  CHECK_THAT(output.error, Catch::Contains("cut short"));
  CHECK(output.tables.at(0).rows.size() == 14);
}

TEST_CASE("perftest row with the wrong column count is an error, not dropped", "[perftest]") {
  std::string text = read_sample("ib_write_bw_s65536.client.txt");
  std::string bad = splice_lines(text, 23, 24, " 65536      1000             13.51\n");
  PerftestOutput output = parse_perftest_output(bad);
  CHECK_FALSE(output.ok());
  CHECK(output.error_line == 23);
  CHECK_THAT(output.error,
             Catch::Contains("expected 5 columns (#bytes, #iterations, BW peak, BW average, "
                             "MsgRate)") &&
                 Catch::Contains("found 3"));
}

TEST_CASE("perftest connection and resource errors are named", "[perftest]") {
  PerftestOutput no_server =
      parse_perftest_output(read_sample("ib_write_bw_error_no_server.client.txt"));
  CHECK_FALSE(no_server.ok());
  CHECK(no_server.tables.empty());
  CHECK(no_server.error_line == 1);
  CHECK_THAT(no_server.error, Catch::StartsWith("line 1: Couldn't connect to 10.10.0.1:18515") &&
                                  Catch::Contains("Unable to init the socket connection"));

  PerftestOutput verbatim =
      parse_perftest_output(read_sample("perftest-connection-errors-verbatim.txt"));
  CHECK_FALSE(verbatim.ok());
  CHECK(verbatim.error_line == 3);
  CHECK_THAT(verbatim.error, Catch::Contains("Couldn't connect to 192.168.125.211:18515"));

  PerftestOutput memlock =
      parse_perftest_output(" Couldn't create CQ\n Unable to create the needed resources\n");
  CHECK_FALSE(memlock.ok());
  CHECK_THAT(memlock.error, Catch::Contains("RLIMIT_MEMLOCK"));

  PerftestOutput port_down =
      parse_perftest_output("Port number 1 state is Down\n    Couldn't set the link layer\n");
  CHECK_THAT(port_down.error, Catch::Contains("the RDMA port is down"));

  PerftestOutput empty = parse_perftest_output("");
  CHECK_FALSE(empty.ok());
  CHECK_THAT(empty.error, Catch::Contains("empty"));
}

TEST_CASE("perftest --out_json files are not a result (the text table is)", "[perftest]") {
  for (const char* name : {"ib_send_lat_outjson.client.json", "ib_write_bw_outjson.server.json"}) {
    INFO(name);
    PerftestOutput output = parse_perftest_output(read_sample(name));
    CHECK_FALSE(output.ok());
    CHECK_THAT(output.error, Catch::Contains("no result table"));
  }
  // This one is a terminal transcript: jq's complaint about the invalid JSON is an error line.
  PerftestOutput transcript =
      parse_perftest_output(read_sample("perftest-out_json-pre24.01-invalid-json-issue216.txt"));
  CHECK(transcript.tables.empty());
  CHECK_THAT(transcript.error, Catch::Contains("parse error: Invalid literal"));
}

TEST_CASE("perftest parse JSON: test, verb, mode, unit, side, every column by name", "[perftest]") {
  ParsedFile file = parse_perftest_file(read_sample("ib_send_bw_s65536.server.txt"));
  CHECK(file.error.empty());
  const auto& table = file.data.at("tables").at(0);
  CHECK(table.at("test") == "Send BW Test");
  CHECK(table.at("verb") == "send");
  CHECK(table.at("mode") == "bw");
  CHECK(table.at("unit") == "MB/sec");
  CHECK(table.at("side") == "server");
  const auto& columns = table.at("rows").at(0).at("columns");
  CHECK(columns.at("#bytes") == 65536);
  CHECK(columns.at("#iterations") == 1000);
  CHECK(columns.at("BW peak").is_null());
  CHECK(columns.at("BW average") == Approx(8.31));
  CHECK(columns.at("MsgRate") == Approx(0.000133));
  CHECK(table.at("units").at("MsgRate") == "Mpps");

  ParsedFile lat = parse_perftest_file(read_sample("ib_write_lat_s64.client.txt"));
  const auto& lat_table = lat.data.at("tables").at(0);
  CHECK(lat_table.at("mode") == "lat");
  CHECK(lat_table.at("unit") == "usec");
  CHECK(lat_table.at("rows").at(0).at("columns").at("99.9% percentile") == Approx(26202.44));
  CHECK(lat_table.at("rows").at(0).at("metrics").at("lat_p99_us") == Approx(23927.02));

  ParsedFile failed = parse_perftest_file(read_sample("ib_write_bw_error_no_server.client.txt"));
  CHECK_THAT(failed.error, Catch::StartsWith("perftest: line 1: Couldn't connect"));
}

// Every perftest sample in the shared folder, each with its expected outcome, so a new sample
// cannot be skipped silently.
TEST_CASE("perftest: every sample parses to its expected outcome", "[perftest]") {
  const std::set<std::string> results = {
      "ib_read_bw_a_n20.client.txt",
      "ib_read_bw_a_n20.server.txt",
      "ib_read_bw_s65536.client.txt",
      "ib_read_bw_s65536.server.txt",
      "ib_read_lat_a_n10.client.txt",
      "ib_read_lat_s64.client.txt",
      "ib_send_bw_a_n20.client.txt",
      "ib_send_bw_a_n20.server.txt",
      "ib_send_bw_s65536.client.txt",
      "ib_send_bw_s65536.server.txt",
      "ib_send_lat_a_n10.client.txt",
      "ib_send_lat_a_n10.server.txt",
      "ib_send_lat_outjson.client.txt",
      "ib_send_lat_outjson.server.txt",
      "ib_send_lat_s64.client.txt",
      "ib_send_lat_s64.server.txt",
      "ib_write_bw_a_n20.client.txt",
      "ib_write_bw_a_n20.server.txt",
      "ib_write_bw_outjson.client.txt",
      "ib_write_bw_outjson.server.txt",
      "ib_write_bw_rdmacm_s65536.client.txt",
      "ib_write_bw_rdmacm_s65536.server.txt",
      "ib_write_bw_s65536.client.txt",
      "ib_write_bw_s65536.server.txt",
      "ib_write_lat_a_n10.client.txt",
      "ib_write_lat_a_n10.server.txt",
      "ib_write_lat_s64.client.txt",
      "ib_write_lat_s64.server.txt",
      "libvirt_ib_write_bw_s65536.client.txt",
      "pipeline_ib_write_bw_s65536.client.txt",
      "pipeline_ib_write_bw_s65536.server.txt",
      "perftest-ib_write_bw-8M-loopback-superbench.log",
      "perftest-ib_write_bw-a-loopback-interleaved-superbench.log",
      "perftest-ib_write_bw-a-report_gbits-nvidia-docs.txt"};
  const std::set<std::string> failures = {"ib_read_lat_a_n10.server.txt",
                                          "ib_read_lat_s64.server.txt",
                                          "ib_write_bw_error_no_server.client.txt",
                                          "perftest-connection-errors-verbatim.txt",
                                          "perftest-out_json-pre24.01-invalid-json-issue216.txt",
                                          "ib_send_lat_outjson.client.json",
                                          "ib_send_lat_outjson.server.json",
                                          "ib_write_bw_outjson.client.json",
                                          "ib_write_bw_outjson.server.json"};
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ERNIC_SAMPLES_DIR)) {
    std::string name = entry.path().filename().string();
    bool perftest = name.starts_with("ib_") || name.starts_with("perftest-") ||
                    name.find("_ib_") != std::string::npos;
    if (!perftest) {
      continue;
    }
    INFO(name);
    ++seen;
    REQUIRE((results.count(name) + failures.count(name)) == 1);
    PerftestOutput output = parse_perftest_output(read_sample(name));
    if (results.count(name)) {
      CHECK(output.error.empty());
      REQUIRE(!output.tables.empty());
      for (const auto& table : output.tables) {
        CHECK(!table.rows.empty());
        CHECK(!table.verb.empty());
        for (const auto& row : table.rows) {
          CHECK(row.bytes > 0);
          CHECK(row.iterations > 0);
          auto metrics = perftest_row_metrics(table, row);
          if (table.mode == PerftestMode::kBandwidth) {
            CHECK(metrics.count("bw_avg_GBs") == 1);
          } else {
            CHECK(metrics.at("lat_min_us") <= metrics.at("lat_max_us"));
          }
        }
      }
    } else {
      CHECK_FALSE(output.ok());
      CHECK(!output.error.empty());
    }
  }
  CHECK(seen == static_cast<int>(results.size() + failures.size()));
}

TEST_CASE("perftest rdma_cm server and captured pipeline outputs", "[perftest]") {
  PerftestOutput rdmacm =
      parse_perftest_output(read_sample("ib_write_bw_rdmacm_s65536.server.txt"));
  REQUIRE(rdmacm.ok());
  CHECK(rdmacm.tables[0].side == PerftestSide::kServer);
  CHECK(rdmacm.tables[0].value(rdmacm.tables[0].rows.at(0), "BW average") == Approx(13.92));
  CHECK(rdmacm.warnings.empty());

  PerftestOutput libvirt =
      parse_perftest_output(read_sample("libvirt_ib_write_bw_s65536.client.txt"));
  REQUIRE(libvirt.ok());
  auto metrics = perftest_row_metrics(libvirt.tables[0], libvirt.tables[0].rows.at(0));
  CHECK(metrics.at("bw_peak_GBs") == Approx(bw_gbs_from_mib(24.22)));
  CHECK(metrics.at("bw_avg_GBs") == Approx(bw_gbs_from_mib(20.77)));
}

}  // namespace
}  // namespace ernic
