#include "dataset/byte_source.h"

#include <algorithm>

namespace strata::dataset {

Result<Buffer> BufferSource::Read(uint64_t n) {
  uint64_t take = std::min<uint64_t>(n, data_.size() - pos_);
  Buffer out = data_.Slice(pos_, take);
  pos_ += take;
  return out;
}

Status BufferSource::Skip(uint64_t n) {
  pos_ += std::min<uint64_t>(n, data_.size() - pos_);
  return Status::Ok();
}

Result<std::unique_ptr<ObjectSource>> ObjectSource::Open(object::ObjectStore& store, std::string key,
                                                         StreamOptions options) {
  if (options.chunk_size == 0) return InvalidArgumentError("chunk_size must be positive");
  std::unique_ptr<ObjectSource> src(new ObjectSource(store, std::move(key), options));
  object::GetOptions get;
  get.range = object::ByteRange::Of(0, options.chunk_size);
  auto first = store.Get(src->key_, get);
  src->requests_ = 1;
  if (!first.ok()) return first.status().WithContext("reading " + src->key_);
  src->size_ = first->info.size;
  src->etag_ = first->info.etag;
  src->chunk_ = std::move(first->data);
  if (src->options_.hasher) src->options_.hasher->Update(src->chunk_.data(), src->chunk_.size());
  src->next_fetch_ = src->chunk_.size();
  src->Prefetch();
  return src;
}

ObjectSource::~ObjectSource() {
  for (auto& f : inflight_) f.wait();
}

void ObjectSource::Prefetch() {
  while (static_cast<int>(inflight_.size()) < std::max(options_.prefetch, 1) && next_fetch_ < size_) {
    uint64_t len = std::min(options_.chunk_size, size_ - next_fetch_);
    object::GetOptions get;
    get.range = object::ByteRange::Of(next_fetch_, len);
    get.if_match = etag_;
    object::ObjectStore* store = &store_;
    std::string key = key_;
    if (options_.prefetch <= 0) {
      std::promise<Result<object::GetResult>> p;
      p.set_value(store->Get(key, get));
      inflight_.push_back(p.get_future());
    } else {
      inflight_.push_back(std::async(std::launch::async, [store, key, get] { return store->Get(key, get); }));
    }
    ++requests_;
    next_fetch_ += len;
  }
}

Status ObjectSource::Advance() {
  uint64_t next_offset = chunk_offset_ + chunk_.size();
  if (inflight_.empty()) return CorruptionError(key_ + ": read past the end at offset " + std::to_string(next_offset));
  Result<object::GetResult> got = inflight_.front().get();
  inflight_.pop_front();
  if (!got.ok()) return got.status().WithContext("reading " + key_ + " at offset " + std::to_string(next_offset));
  if (got->offset != next_offset || got->data.empty()) {
    return CorruptionError(key_ + ": short ranged read at offset " + std::to_string(next_offset) +
                           " (the object may have been truncated while being read)");
  }
  chunk_ = std::move(got->data);
  chunk_offset_ = next_offset;
  pos_in_chunk_ = 0;
  if (options_.hasher) options_.hasher->Update(chunk_.data(), chunk_.size());
  Prefetch();
  return Status::Ok();
}

Result<Buffer> ObjectSource::Read(uint64_t n) {
  n = std::min(n, remaining());
  if (pos_in_chunk_ == chunk_.size() && n > 0) STRATA_RETURN_IF_ERROR(Advance());
  if (chunk_.size() - pos_in_chunk_ >= n) {
    Buffer out = chunk_.Slice(pos_in_chunk_, n);
    pos_in_chunk_ += n;
    return out;
  }
  // Spans chunks: n is bounded by remaining(), i.e. by bytes that exist.
  MutableBuffer out(n);
  uint64_t filled = 0;
  while (filled < n) {
    if (pos_in_chunk_ == chunk_.size()) STRATA_RETURN_IF_ERROR(Advance());
    uint64_t take = std::min(n - filled, chunk_.size() - pos_in_chunk_);
    std::copy_n(chunk_.data() + pos_in_chunk_, take, out.data() + filled);
    filled += take;
    pos_in_chunk_ += take;
  }
  return std::move(out).Freeze();
}

Status ObjectSource::Skip(uint64_t n) {
  n = std::min(n, remaining());
  // Walks through the chunks (no seeking) so a hasher sees every byte.
  while (n > 0) {
    if (pos_in_chunk_ == chunk_.size()) STRATA_RETURN_IF_ERROR(Advance());
    uint64_t take = std::min(n, chunk_.size() - pos_in_chunk_);
    pos_in_chunk_ += take;
    n -= take;
  }
  return Status::Ok();
}

Status ObjectSource::DrainToEnd() { return Skip(remaining()); }

Status BufferSink::Append(Buffer data) {
  size_ += data.size();
  if (!data.empty()) parts_.push_back(std::move(data));
  return Status::Ok();
}

Buffer BufferSink::Take() {
  Buffer out = parts_.size() == 1 ? parts_[0] : Concat(parts_);
  parts_.clear();
  size_ = 0;
  return out;
}

}  // namespace strata::dataset
