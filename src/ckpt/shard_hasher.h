// Hashes a shard's bytes fed in order from offset 0: SHA-256 of the whole
// and xxh3 of each tensor (streaming, bounded memory), so a mismatch names
// the tensor. Not thread-safe; one per shard.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/hash.h"
#include "ckpt/format.h"

namespace strata::ckpt {

class ShardHasher {
 public:
  // `tensors` sorted by offset, non-overlapping, pointers outlive the hasher.
  explicit ShardHasher(std::vector<const TensorEntry*> tensors);
  ~ShardHasher();
  void Update(const void* data, size_t n);
  std::string Sha256Hex();  // once, at the end
  // Tensors fully fed whose xxh3 differs from the manifest's.
  const std::vector<const TensorEntry*>& BadTensors() const { return bad_; }
  // xxh3 of every tensor fully fed, in order (for the writer to record).
  const std::vector<uint64_t>& Digests() const { return digests_; }

 private:
  struct Xxh;
  std::vector<const TensorEntry*> tensors_;
  size_t next_ = 0;  // first tensor not yet finished
  uint64_t offset_ = 0;
  bool open_ = false;
  Sha256Hasher sha_;
  std::unique_ptr<Xxh> xxh_;
  std::vector<const TensorEntry*> bad_;
  std::vector<uint64_t> digests_;
};

}  // namespace strata::ckpt
