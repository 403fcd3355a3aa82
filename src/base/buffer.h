// Byte buffers. Buffer is immutable, reference-counted and cheap to copy or
// slice: cache blocks are handed out as Buffers without copying bytes.
// MutableBuffer owns writable (uninitialised, page-aligned) memory and is
// frozen into a Buffer once filled. Both are safe to share across threads
// once constructed (Buffer's bytes never change).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class Buffer {
 public:
  Buffer() = default;
  static Buffer Copy(const void* data, size_t size);
  static Buffer Copy(std::string_view s) { return Copy(s.data(), s.size()); }
  static Buffer FromString(std::string s);  // takes ownership, no copy
  static Buffer FromVector(std::vector<uint8_t> v);
  // Wraps memory kept alive by `owner`.
  static Buffer Wrap(std::shared_ptr<const void> owner, const uint8_t* data, size_t size);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  std::string ToString() const { return std::string(view()); }

  // A view of [offset, offset+length) sharing the same storage; clamped to size().
  Buffer Slice(size_t offset, size_t length = SIZE_MAX) const;

  friend bool operator==(const Buffer& a, const Buffer& b) { return a.view() == b.view(); }

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

class MutableBuffer {
 public:
  MutableBuffer() = default;
  explicit MutableBuffer(size_t size);  // page-aligned, uninitialised

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Shrinks or grows within capacity (never reallocates).
  void Resize(size_t size);
  // Gives the bytes to an immutable Buffer; this object becomes empty.
  Buffer Freeze() &&;

 private:
  std::shared_ptr<uint8_t> storage_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Concatenates buffers into one (a single copy).
Buffer Concat(const std::vector<Buffer>& parts);

}  // namespace strata
