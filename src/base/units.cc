#include "base/units.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace strata {
namespace {

constexpr size_t kMaxNumberChars = 32;
constexpr size_t kMaxShownChars = 48;
constexpr const char* kPrefixes = "kmgtp";  // powers 1..5 of 1024 or 1000

// A leading number and the unit after it.
struct Number {
  double value = 0;
  uint64_t whole = 0;     // exact, when `integral`
  bool integral = false;  // no '.' and fits in 64 bits
  std::string unit;       // spaces dropped, case kept
};

// `text` as an error may show it: bounded, control bytes replaced.
std::string Shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, kMaxShownChars)) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? '?' : c;
  }
  if (text.size() > kMaxShownChars) out += "...";
  return out;
}

Status Refuse(const std::string& forms, std::string_view text, const std::string& why) {
  return InvalidArgumentError("expected " + forms + ", got \"" + Shown(text) + "\" (" + why + ")");
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Splits "1.5 TB" into 1.5 and "TB". Empty on success, else what is wrong.
std::string SplitNumber(std::string_view text, Number* n) {
  size_t i = 0, digits = 0, dots = 0;
  for (; i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.'); ++i) {
    text[i] == '.' ? ++dots : ++digits;
  }
  if (digits == 0) return "no number first";
  if (dots > 1) return "more than one '.'";
  if (i > kMaxNumberChars) return "more than " + std::to_string(kMaxNumberChars) + " digits";
  const char* end = text.data() + i;
  auto [p, ec] = std::from_chars(text.data(), end, n->value, std::chars_format::fixed);
  if (ec != std::errc() || p != end || !std::isfinite(n->value)) return "not a number";
  if (dots == 0) {
    auto [q, ec2] = std::from_chars(text.data(), end, n->whole);
    n->integral = ec2 == std::errc() && q == end;
  }
  for (char c : text.substr(i)) {
    if (c != ' ' && c != '\t') n->unit += c;
  }
  return {};
}

// "Mb", "Gb": bits to some, bytes to others.
bool AmbiguousBits(std::string_view unit) {
  return unit.size() == 2 && std::string_view("KMGTP").find(unit[0]) != std::string_view::npos && unit[1] == 'b';
}

// Bytes per unit of a lower-case size unit; 0 if it is not one.
uint64_t SizeMultiplier(std::string_view unit) {
  if (unit.empty() || unit == "b") return 1;
  const size_t power = std::string_view(kPrefixes).find(unit[0]);
  if (power == std::string_view::npos) return 0;
  const std::string_view rest = unit.substr(1);
  if (rest.empty() || rest == "ib") return uint64_t{1} << (10 * (power + 1));
  if (rest != "b") return 0;
  uint64_t m = 1;
  for (size_t k = 0; k <= power; ++k) m *= 1000;
  return m;
}

// Bits per unit of a lower-case bit prefix ("", k, m, g, t, p); 0 if unknown.
double BitMultiplier(std::string_view prefix) {
  if (prefix.empty()) return 1;
  if (prefix.size() != 1) return 0;
  const size_t power = std::string_view(kPrefixes).find(prefix[0]);
  return power == std::string_view::npos ? 0 : std::pow(1000.0, double(power + 1));
}

// Nanoseconds per lower-case duration unit; 0 if unknown. (µ and μ are UTF-8.)
int64_t NanosPer(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1000;
  if (unit == "ms") return 1000000;
  if (unit == "s") return 1000000000;
  if (unit == "m" || unit == "min") return 60'000'000'000;
  if (unit == "h") return 3'600'000'000'000;
  if (unit == "d") return 86'400'000'000'000;
  return 0;
}

// Reads a size into *bytes. Empty on success, else what is wrong.
std::string SizeOf(std::string_view text, uint64_t* bytes) {
  Number n;
  if (std::string why = SplitNumber(text, &n); !why.empty()) return why;
  if (AmbiguousBits(n.unit)) return n.unit + " reads as bits; write " + n.unit[0] + "B or " + n.unit[0] + "iB";
  const std::string unit = Lower(n.unit);
  const uint64_t mult = SizeMultiplier(unit);
  if (mult == 0) {
    if (EndsWith(unit, "/s") || EndsWith(unit, "bps") || EndsWith(unit, "bit"))
      return "a rate or bits, not a size in bytes";
    return "unknown unit \"" + Shown(n.unit) + "\"";
  }
  if (n.integral) {
    if (n.whole > std::numeric_limits<uint64_t>::max() / mult) return "too large";
    *bytes = n.whole * mult;
    return {};
  }
  const double value = n.value * double(mult);
  if (!(value <= 9e18)) return "too large";
  *bytes = static_cast<uint64_t>(std::llround(value));
  return {};
}

std::string FormatRateExact(double bytes_per_second) {
  if (!(bytes_per_second >= 0 && bytes_per_second < 1.8e19)) return std::to_string(bytes_per_second) + "B/s";
  const uint64_t whole = static_cast<uint64_t>(bytes_per_second);
  return double(whole) == bytes_per_second ? FormatSizeExact(whole) + "/s" : std::to_string(bytes_per_second) + "B/s";
}

}  // namespace

