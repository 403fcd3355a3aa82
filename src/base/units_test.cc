#include "base/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace strata {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

uint64_t Size(std::string_view text) {
  auto r = ParseSize(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() ? *r : ~uint64_t{0};
}

Duration Time(std::string_view text, DurationRules rules = {}) {
  auto r = ParseDuration(text, rules);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() ? *r : Duration(-1);
}

double Rate(std::string_view text, RateRules rules = {}) {
  auto r = ParseRate(text, rules);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() ? *r : -1;
}

TEST(UnitsSize, PrefixesAloneAndIecArePowersOf1024SiArePowersOf1000) {
  EXPECT_EQ(Size("0"), 0u);
  EXPECT_EQ(Size("1048576"), 1048576u);
  EXPECT_EQ(Size("512B"), 512u);
  EXPECT_EQ(Size("512k"), 512u << 10);
  EXPECT_EQ(Size("512K"), 512u << 10);
  EXPECT_EQ(Size("512KiB"), 512u << 10);
  EXPECT_EQ(Size("512kB"), 512000u);
  EXPECT_EQ(Size("512KB"), 512000u);
  EXPECT_EQ(Size("4M"), 4u << 20);
  EXPECT_EQ(Size("4MiB"), 4u << 20);
  EXPECT_EQ(Size("4MB"), 4000000u);
  EXPECT_EQ(Size("2G"), 2ull << 30);
  EXPECT_EQ(Size("2GiB"), 2ull << 30);
  EXPECT_EQ(Size("2GB"), 2000000000u);
  EXPECT_EQ(Size("1T"), 1ull << 40);
  EXPECT_EQ(Size("1TiB"), 1ull << 40);
  EXPECT_EQ(Size("1TB"), 1000000000000u);
  EXPECT_EQ(Size("3P"), 3ull << 50);
  EXPECT_EQ(Size("3PiB"), 3ull << 50);
  EXPECT_EQ(Size("3PB"), 3000000000000000u);
}

TEST(UnitsSize, CaseSpacesAndDecimals) {
  EXPECT_EQ(Size("8mib"), 8u << 20);
  EXPECT_EQ(Size("8MIB"), 8u << 20);
  EXPECT_EQ(Size("8mb"), 8000000u);
  EXPECT_EQ(Size("1.5 TB"), 1500000000000u);
  EXPECT_EQ(Size("1.5KiB"), 1536u);
  EXPECT_EQ(Size("0.5k"), 512u);
  EXPECT_EQ(Size(".5KiB"), 512u);
  EXPECT_EQ(Size("2.5B"), 3u);  // fractions of a byte round to the nearest
  EXPECT_EQ(Size("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(Size("16383PiB"), 16383ull << 50);
}

TEST(UnitsSize, RefusesNamingTheTextAndTheForms) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no number first"},
      {"lots", "no number first"},
      {"-1", "no number first"},
      {"MiB", "no number first"},
      {"1..2M", "more than one '.'"},
      {"1e6", "unknown unit \"e6\""},
      {"12 parsecs", "unknown unit \"parsecs\""},
      {"4Mb", "reads as bits"},
      {"4Gb", "reads as bits"},
      {"100Mbit", "a rate or bits"},
      {"25MB/s", "a rate or bits"},
      {"18446744073709551616", "too large"},
      {"16384PiB", "too large"},
      {"99999999999.5TB", "too large"},
      {std::string(40, '1'), "digits"},
  };
  for (const auto& [text, why] : cases) {
    auto r = ParseSize(text);
    ASSERT_FALSE(r.ok()) << text << " -> " << *r;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind("expected a size such as", 0), 0u) << m;
    EXPECT_NE(m.find("K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024"), std::string::npos) << m;
    EXPECT_NE(m.find("got \"" + text.substr(0, 48)), std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << text << ": " << m;
  }
}

TEST(UnitsDuration, EveryUnitFromNanosecondsToDays) {
  EXPECT_EQ(Time("7ns"), nanoseconds(7));
  EXPECT_EQ(Time("250us"), microseconds(250));
  EXPECT_EQ(Time("250\xC2\xB5s"), microseconds(250));  // µs, the micro sign
  EXPECT_EQ(Time("250\xCE\xBCs"), microseconds(250));  // μs, the Greek letter
  EXPECT_EQ(Time("30ms"), milliseconds(30));
  EXPECT_EQ(Time("10s"), seconds(10));
  EXPECT_EQ(Time("2m"), minutes(2));
  EXPECT_EQ(Time("5min"), minutes(5));
  EXPECT_EQ(Time("1h"), hours(1));
  EXPECT_EQ(Time("3d"), hours(72));
  EXPECT_EQ(Time("1.5s"), milliseconds(1500));
  EXPECT_EQ(Time("0.25h"), minutes(15));
  EXPECT_EQ(Time("1500US"), microseconds(1500));
  EXPECT_EQ(Time("10 s"), seconds(10));
  EXPECT_EQ(Time("0"), Duration(0));
  EXPECT_EQ(Time("10"), seconds(10));  // a bare number is seconds
  EXPECT_EQ(Time("365d"), hours(24 * 365));
}

TEST(UnitsDuration, RulesOfTheContext) {
  EXPECT_FALSE(ParseDuration("forever").ok());
  EXPECT_EQ(Time("forever", {.allow_forever = true}), kForever);
  EXPECT_EQ(Time("Forever", {.allow_forever = true}), kForever);
  EXPECT_EQ(Time("0", {.unit_required = true}), Duration(0));
  auto bare = ParseDuration("30", {.unit_required = true});
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("a unit is needed here"), std::string::npos) << bare.status();
  EXPECT_EQ(bare.status().message().find("a bare number is seconds"), std::string::npos) << bare.status();
  EXPECT_EQ(Time("1m", {.max = minutes(1)}), minutes(1));
  auto over = ParseDuration("30min", {.max = minutes(1)});
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("longer than 1m"), std::string::npos) << over.status();
  EXPECT_FALSE(ParseDuration("60.001s", {.max = minutes(1)}).ok());
  EXPECT_FALSE(ParseDuration("366d").ok());
  EXPECT_EQ(Time("36500d", {.max = kForever}), kForever);
}

