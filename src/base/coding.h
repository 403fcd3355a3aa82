// Fixed-width little-endian integers: the byte order of every strata on-disk
// and on-wire format (block headers, shard caches, index sidecars, TFRecord,
// safetensors, .npy), whatever the host's. Byte-at-a-time so the code is the
// same on any host; compilers turn each into one load or store.
//
// Encode/Decode work on raw memory the caller has sized; Put appends to a
// string; Get is the bounds-checked form for parsers: it reads from the front
// of `in` and advances it, or returns false (and leaves `in` alone) when
// fewer bytes remain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

namespace coding_internal {
template <typename T>
inline void Encode(void* dst, T v) {
  auto* p = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
}
template <typename T>
inline T Decode(const void* src) {
  const auto* p = static_cast<const uint8_t*>(src);
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}
template <typename T>
inline void Put(std::string* dst, T v) {
  char buf[sizeof(T)];
  Encode<T>(buf, v);
  dst->append(buf, sizeof(T));
}
template <typename T>
inline bool Get(std::string_view* in, T* v) {
  if (in->size() < sizeof(T)) return false;
  *v = Decode<T>(in->data());
  in->remove_prefix(sizeof(T));
  return true;
}
}  // namespace coding_internal

// Writes the value's bytes at dst (which has room for them).
inline void EncodeFixed16(void* dst, uint16_t v) { coding_internal::Encode(dst, v); }
inline void EncodeFixed32(void* dst, uint32_t v) { coding_internal::Encode(dst, v); }
inline void EncodeFixed64(void* dst, uint64_t v) { coding_internal::Encode(dst, v); }

// Reads a value from src (which holds at least its width).
inline uint16_t DecodeFixed16(const void* src) { return coding_internal::Decode<uint16_t>(src); }
inline uint32_t DecodeFixed32(const void* src) { return coding_internal::Decode<uint32_t>(src); }
inline uint64_t DecodeFixed64(const void* src) { return coding_internal::Decode<uint64_t>(src); }

// Appends the value's bytes.
inline void PutFixed16(std::string* dst, uint16_t v) { coding_internal::Put(dst, v); }
inline void PutFixed32(std::string* dst, uint32_t v) { coding_internal::Put(dst, v); }
inline void PutFixed64(std::string* dst, uint64_t v) { coding_internal::Put(dst, v); }

// Bounds-checked: consumes the value from the front of *in, or returns false.
inline bool GetFixed16(std::string_view* in, uint16_t* v) { return coding_internal::Get(in, v); }
inline bool GetFixed32(std::string_view* in, uint32_t* v) { return coding_internal::Get(in, v); }
inline bool GetFixed64(std::string_view* in, uint64_t* v) { return coding_internal::Get(in, v); }

}  // namespace strata