std::string SizeForms() {
  return "a size such as 4096, 64KiB, 4MiB or 1.5GB (K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024; "
         "kB, MB, GB, TB powers of 1000)";
}

std::string SpaceFloorForms() { return "a share of the file system such as 2% or 0.5%, or a size such as 20GiB"; }

std::string DurationForms(const DurationRules& rules) {
  return std::string("a duration such as 250ms, 1.5s, 5m or 2h (units ns, us, ms, s, m or min, h, d") +
         (rules.unit_required ? "" : "; a bare number is seconds") + (rules.allow_forever ? "; or forever" : "") + ")";
}

std::string RateForms(const RateRules& rules) {
  return std::string(
             "a rate such as 25MB/s, 2GiB/s or 100Gbit/s (a size per second, or bits per second: "
             "kbit/s, Mbit/s, Gbit/s, also written Mbps") +
         (rules.per_second_implied ? "; the /s may be left out" : "") +
         (rules.allow_unlimited ? "; or unlimited" : "") + ")";
}

Result<uint64_t> ParseSize(std::string_view text) {
  uint64_t bytes = 0;
  if (std::string why = SizeOf(text, &bytes); !why.empty()) return Refuse(SizeForms(), text, why);
  return bytes;
}

Result<SpaceFloor> ParseSpaceFloor(std::string_view text) {
  if (!EndsWith(text, "%")) {
    SpaceFloor floor;
    if (std::string why = SizeOf(text, &floor.bytes); !why.empty()) return Refuse(SpaceFloorForms(), text, why);
    return floor;
  }
  Number n;
  if (std::string why = SplitNumber(text, &n); !why.empty()) return Refuse(SpaceFloorForms(), text, why);
  if (n.unit != "%") return Refuse(SpaceFloorForms(), text, "unknown unit \"" + Shown(n.unit) + "\"");
  if (!(n.value <= 100)) return Refuse(SpaceFloorForms(), text, "more than 100%");
  if (n.value == 0) return SpaceFloor{};
  return SpaceFloor{.percent = n.value};
}

std::string FormatSpaceFloor(const SpaceFloor& floor) {
  if (floor.percent <= 0) return FormatSizeExact(floor.bytes);
  std::string shown;
  for (size_t decimals = 0; decimals <= kMaxNumberChars; ++decimals) {  // the shortest that reads back the same
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", static_cast<int>(decimals), floor.percent);
    shown = text;
    if (decimals > 0) {
      while (shown.back() == '0') shown.pop_back();
      if (shown.back() == '.') shown.pop_back();
    }
    shown += '%';
    auto again = ParseSpaceFloor(shown);
    if (again.ok() && again->percent == floor.percent) break;
  }
  return shown;
}

Result<Duration> ParseDuration(std::string_view text, const DurationRules& rules) {
  const std::string forms = DurationForms(rules);
  if (Lower(text) == "forever") {
    if (rules.allow_forever) return kForever;
    return Refuse(forms, text, "forever is only for a TTL");
  }
  Number n;
  if (std::string why = SplitNumber(text, &n); !why.empty()) return Refuse(forms, text, why);
  const std::string unit = Lower(n.unit);
  int64_t per = NanosPer(unit);
  if (unit.empty()) {
    if (n.value == 0) return Duration(0);
    if (rules.unit_required) return Refuse(forms, text, "a unit is needed here");
    per = NanosPer("s");
  }
  if (per == 0) return Refuse(forms, text, "unknown unit \"" + Shown(n.unit) + "\"");
  const int64_t max = rules.max.count();
  const std::string too_long = "longer than " + FormatDurationExact(rules.max);
  if (n.integral) {
    if (n.whole > uint64_t(max / per)) return Refuse(forms, text, too_long);
    return Duration(static_cast<int64_t>(n.whole) * per);
  }
  const double ns = n.value * double(per);
  if (!(ns <= double(max))) return Refuse(forms, text, too_long);
  return Duration(std::min<int64_t>(std::llround(ns), max));
}

