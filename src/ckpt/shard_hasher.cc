#include "ckpt/shard_hasher.h"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace strata::ckpt {

struct ShardHasher::Xxh {
  XXH3_state_t state;
};

ShardHasher::ShardHasher(std::vector<const TensorEntry*> tensors, Options options)
    : options_(options),
      tensors_(std::move(tensors)),
      sha_(options.sha256 ? std::make_unique<Sha256Hasher>() : nullptr),
      xxh_(std::make_unique<Xxh>()),
      whole_(std::make_unique<Xxh>()) {
  XXH3_64bits_reset(&whole_->state);
}

ShardHasher::~ShardHasher() = default;

void ShardHasher::Update(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (sha_) sha_->Update(p, n);
  XXH3_64bits_update(&whole_->state, p, n);
  if (options_.per_tensor) UpdateTensors(p, n);
  offset_ += n;
}

void ShardHasher::UpdateTensors(const uint8_t* p, size_t n) {
  const uint64_t end = offset_ + n;
  while (next_ < tensors_.size()) {
    const TensorEntry* t = tensors_[next_];
    const uint64_t t_end = t->offset + t->size;
    if (t->offset > end || (t->offset == end && t->size > 0)) break;  // starts later
    if (!open_) {
      XXH3_64bits_reset(&xxh_->state);
      open_ = true;
    }
    const uint64_t from = std::max(t->offset, offset_), to = std::min(t_end, end);
    if (to > from) XXH3_64bits_update(&xxh_->state, p + (from - offset_), to - from);
    if (t_end > end) break;  // continues in the next update
    const uint64_t digest = XXH3_64bits_digest(&xxh_->state);
    digests_.push_back(digest);
    if (digest != t->xxh3) bad_.push_back(t);
    open_ = false;
    ++next_;
  }
}

std::string ShardHasher::Sha256Hex() { return sha_ ? ToHex(sha_->Finish()) : std::string(); }

uint64_t ShardHasher::Xxh3() { return XXH3_64bits_digest(&whole_->state); }

std::vector<const TensorEntry*> BadTensorsIn(const uint8_t* data, uint64_t size,
                                             const std::vector<const TensorEntry*>& tensors) {
  std::vector<const TensorEntry*> bad;
  for (const TensorEntry* t : tensors) {
    if (t->offset > size || t->size > size - t->offset || XXH3_64bits(data + t->offset, t->size) != t->xxh3) {
      bad.push_back(t);
    }
  }
  return bad;
}

}  // namespace strata::ckpt