TEST(UnitsDuration, RefusesNamingTheTextAndTheForms) {
  for (const char* bad : {"", "ms", "-5ms", "1e3ms", "1..2ms", "10 parsecs", "10sec", "1y", "99999999999h",
                          "999999999999999999999ns", "12345678901234567890123456789012345s", "forever"}) {
    auto r = ParseDuration(bad);
    ASSERT_FALSE(r.ok()) << bad << " -> " << r->count();
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind("expected a duration such as 250ms", 0), 0u) << m;
    EXPECT_NE(m.find(std::string("got \"") + bad), std::string::npos) << m;
  }
}

TEST(UnitsRate, BytesAndBitsPerSecond) {
  EXPECT_EQ(Rate("25MB/s"), 25e6);
  EXPECT_EQ(Rate("1.5MiB/s"), 1.5 * 1048576);
  EXPECT_EQ(Rate("2GiB/s"), 2.0 * (1 << 30));
  EXPECT_EQ(Rate("4096B/s"), 4096);
  EXPECT_EQ(Rate("85 MB/s"), 85e6);
  EXPECT_EQ(Rate("100Gbit/s"), 12.5e9);
  EXPECT_EQ(Rate("100Gbps"), 12.5e9);
  EXPECT_EQ(Rate("100gbps"), 12.5e9);
  EXPECT_EQ(Rate("800kbit/s"), 1e5);
  EXPECT_EQ(Rate("8bps"), 1);
  EXPECT_EQ(Rate("0"), 0);
  EXPECT_EQ(Rate("2GB", {.per_second_implied = true}), 2e9);
  EXPECT_EQ(Rate("unlimited", {.allow_unlimited = true}), std::numeric_limits<double>::infinity());
  EXPECT_EQ(Rate("inf", {.allow_unlimited = true}), std::numeric_limits<double>::infinity());
}

