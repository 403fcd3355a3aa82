// Byte sources the shard readers parse from: an in-memory Buffer, or an
// object read sequentially with large ranged GETs and read-ahead. A source is
// used by one thread at a time; the ObjectStore must outlive an ObjectSource.
#pragma once

#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <string>

#include "base/buffer.h"
#include "base/hash.h"
#include "base/status.h"
#include "object/object_store.h"

namespace strata::dataset {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Exactly min(n, remaining()) bytes; zero-copy when they lie in one chunk.
  virtual Result<Buffer> Read(uint64_t n) = 0;
  // Advances min(n, remaining()) bytes.
  virtual Status Skip(uint64_t n) = 0;
  virtual uint64_t position() const = 0;
  virtual uint64_t size() const = 0;  // total bytes in the source
  uint64_t remaining() const { return size() - position(); }
  // Names the shard in error messages.
  virtual const std::string& name() const = 0;
};

class BufferSource : public ByteSource {
 public:
  BufferSource(Buffer data, std::string name, uint64_t base_offset = 0)
      : data_(std::move(data)), name_(std::move(name)), base_(base_offset) {}
  Result<Buffer> Read(uint64_t n) override;
  Status Skip(uint64_t n) override;
  // Positions are reported relative to the whole shard (base_offset added) so
  // errors in a ranged read of one sample name the true shard offset.
  uint64_t position() const override { return base_ + pos_; }
  uint64_t size() const override { return base_ + data_.size(); }
  const std::string& name() const override { return name_; }

 private:
  Buffer data_;
  std::string name_;
  uint64_t base_;
  uint64_t pos_ = 0;
};

struct StreamOptions {
  uint64_t chunk_size = 8 << 20;   // bytes per ranged GET
  int prefetch = 2;                // further chunks requested ahead of the reader
  Sha256Hasher* hasher = nullptr;  // if set, every byte of the object is fed to it in order
};

// Reads one object front to back. The first GET also yields the size and
// ETag; later GETs carry If-Match so a shard replaced mid-read is an error
// (PreconditionFailed) instead of a silent mix of two versions.
class ObjectSource : public ByteSource {
 public:
  static Result<std::unique_ptr<ObjectSource>> Open(object::ObjectStore& store, std::string key,
                                                    StreamOptions options = {});
  ~ObjectSource() override;
  Result<Buffer> Read(uint64_t n) override;
  Status Skip(uint64_t n) override;
  uint64_t position() const override { return chunk_offset_ + pos_in_chunk_; }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return key_; }
  const std::string& etag() const { return etag_; }
  uint64_t requests() const { return requests_; }
  // Reads (and hashes) whatever is left; for whole-object checksums.
  Status DrainToEnd();

 private:
  ObjectSource(object::ObjectStore& store, std::string key, StreamOptions options)
      : store_(store), key_(std::move(key)), options_(options) {}
  Status Advance();  // moves to the next chunk
  void Prefetch();

  object::ObjectStore& store_;
  std::string key_;
  StreamOptions options_;
  std::string etag_;
  uint64_t size_ = 0;
  Buffer chunk_;
  uint64_t chunk_offset_ = 0;
  uint64_t pos_in_chunk_ = 0;
  uint64_t next_fetch_ = 0;  // offset of the next chunk to request
  std::deque<std::future<Result<object::GetResult>>> inflight_;
  uint64_t requests_ = 0;
};

// Where writers put bytes. Not thread-safe.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status Append(Buffer data) = 0;
  virtual uint64_t bytes_written() const = 0;
};

// Collects everything in memory (tests, sidecars, small shards).
class BufferSink : public ByteSink {
 public:
  Status Append(Buffer data) override;
  uint64_t bytes_written() const override { return size_; }
  Buffer Take();  // concatenated bytes; the sink is empty afterwards

 private:
  std::vector<Buffer> parts_;
  uint64_t size_ = 0;
};

}  // namespace strata::dataset
