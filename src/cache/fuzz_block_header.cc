// libFuzzer target: DecodeBlockHeader must never crash or read out of bounds,
// and anything it accepts must re-encode to an equivalent header.
#include <cstdlib>
#include <vector>

#include "cache/block_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);  // exact-size heap copy so ASan sees overreads
  auto h = strata::cache::DecodeBlockHeader(copy.data(), copy.size());
  if (!h.ok()) return 0;
  std::vector<uint8_t> page(strata::cache::kBlockHeaderSize);
  if (!strata::cache::EncodeBlockHeader(*h, page.data()).ok()) abort();
  auto again = strata::cache::DecodeBlockHeader(page.data(), page.size());
  if (!again.ok() || !(again->id == h->id) || again->length != h->length || again->data_hash != h->data_hash) abort();
  return 0;
}
