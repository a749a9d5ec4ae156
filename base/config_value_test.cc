#include "base/config_value.h"

#include <catch2/catch.hpp>

namespace ernic {
namespace {

std::shared_ptr<const ObjectSchema> object_of(std::vector<FieldSchema> fields) {
  return std::make_shared<const ObjectSchema>(ObjectSchema{.description = "", .fields = fields});
}

// One field of every kind.
const ObjectSchema& every_kind() {
  static const ObjectSchema schema = [] {
    ObjectSchema all;
    all.fields = {
        {.name = "name", .kind = ValueKind::kString},
        {.name = "count", .kind = ValueKind::kInteger, .minimum = -5},
        {.name = "ratio", .kind = ValueKind::kNumber},
        {.name = "enabled", .kind = ValueKind::kBoolean},
        {.name = "memory", .kind = ValueKind::kSize},
        {.name = "timeout", .kind = ValueKind::kDuration},
        {.name = "rate", .kind = ValueKind::kBandwidth},
        {.name = "mode", .kind = ValueKind::kEnum, .enum_values = {"fast", "slow"}},
        {.name = "address", .kind = ValueKind::kIpv4},
        {.name = "subnet", .kind = ValueKind::kCidr},
        {.name = "inner",
         .kind = ValueKind::kObject,
         .object = object_of({{.name = "port", .kind = ValueKind::kInteger, .minimum = 1}})},
        {.name = "names", .kind = ValueKind::kList, .element = ValueKind::kString},
        {.name = "sizes", .kind = ValueKind::kList, .element = ValueKind::kSize},
        {.name = "peers",
         .kind = ValueKind::kList,
         .object = object_of({{.name = "host", .kind = ValueKind::kString}}),
         .element = ValueKind::kObject},
        {.name = "values", .kind = ValueKind::kStringMap},
    };
    return all;
  }();
  return schema;
}

const char* kEveryKind = R"(name: alpha
count: -3
ratio: 0.25
enabled: true
memory: 2GiB
timeout: 1m30s
rate: 10G
mode: slow
address: 10.0.0.5
subnet: 10.77.0.0/24
inner: {port: 2222}
names: [a, b]
sizes: [4KiB, 1MiB]
peers:
  - host: p1
  - host: p2
values: {net.core.rmem_max: 4194304, kernel.x: "a b"}
)";

Config typed(const std::string& yaml, const ObjectSchema& schema = every_kind()) {
  return make_config(YAML::Load(yaml), schema, "s.yaml", "hosts[0]");
}

TEST_CASE("every kind of value arrives typed", "[config]") {
  Config config = typed(kEveryKind);
  CHECK(config.text("name", "") == "alpha");
  CHECK(config.integer("count", 0) == -3);
  CHECK(config.number("ratio", 0) == 0.25);
  CHECK(config.number("count", 0) == -3.0);  // an integer reads as a number too
  CHECK(config.flag("enabled", false));
  CHECK(config.bytes("memory", 0) == (2ULL << 30));
  CHECK(config.duration("timeout", {}) == std::chrono::seconds(90));
  CHECK(config.bits_per_second("rate", 0) == 10'000'000'000ULL);
  CHECK(config.text("mode", "") == "slow");
  CHECK(config.text("address", "") == "10.0.0.5");
  CHECK(config.text("subnet", "") == "10.77.0.0/24");
  CHECK(config.object("inner").integer("port", 22) == 2222);
  CHECK(config.texts("names") == std::vector<std::string>{"a", "b"});
  CHECK(config.texts("sizes") == std::vector<std::string>{"4KiB", "1MiB"});
  auto peers = config.objects("peers");
  REQUIRE(peers.size() == 2);
  CHECK(peers[1].text("host", "") == "p2");
  CHECK(config.string_map("values") == std::vector<std::pair<std::string, std::string>>{
                                           {"net.core.rmem_max", "4194304"}, {"kernel.x", "a b"}});
  // The text of any scalar is what the file says.
  CHECK(config.text("memory", "") == "2GiB");
  CHECK(config.text("count", "") == "-3");
}

TEST_CASE("absent keys give the fallbacks, absent objects their own", "[config]") {
  Config config = typed("{name: beta}");
  CHECK(config.has("name"));
  CHECK_FALSE(config.has("count"));
  CHECK(config.integer("count", 7) == 7);
  CHECK(config.number("ratio", 1.5) == 1.5);
  CHECK(config.flag("enabled", true));
  CHECK(config.bytes("memory", 4096) == 4096);
  CHECK(config.duration("timeout", std::chrono::seconds(5)) == std::chrono::seconds(5));
  CHECK(config.bits_per_second("rate", 3) == 3);
  CHECK(config.text("mode", "fast") == "fast");
  CHECK(config.texts("names").empty());
  CHECK(config.objects("peers").empty());
  CHECK(config.string_map("values").empty());
  // An absent object still knows its keys.
  CHECK_FALSE(config.has("inner"));
  CHECK(config.object("inner").integer("port", 22) == 22);
  // A null value is absent.
  CHECK_FALSE(typed("{name: }").has("name"));
}

TEST_CASE("reading an undeclared key, or a key as another kind, is a programming error",
          "[config]") {
  Config config = typed(kEveryKind);
  CHECK_THROWS_MATCHES(config.text("colour", ""), std::logic_error,
                       Catch::Message("configuration key 'colour' is read but its schema does "
                                      "not declare it (at 'hosts[0]')"));
  CHECK_THROWS_AS(config.has("colour"), std::logic_error);
  CHECK_THROWS_AS(config.object("inner").text("user", ""), std::logic_error);
  CHECK_THROWS_WITH(config.integer("name", 0), Catch::Contains("'name' is declared as a string"));
  CHECK_THROWS_AS(config.duration("memory", {}), std::logic_error);
  CHECK_THROWS_AS(config.text("inner", ""), std::logic_error);
  CHECK_THROWS_AS(config.objects("values"), std::logic_error);
  // A Config of no schema declares nothing.
  CHECK_THROWS_AS(Config().has("name"), std::logic_error);
  // Keys the file has but the schema does not are left to validation, not read.
  CHECK_NOTHROW(typed("{name: a, colour: red}"));
}

TEST_CASE("values keep where they were written", "[config]") {
  Config config = typed(kEveryKind);
  SourceLocation memory = config.location("memory");
  CHECK(memory.file == "s.yaml");
  CHECK(memory.line == 5);
  CHECK(memory.column == 9);
  CHECK(memory.path == "hosts[0].memory");
  CHECK(config.objects("peers")[1].location("host").line == 16);
  CHECK(config.objects("peers")[1].location("host").path == "hosts[0].peers[1].host");
  CHECK(config.object("inner").location("port").path == "hosts[0].inner.port");

  Diagnostic diagnostic = config.diagnostic("subnet", "too small");
  CHECK(diagnostic.format() == "s.yaml:10:9: hosts[0].subnet: too small");
  // An absent key is reported where its object is, under the key's path.
  Diagnostic absent = typed("\n\n{name: a}").diagnostic("count", "missing");
  CHECK(absent.line == 3);
  CHECK(absent.path == "hosts[0].count");
}

TEST_CASE("a value validation would refuse is refused naming where it is", "[config]") {
  CHECK_THROWS_MATCHES(typed("{memory: lots}"), std::invalid_argument,
                       Catch::Message("s.yaml:1:10: hosts[0].memory: expected a size value, "
                                      "found 'lots' (the scenario was not validated)"));
  CHECK_THROWS_AS(typed("{count: 1.5}"), std::invalid_argument);
  CHECK_THROWS_AS(typed("{timeout: soon}"), std::invalid_argument);
  CHECK_THROWS_AS(typed("{enabled: maybe}"), std::invalid_argument);
  CHECK_THROWS_AS(typed("{names: a}"), std::invalid_argument);
  CHECK_THROWS_AS(typed("[1, 2]"), std::invalid_argument);
}

}  // namespace
}  // namespace ernic
