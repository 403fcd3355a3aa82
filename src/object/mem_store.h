// mem://: an in-memory ObjectStore with full S3 semantics (MD5 ETags,
// multipart `md5-N` ETags, ListObjectsV2 paging, conditions, ranges). For
// tests and the demo. Thread-safe. Objects are shared Buffers: a Get hands
// out the stored bytes without copying.
#pragma once

#include <string>

#include "base/clock.h"
#include "object/object_store.h"

namespace strata::object {

struct MemStoreOptions {
  uint64_t min_part_size = 5ull << 20;  // S3's; lower it to test multipart cheaply
  Clock* clock = nullptr;               // for mtimes; nullptr means RealClock()
};

// A store named `name` is process-global: every call with the same non-empty
// name shares the same objects and uploads (they live until DropMemStore).
// An empty name gives a private store freed with its last reference.
// Options apply to the returned handle only.
std::shared_ptr<ObjectStore> MakeMemStore(std::string name = "");
std::shared_ptr<ObjectStore> MakeMemStore(std::string name, MemStoreOptions options);

// Forgets the named store's contents (handles still open keep working on the
// old data). Returns false if no such store existed.
bool DropMemStore(const std::string& name);

}  // namespace strata::object
