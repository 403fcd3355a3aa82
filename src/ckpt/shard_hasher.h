// Hashes a shard's bytes fed in order from offset 0, streaming with bounded
// memory: xxh3 of the whole file (always; tens of GB/s), optionally SHA-256
// of the whole file (the manifest's record; ~1-2 GB/s per core) and xxh3 of
// each tensor (so a mismatch names the tensor). Not thread-safe; one per shard.
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
  struct Options {
    bool sha256 = true;
    bool per_tensor = true;
  };
  // `tensors` sorted by offset, non-overlapping, pointers outlive the hasher.
  explicit ShardHasher(std::vector<const TensorEntry*> tensors) : ShardHasher(std::move(tensors), Options{}) {}
  ShardHasher(std::vector<const TensorEntry*> tensors, Options options);
  ~ShardHasher();
  void Update(const void* data, size_t n);
  std::string Sha256Hex();  // once, at the end; empty without options.sha256
  uint64_t Xxh3();          // of everything fed; once, at the end
  // Tensors fully fed whose xxh3 differs from the manifest's (per_tensor only).
  const std::vector<const TensorEntry*>& BadTensors() const { return bad_; }
  // xxh3 of every tensor fully fed, in order (for the writer to record).
  const std::vector<uint64_t>& Digests() const { return digests_; }

 private:
  struct Xxh;
  void UpdateTensors(const uint8_t* p, size_t n);
  Options options_;
  std::vector<const TensorEntry*> tensors_;
  size_t next_ = 0;  // first tensor not yet finished
  uint64_t offset_ = 0;
  bool open_ = false;
  std::unique_ptr<Sha256Hasher> sha_;
  std::unique_ptr<Xxh> xxh_;  // the current tensor
  std::unique_ptr<Xxh> whole_;
  std::vector<const TensorEntry*> bad_;
  std::vector<uint64_t> digests_;
};

// The per-tensor xxh3 mismatches of a shard held in memory (`data` is the
// whole file): names the tensors once a whole-file hash has failed.
std::vector<const TensorEntry*> BadTensorsIn(const uint8_t* data, uint64_t size,
                                             const std::vector<const TensorEntry*>& tensors);

}  // namespace strata::ckpt
