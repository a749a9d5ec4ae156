#include "benchmarks/iperf3_parser.h"

#include <catch2/catch.hpp>

#include "samples.h"

using Catch::Matchers::Contains;
using ernic::testing::read_sample;

TEST_CASE("iperf3 TCP client output between namespaces") {
  auto result = ernic::parse_iperf3(read_sample("iperf3_netns.client.json"));
  CHECK(result.version == "3.12");
  CHECK(result.protocol == "TCP");
  CHECK(result.streams == 1);
  CHECK(*result.receiver_bits_per_second == Approx(18220499782.902214));
  CHECK(*result.sender_bits_per_second == Approx(18220598262.72834));
  // Not rounded to a 0.001 GB/s floor as the old harness did.
  CHECK(result.bandwidth_bits_per_second() / 8e9 == Approx(2.2775624728627768));
}

TEST_CASE("iperf3 UDP output with and without sum_sent/sum_received") {
  auto modern = ernic::parse_iperf3(read_sample("iperf3_netns_udp.client.json"));
  CHECK(modern.protocol == "UDP");
  CHECK(*modern.receiver_bits_per_second == Approx(99955922.5418392));
  CHECK(*modern.jitter_ms == Approx(0.003731380261473445));

  auto old = ernic::parse_iperf3(read_sample("iperf3-3.9-client-udp-openwisp.json"));
  CHECK(old.version == "3.9");
  CHECK_FALSE(old.sender_bits_per_second.has_value());
  CHECK(*old.receiver_bits_per_second == Approx(1048569.7085817485));
  CHECK(*old.jitter_ms == Approx(0.011259258240784126));
}

TEST_CASE("iperf3 omitted warm-up intervals are counted apart") {
  auto result = ernic::parse_iperf3(read_sample("iperf3-3.9-client-tcp.json"));
  CHECK(result.omitted_intervals == 3);
  CHECK(result.intervals == 10);
  CHECK(*result.receiver_bits_per_second == Approx(464786288.6001836));
}

TEST_CASE("every recorded iperf3 result sample parses") {
  for (const char* name :
       {"iperf3_netns.server.json", "iperf3_guest2guest_t10.client.json",
        "iperf3_guest2guest_t10.server.json", "iperf3_netns_udp.server.json",
        "iperf3_netns_via_ssh.client.json", "iperf3_netns_via_ssh.server.json",
        "libvirt_iperf3_t5.client.json", "libvirt_iperf3_host_to_guest_t5.client.json",
        "pipeline_iperf3_t5.client.json", "iperf3-3.9-client-tcp-loopback-openwisp.json"}) {
    INFO(name);
    auto result = ernic::parse_iperf3(read_sample(name));
    CHECK(result.bandwidth_bits_per_second() > 0);
  }
}

TEST_CASE("iperf3 failures are errors, not results, even when iperf3 exited 0") {
  CHECK_THROWS_WITH(ernic::parse_iperf3(read_sample("iperf3_error_no_server.client.json")),
                    Contains("unable to connect to server: Connection refused"));
  CHECK_THROWS_WITH(ernic::parse_iperf3(read_sample("iperf3-3.7-error-connection-refused.json")),
                    Contains("iperf3 reported an error"));
  CHECK_THROWS_WITH(ernic::parse_iperf3(read_sample("iperf3-3.7-error-auth.json")),
                    Contains("iperf3 reported an error"));
  CHECK_THROWS_WITH(
      ernic::parse_iperf3(read_sample("iperf3-json-stream-error-server-busy-issue.txt")),
      Contains("the server is busy"));
  CHECK_THROWS_WITH(ernic::parse_iperf3(""), Contains("no JSON result"));
  CHECK_THROWS_WITH(ernic::parse_iperf3("iperf3: error - unable to connect to server\n"),
                    Contains("unable to connect to server"));
  CHECK_THROWS_WITH(ernic::parse_iperf3("{\"start\": {\"version\": \"iperf 3.12\"}"),
                    Contains("cut short"));
}

TEST_CASE("iperf3 warning lines before, error lines after, and -nan values") {
  std::string json = read_sample("iperf3_netns.client.json");
  auto cpu = json.find("\"host_total\":");
  REQUIRE(cpu != std::string::npos);
  auto value_begin = json.find_first_of("0123456789", cpu);
  auto value_end = json.find_first_of(",\n}", value_begin);
  json.replace(value_begin, value_end - value_begin, "-nan");
  std::string text = "warning: report interval too small\n" + json +
                     "iperf3: error - control socket has closed unexpectedly\n";
  auto result = ernic::parse_iperf3(text);
  CHECK_FALSE(result.cpu_host_percent.has_value());
  CHECK(*result.receiver_bits_per_second == Approx(18220499782.902214));
  REQUIRE(result.notes.size() == 2);
  CHECK(result.notes[0] == "warning: report interval too small");
  CHECK_THAT(result.notes[1], Contains("control socket"));
}

TEST_CASE("JSON without results names the missing part and the trailing error") {
  std::string text =
      "{\"start\": {\"version\": \"iperf 3.12\"}, \"intervals\": [], \"end\": {}}\n"
      "iperf3: error - the server has terminated\n";
  CHECK_THROWS_WITH(ernic::parse_iperf3(text), Contains("the server has terminated"));
}

TEST_CASE("JSON of the wrong shape is a parse error, not a crash") {
  // Found by the fuzzer: a number where iperf3 writes an object.
  CHECK_THROWS_WITH(
      ernic::parse_iperf3("{\"start\": 5, \"end\": {\"sum\": {\"bits_per_second\": 1}}}"),
      Contains("does not have iperf3's structure"));
  CHECK_THROWS_AS(ernic::parse_iperf3("{\"start\": {}, \"intervals\": [7], \"end\": {}}"),
                  ernic::ParseError);
  CHECK_THROWS_AS(
      ernic::parse_iperf3("{\"start\": {\"test_start\": []}, \"end\": {\"sum_sent\": 3}}"),
      ernic::ParseError);
}

TEST_CASE("iperf3 measured intervals are kept in time order, warm-up intervals left out") {
  auto result = ernic::parse_iperf3(read_sample("iperf3-3.9-client-tcp.json"));
  REQUIRE(result.interval_bits_per_second.size() == 10);
  CHECK(result.interval_bits_per_second.front() == Approx(461304260.37454236));
  CHECK(result.interval_bits_per_second.back() == Approx(471885160.8032358));
  CHECK(*result.interval_s == Approx(1.00015));
}