Result<double> ParseRate(std::string_view text, const RateRules& rules) {
  const std::string forms = RateForms(rules);
  const std::string lower = Lower(text);
  if (lower == "unlimited" || lower == "inf") {
    if (rules.allow_unlimited) return std::numeric_limits<double>::infinity();
    return Refuse(forms, text, "no unlimited rate here");
  }
  Number n;
  if (std::string why = SplitNumber(text, &n); !why.empty()) return Refuse(forms, text, why);
  std::string unit = n.unit;
  if (unit.empty()) {
    if (n.value == 0) return 0.0;
    return Refuse(forms, text, "a unit is needed, e.g. B/s or MB/s");
  }
  double per = 0;  // bytes per second per unit
  const std::string l = Lower(unit);
  if (EndsWith(unit, "Bps")) {
    return Refuse(forms, text, "Bps is bits to some, bytes to others; write MB/s for bytes or Mbps for bits");
  } else if (EndsWith(l, "bps")) {
    per = BitMultiplier(l.substr(0, l.size() - 3)) / 8;
  } else {
    if (EndsWith(l, "/s")) {
      unit.resize(unit.size() - 2);
    } else if (!rules.per_second_implied) {
      return Refuse(forms, text, "a rate needs /s: 85MB is a size, 85MB/s a rate");
    }
    const std::string base = Lower(unit);
    if (AmbiguousBits(unit)) {
      return Refuse(forms, text, unit + " reads as bits; write " + unit[0] + "B/s for bytes or " + unit[0] + "bit/s");
    }
    if (base.empty()) return Refuse(forms, text, "a unit is needed before /s, e.g. B/s or MB/s");
    if (EndsWith(base, "bit")) {
      per = BitMultiplier(base.substr(0, base.size() - 3)) / 8;
    } else if (!base.empty()) {
      per = double(SizeMultiplier(base));
    }
  }
  if (per == 0) return Refuse(forms, text, "unknown unit \"" + Shown(n.unit) + "\"");
  const double rate = n.value * per;
  if (!(rate <= rules.max)) return Refuse(forms, text, "above " + FormatRateExact(rules.max));
  return rate;
}

std::string FormatSizeExact(uint64_t bytes) {
  if (bytes == 0) return "0";
  static const char* kBinary[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  static const char* kDecimal[] = {"kB", "MB", "GB", "TB", "PB"};
  std::string binary = std::to_string(bytes) + "B", decimal = binary;
  for (int p = 5; p >= 1; --p) {
    const uint64_t unit = uint64_t{1} << (10 * p);
    if (bytes % unit == 0) {
      binary = std::to_string(bytes / unit) + kBinary[p - 1];
      break;
    }
  }
  uint64_t unit = 1000000000000000;
  for (int p = 5; p >= 1; --p, unit /= 1000) {
    if (bytes % unit == 0) {
      decimal = std::to_string(bytes / unit) + kDecimal[p - 1];
      break;
    }
  }
  return decimal.size() < binary.size() ? decimal : binary;  // the shorter: 1PB, not 976562500000KiB
}

std::string FormatDurationExact(Duration d) {
  if (d == kForever) return "forever";
  const int64_t ns = d.count();
  if (ns == 0) return "0s";
  static const std::pair<const char*, int64_t> kUnits[] = {{"d", NanosPer("d")},
                                                           {"h", NanosPer("h")},
                                                           {"m", NanosPer("m")},
                                                           {"s", NanosPer("s")},
                                                           {"ms", 1000000},
                                                           {"us", 1000},
                                                           {"ns", 1}};
  for (const auto& [name, per] : kUnits) {
    if (ns % per == 0) return std::to_string(ns / per) + name;
  }
  return std::to_string(ns) + "ns";
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char out[32];
  std::snprintf(out, sizeof(out), unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return out;
}

std::string FormatRate(double bytes, double seconds) {
  char out[32];
  std::snprintf(out, sizeof(out), "%.1f MB/s", seconds > 0 ? bytes / seconds / 1e6 : 0.0);
  return out;
}

std::string FormatDuration(double seconds) {
  char out[32];
  if (seconds < 1) {
    std::snprintf(out, sizeof(out), "%.0f ms", seconds * 1e3);
  } else {
    std::snprintf(out, sizeof(out), "%.2f s", seconds);
  }
  return out;
}

}  // namespace strata
