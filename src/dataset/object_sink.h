// A ByteSink that streams into one object: bytes are cut into parts of
// `part_size` and uploaded as a multipart upload while the writer keeps
// producing (up to `max_inflight` parts at once); a shard smaller than one
// part becomes a single Put. Nothing is visible under the key until Close()
// succeeds; on error or destruction without Close() the upload is aborted.
// SHA-256, CRC-32C and size are computed on the way for the manifest. Not
// thread-safe; the store must outlive the sink.
#pragma once

#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "base/hash.h"
#include "dataset/byte_source.h"
#include "object/object_store.h"

namespace strata::dataset {

struct SinkOptions {
  uint64_t part_size = 16 << 20;  // raised to the store's MinPartSize() if below it
  int max_inflight = 4;
};

struct WrittenObject {
  std::string key;
  uint64_t size = 0;
  std::string sha256;  // hex
  std::string crc32c;  // hex, big-endian (dataset::ShardEntry::crc32c)
  std::string etag;
  uint64_t requests = 0;
};

class ObjectSink : public ByteSink {
 public:
  ObjectSink(object::ObjectStore& store, std::string key, SinkOptions options = {});
  ~ObjectSink() override;
  Status Append(Buffer data) override;
  uint64_t bytes_written() const override { return size_; }
  Result<WrittenObject> Close();
  void Abort();

 private:
  Status Flush(bool final_part);
  Status Reap(size_t keep);  // waits until at most `keep` parts are in flight

  object::ObjectStore& store_;
  std::string key_;
  SinkOptions options_;
  Sha256Hasher hasher_;
  uint32_t crc32c_ = 0;
  std::vector<Buffer> pending_;
  uint64_t pending_bytes_ = 0;
  uint64_t size_ = 0;
  std::string upload_id_;
  std::vector<object::CompletedPart> parts_;
  std::vector<std::pair<int, std::future<Result<std::string>>>> inflight_;
  Status error_;
  bool closed_ = false;
  uint64_t requests_ = 0;
};

}  // namespace strata::dataset
