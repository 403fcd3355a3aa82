// libFuzzer target: Range / Content-Range / date / URL / query parsing, with
// format-parse round trips that must hold.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/http.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  using namespace strata::net;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto range = ParseRangeHeader(in);
  if (range.ok()) {
    auto again = ParseRangeHeader(FormatRangeHeader(*range));
    if (!again.ok() || again->offset != range->offset || again->length != range->length ||
        again->suffix != range->suffix) {
      std::abort();
    }
  }
  auto cr = ParseContentRange(in);
  if (cr.ok() && !cr->unsatisfied && cr->total) {
    auto again = ParseContentRange(FormatContentRange(cr->first, cr->last, *cr->total));
    if (!again.ok() || again->first != cr->first || again->last != cr->last) std::abort();
  }
  auto amz = ParseAmzDate(in);
  if (amz.ok() && *ParseAmzDate(FormatAmzDate(*amz)) != *amz) std::abort();
  auto http = ParseHttpDate(in);
  if (http.ok() && *ParseHttpDate(FormatHttpDate(*http)) != *http) std::abort();
  auto iso = ParseIso8601(in);
  if (iso.ok()) {
    auto again = ParseIso8601(FormatIso8601(*iso));
    if (!again.ok()) std::abort();
  }
  auto url = ParseUrl(in);
  if (url.ok() && (url->host.empty() || url->path.empty())) std::abort();
  (void)ParseQueryString(in, true);
  (void)ParseQueryString(in, false);
  return 0;
}
