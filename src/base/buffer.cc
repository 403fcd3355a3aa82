#include "base/buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "base/buffer_pool.h"

namespace strata {

Buffer Buffer::Copy(const void* data, size_t size) {
  MutableBuffer m(size);
  if (size) std::memcpy(m.data(), data, size);
  return std::move(m).Freeze();
}

Buffer Buffer::FromString(std::string s) {
  auto owner = std::make_shared<std::string>(std::move(s));
  Buffer b;
  b.data_ = reinterpret_cast<const uint8_t*>(owner->data());
  b.size_ = owner->size();
  b.owner_ = std::move(owner);
  return b;
}

Buffer Buffer::FromVector(std::vector<uint8_t> v) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(v));
  Buffer b;
  b.data_ = owner->data();
  b.size_ = owner->size();
  b.owner_ = std::move(owner);
  return b;
}

Buffer Buffer::Wrap(std::shared_ptr<const void> owner, const uint8_t* data, size_t size) {
  Buffer b;
  b.owner_ = std::move(owner);
  b.data_ = data;
  b.size_ = size;
  return b;
}

Buffer Buffer::Slice(size_t offset, size_t length) const {
  if (offset > size_) offset = size_;
  if (length > size_ - offset) length = size_ - offset;
  Buffer b;
  b.owner_ = owner_;
  b.data_ = data_ + offset;
  b.size_ = length;
  return b;
}

MutableBuffer::MutableBuffer(size_t size)
    : storage_(BufferPoolAllocate(size)), data_(storage_.get()), size_(size), capacity_(size) {}

void MutableBuffer::Resize(size_t size) {
  if (size > capacity_) throw std::length_error("MutableBuffer::Resize beyond capacity");
  size_ = size;
}

Buffer MutableBuffer::Freeze() && {
  Buffer b = Buffer::Wrap(std::move(storage_), data_, size_);
  data_ = nullptr;
  size_ = capacity_ = 0;
  return b;
}

Buffer Concat(const std::vector<Buffer>& parts) {
  if (parts.size() == 1) return parts[0];
  size_t total = 0;
  for (const auto& p : parts) total += p.size();
  MutableBuffer m(total);
  size_t off = 0;
  for (const auto& p : parts) {
    if (p.size()) std::memcpy(m.data() + off, p.data(), p.size());
    off += p.size();
  }
  return std::move(m).Freeze();
}

}  // namespace strata
