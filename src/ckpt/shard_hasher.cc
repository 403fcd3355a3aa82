#include "ckpt/shard_hasher.h"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace strata::ckpt {

struct ShardHasher::Xxh {
  XXH3_state_t state;
};

ShardHasher::ShardHasher(std::vector<const TensorEntry*> tensors)
    : tensors_(std::move(tensors)), xxh_(std::make_unique<Xxh>()) {}

ShardHasher::~ShardHasher() = default;

void ShardHasher::Update(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  sha_.Update(p, n);
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
  offset_ = end;
}

std::string ShardHasher::Sha256Hex() { return ToHex(sha_.Finish()); }

}  // namespace strata::ckpt
