// One grammar for the sizes, durations and rates strata reads: every flag, the
// gateway's JSON config, the planner's JSON/YAML and the cloud emulation spec
// parse their values here, so a spelling means the same thing everywhere.
//
// Numbers: decimal digits with at most one '.', no sign and no exponent
// ("4096", "1.5", "0.25"). Spaces between a number and its unit are ignored
// ("1.5 TB"). Unit letters are case-insensitive (4mib = 4MiB, 10S = 10s),
// except that an upper-case prefix with a lower-case b (Kb, Mb, Gb, Tb, Pb)
// is refused: it is the usual spelling of bits, so it is ambiguous.
//
// Sizes, in bytes:
//   none or B          bytes
//   K, M, G, T, P      powers of 1024 (as strata has always read them:
//   KiB ... PiB          4M = 4MiB = 4194304)
//   kB, MB, GB, TB, PB powers of 1000 (SI: 4MB = 4000000)
// Durations: ns, us (or µs), ms, s, m or min, h, d; decimals (1.5s). A bare
//   number is seconds ("0" always; others unless the context wants a unit);
//   "forever" only where the context allows it (a TTL): kForever.
// Rates, in bytes per second: a size per second (25MB/s, 1.5GiB/s, 4096B/s),
//   or bits per second in powers of 1000 (100Gbit/s, 100Gbps, 800kbit/s);
//   "0"; "unlimited" (or "inf") only where the context allows it.
//
// Space floors (how much of a file system to leave free): a size as above, or
//   a share of the file system in percent ("2%", "0.5%", at most 100%).
//
// Errors are InvalidArgument: "expected <the accepted forms>, got "<text>"
// (<what is wrong>)"; the caller prefixes the flag or config key. Pure
// functions, thread-safe; any input is bounds-checked (fuzz_units).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

namespace strata {

// A TTL that never expires: a century, so no deadline arithmetic overflows.
inline constexpr Duration kForever = std::chrono::hours(24 * 365 * 100);

// "4096", "512k", "4MiB", "1.5GB". Fractions of a byte round to the nearest.
Result<uint64_t> ParseSize(std::string_view text);

// A size or a share of a file system: "2%", "0.5%", "20GiB", "0".
struct SpaceFloor {
  uint64_t bytes = 0;  // when percent is 0
  double percent = 0;  // of the file system's size, in (0, 100]
  // The floor in bytes on a file system of `total` bytes.
  uint64_t Of(uint64_t total) const {
    return percent > 0 ? static_cast<uint64_t>(static_cast<double>(total) * percent / 100) : bytes;
  }
  bool operator==(const SpaceFloor&) const = default;
};
Result<SpaceFloor> ParseSpaceFloor(std::string_view text);
// "2%", "20GiB": parses back to the same floor.
std::string FormatSpaceFloor(const SpaceFloor& floor);

struct DurationRules {
  bool allow_forever = false;  // "forever" reads as kForever (a TTL)
  bool unit_required = false;  // a bare number other than 0 is refused
  Duration max = std::chrono::hours(24 * 365);
};
// "250ms", "1.5s", "5m", "2h", "10" (seconds), "forever" (when allowed).
Result<Duration> ParseDuration(std::string_view text, const DurationRules& rules = {});

struct RateRules {
  bool allow_unlimited = false;     // "unlimited" / "inf" read as +infinity
  bool per_second_implied = false;  // "25MB" reads as 25MB/s (the context names a rate)
  double max = 1e15;                // bytes per second (1 PB/s)
};
// "25MB/s", "2GiB/s", "100Gbit/s", "100Gbps", "0". Bytes per second.
Result<double> ParseRate(std::string_view text, const RateRules& rules = {});

// Inverses that round-trip exactly through the parsers above:
// 4194304 -> "4MiB", 4000000 -> "4MB", 4097 -> "4097B"; 30ms -> "30ms",
// 90s -> "90s", 2h -> "2h", kForever -> "forever".
std::string FormatSizeExact(uint64_t bytes);
std::string FormatDurationExact(Duration d);

// Figures for people reading a report, rounded (not meant to be parsed back):
std::string FormatBytes(double bytes);                 // "1.5 MiB"
std::string FormatRate(double bytes, double seconds);  // "25.0 MB/s" (decimal, as bandwidths are quoted)
std::string FormatDuration(double seconds);            // "1.23 s", "45 ms"

// The accepted forms, as the errors above name them (for callers that refuse
// a value of the wrong JSON type, e.g. a list where a size belongs).
std::string SizeForms();
std::string SpaceFloorForms();
std::string DurationForms(const DurationRules& rules = {});
std::string RateForms(const RateRules& rules = {});

}  // namespace strata
