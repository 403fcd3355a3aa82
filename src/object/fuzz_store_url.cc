// libFuzzer target: ParseStoreUrl (pure parsing, no I/O) must never crash and
// must keep its invariants on whatever it accepts.
#include <cstdlib>
#include <string_view>

#include "object/store_url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view url(reinterpret_cast<const char*>(data), size);
  auto parsed = strata::object::ParseStoreUrl(url);
  if (!parsed.ok()) return 0;
  if (parsed->scheme != "file" && parsed->scheme != "mem" && parsed->scheme != "s3") std::abort();
  if (parsed->scheme == "file" && (!parsed->authority.empty() || parsed->path.empty())) std::abort();
  if (parsed->scheme != "file" && parsed->authority.empty()) std::abort();
  for (size_t i = 0; i < parsed->params.size(); ++i) {
    if (parsed->params[i].first.empty()) std::abort();
    for (size_t j = 0; j < i; ++j) {
      if (parsed->params[i].first == parsed->params[j].first) std::abort();
    }
  }
  return 0;
}
