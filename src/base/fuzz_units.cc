// Fuzzes the one grammar for sizes, space floors, durations and rates (base/units.h): any
// input gives a value or an error, never a crash, an overflow or a value out
// of its bounds, and what is accepted formats back to the same value.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base/units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto s = ParseSize(text); s.ok()) {
    auto again = ParseSize(FormatSizeExact(*s));
    if (!again.ok() || *again != *s) std::abort();
  }
  if (auto f = ParseSpaceFloor(text); f.ok()) {
    if (f->percent < 0 || f->percent > 100 || (f->percent > 0 && f->bytes != 0)) std::abort();
    auto again = ParseSpaceFloor(FormatSpaceFloor(*f));
    if (!again.ok() || !(*again == *f)) std::abort();
  }
  for (const DurationRules rules : {DurationRules{}, DurationRules{.allow_forever = true, .max = kForever},
                                    DurationRules{.unit_required = true, .max = std::chrono::minutes(1)}}) {
    auto d = ParseDuration(text, rules);
    if (!d.ok()) continue;
    if (d->count() < 0 || (*d > rules.max && *d != kForever)) std::abort();
    auto again = ParseDuration(FormatDurationExact(*d), rules);
    if (!again.ok() || *again != *d) std::abort();
  }
  for (const RateRules rules : {RateRules{}, RateRules{.allow_unlimited = true, .per_second_implied = true}}) {
    auto r = ParseRate(text, rules);
    if (r.ok() && (!(*r >= 0) || (std::isfinite(*r) && *r > rules.max) || (std::isinf(*r) && !rules.allow_unlimited)))
      std::abort();
  }
  return 0;
}