TEST(UnitsRate, RefusesNamingTheTextAndTheForms) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"85MB", "a rate needs /s"},
      {"25", "a unit is needed"},
      {"25/s", "a unit is needed before /s"},
      {"25Mb/s", "reads as bits"},
      {"25MBps", "write MB/s for bytes or Mbps for bits"},
      {"fast", "no number first"},
      {"unlimited", "no unlimited rate here"},
      {"25parsecs/s", "unknown unit"},
      {"99999999999999999999GB/s", "above 1PB/s"},
  };
  for (const auto& [text, why] : cases) {
    auto r = ParseRate(text);
    ASSERT_FALSE(r.ok()) << text << " -> " << *r;
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind("expected a rate such as 25MB/s", 0), 0u) << m;
    EXPECT_NE(m.find("got \"" + text), std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << text << ": " << m;
  }
  EXPECT_FALSE(ParseRate("25", {.per_second_implied = true}).ok());
  EXPECT_FALSE(ParseRate("2TB/s", {.max = 1e12}).ok());
}

TEST(UnitsSpaceFloor, PercentOfTheFileSystemOrASize) {
  auto floor = [](std::string_view text) {
    auto r = ParseSpaceFloor(text);
    EXPECT_TRUE(r.ok()) << text << ": " << r.status();
    return r.ok() ? *r : SpaceFloor{.bytes = 12345};
  };
  EXPECT_EQ(floor("2%"), (SpaceFloor{.percent = 2}));
  EXPECT_EQ(floor("0.5 %"), (SpaceFloor{.percent = 0.5}));
  EXPECT_EQ(floor("100%"), (SpaceFloor{.percent = 100}));
  EXPECT_EQ(floor("0%"), SpaceFloor{});
  EXPECT_EQ(floor("0"), SpaceFloor{});
  EXPECT_EQ(floor("20GiB"), (SpaceFloor{.bytes = 20ull << 30}));
  EXPECT_EQ(floor("1.5GB"), (SpaceFloor{.bytes = 1500000000}));
  EXPECT_EQ(floor("2%").Of(1000000), 20000u);
  EXPECT_EQ(floor("0.5%").Of(1ull << 40), (1ull << 40) / 200);
  EXPECT_EQ(floor("64MiB").Of(1ull << 40), 64ull << 20);
  EXPECT_EQ(floor("0").Of(1ull << 40), 0u);
  for (const char* text : {"2%", "0.5%", "12.25%", "100%", "0", "20GiB", "1500MB", "0.001%"}) {
    EXPECT_EQ(FormatSpaceFloor(floor(text)), text);
  }
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"", "no number first"},    {"%", "no number first"},      {"-1%", "no number first"},
      {"101%", "more than 100%"}, {"2 percent", "unknown unit"}, {"2%%", "unknown unit"},
      {"4Mb", "reads as bits"},   {"25MB/s", "a rate or bits"},  {"1..2%", "more than one '.'"},
  };
  for (const auto& [text, why] : refused) {
    auto r = ParseSpaceFloor(text);
    ASSERT_FALSE(r.ok()) << text;
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind("expected a share of the file system such as 2% or 0.5%, or a size such as 20GiB", 0), 0u) << m;
    EXPECT_NE(m.find(why), std::string::npos) << text << ": " << m;
  }
}

TEST(UnitsFormat, RoundTripsExactly) {
  for (uint64_t b :
       {uint64_t{0}, uint64_t{1}, uint64_t{4097}, uint64_t{1} << 10, uint64_t{4} << 20, uint64_t{4000000},
        uint64_t{1536}, uint64_t{1000000000000}, uint64_t{3} << 50, std::numeric_limits<uint64_t>::max()}) {
    EXPECT_EQ(Size(FormatSizeExact(b)), b) << FormatSizeExact(b);
  }
  EXPECT_EQ(FormatSizeExact(4u << 20), "4MiB");
  EXPECT_EQ(FormatSizeExact(4000000), "4MB");
  EXPECT_EQ(FormatSizeExact(4097), "4097B");
  EXPECT_EQ(FormatSizeExact(1000000000000000), "1PB");
  EXPECT_EQ(FormatSizeExact(1024000), "1024kB");
  for (Duration d : {Duration(0), Duration(7), Duration(1500000), Duration(seconds(90)), Duration(hours(2)),
                     Duration(hours(24 * 365))}) {
    EXPECT_EQ(Time(FormatDurationExact(d)), d) << FormatDurationExact(d);
  }
  EXPECT_EQ(FormatDurationExact(milliseconds(30)), "30ms");
  EXPECT_EQ(FormatDurationExact(seconds(90)), "90s");
  EXPECT_EQ(FormatDurationExact(minutes(120)), "2h");
  EXPECT_EQ(FormatDurationExact(kForever), "forever");
  EXPECT_EQ(Time(FormatDurationExact(kForever), {.allow_forever = true}), kForever);
}

