// libFuzzer target: a metadata journal's bytes (as Open reads them) must
// never crash or read out of bounds; every record it accepts re-encodes to
// one that decodes to the same entry.
#include <cstdlib>
#include <string>

#include "cache/meta_journal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file(reinterpret_cast<const char*>(data), size);  // exact-size copy so ASan sees overreads
  uint64_t valid = 0;
  auto payloads = strata::cache::SplitJournal(file, &valid);
  if (!payloads.ok()) return 0;
  if (valid > file.size()) abort();
  for (std::string_view p : *payloads) {
    const std::string copy(p);
    auto r = strata::cache::DecodeJournalRecord(copy);
    if (!r.ok()) continue;
    auto again = strata::cache::DecodeJournalRecord(strata::cache::EncodeJournalRecord(*r));
    if (!again.ok() || again->kind != r->kind || again->store != r->store ||
        again->entry.info.key != r->entry.info.key || again->entry.info.etag != r->entry.info.etag ||
        again->entry.info.size != r->entry.info.size || again->entry.info.metadata != r->entry.info.metadata ||
        again->entry.listed != r->entry.listed || again->entry.validated_ms != r->entry.validated_ms) {
      abort();
    }
  }
  return 0;
}