TEST(UnitsFormat, FiguresForPeopleAreRounded) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(112.0 * (1 << 20)), "112.0 MiB");
  EXPECT_EQ(FormatBytes(2048.0 * (1ull << 40)), "2048.0 TiB");  // TiB is the largest
  EXPECT_EQ(FormatRate(50e6, 2), "25.0 MB/s");
  EXPECT_EQ(FormatRate(1e6, 0), "0.0 MB/s");
  EXPECT_EQ(FormatDuration(0.045), "45 ms");
  EXPECT_EQ(FormatDuration(1.234), "1.23 s");
}

// Every spelling the four parsers this grammar replaced accepted (the CLI's,
// the gateway config's, the emulation spec's and the planner's) still
// parses, to the value it had, except that kB/MB/GB/TB in a flag or the
// gateway config were powers of 1024 there and are SI here (as they were in
// the planner and the emulation spec).
TEST(UnitsCompat, OldSpellingsKeepTheirValues) {
  EXPECT_EQ(Size("8MiB"), 8u << 20);  // cli
  EXPECT_EQ(Size("8M"), 8u << 20);
  EXPECT_EQ(Size("512k"), 512u << 10);
  EXPECT_EQ(Size("1048576"), 1048576u);
  EXPECT_EQ(Size("64KiB"), 64u << 10);  // gateway
  EXPECT_EQ(Size("5GiB"), 5ull << 30);
  EXPECT_EQ(Size("2t"), 2ull << 40);
  EXPECT_EQ(Size("2tib"), 2ull << 40);
  EXPECT_EQ(Size("100b"), 100u);
  EXPECT_EQ(Size("800GiB"), 800ull << 30);  // planner
  EXPECT_EQ(Size("1.2TB"), 1200000000000u);
  EXPECT_EQ(Size("3 pib"), 3ull << 50);
  EXPECT_EQ(Time("250ms"), milliseconds(250));  // cli and gateway
  EXPECT_EQ(Time("1.5s"), milliseconds(1500));
  EXPECT_EQ(Time("2m"), minutes(2));
  EXPECT_EQ(Time("1h"), hours(1));
  EXPECT_EQ(Time("0"), Duration(0));
  EXPECT_EQ(Time("10"), seconds(10));  // the gateway's bare seconds
  EXPECT_EQ(Time("100us"), microseconds(100));
  EXPECT_EQ(Time("5min"), minutes(5));  // planner
  EXPECT_EQ(Time("3d"), hours(72));
  EXPECT_EQ(Time("1500us", {.unit_required = true}), microseconds(1500));  // emulation spec
  EXPECT_EQ(Time("7ns", {.unit_required = true}), nanoseconds(7));
  EXPECT_EQ(Time("0.5s", {.unit_required = true}), milliseconds(500));
  EXPECT_EQ(Rate("25MB/s"), 25e6);
  EXPECT_EQ(Rate("2GB", {.per_second_implied = true}), 2e9);
  EXPECT_EQ(Rate("1KB/s"), 1e3);
  EXPECT_EQ(Rate("100KiB/s"), 102400);
  EXPECT_EQ(Rate("2GiB/s"), 2.0 * (1 << 30));  // planner
  EXPECT_EQ(Rate("100Gbps"), 12.5e9);
  EXPECT_EQ(Rate("10 mbit/s"), 1.25e6);
}

}  // namespace
}  // namespace strata
