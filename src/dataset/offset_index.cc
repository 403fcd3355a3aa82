#include "dataset/offset_index.h"

#include <cstring>

#include "base/hash.h"

namespace strata::dataset {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'I', 'D', 'X', '0', '1'};
constexpr size_t kFixed = 8 + 4 + 4 + 8 + 8;

void Put(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t Get(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

std::string SidecarName(const std::string& shard_name) { return shard_name + ".idx"; }

Buffer EncodeOffsetIndex(const OffsetIndex& index) {
  std::string out(kMagic, 8);
  Put(&out, static_cast<uint32_t>(index.format) + 1, 4);
  Put(&out, 0, 4);
  Put(&out, index.count(), 8);
  Put(&out, index.shard_size, 8);
  std::vector<uint64_t> offsets = index.offsets.empty() ? std::vector<uint64_t>{0} : index.offsets;
  for (uint64_t o : offsets) Put(&out, o, 8);
  Put(&out, MaskCrc32c(Crc32c(out.data(), out.size())), 4);
  return Buffer::FromString(std::move(out));
}

Result<OffsetIndex> DecodeOffsetIndex(const Buffer& data, const std::string& name) {
  auto bad = [&](const std::string& what) { return CorruptionError(name + ": bad index sidecar: " + what); };
  const uint8_t* p = data.data();
  if (data.size() < kFixed + 8 + 4 || std::memcmp(p, kMagic, 8) != 0) return bad("wrong magic or too short");
  uint64_t format = Get(p + 8, 4);
  if (format < 1 || format > 3) return bad("unknown shard format " + std::to_string(format));
  uint64_t count = Get(p + 16, 8);
  // Checked against the bytes that exist before sizing anything by `count`.
  if (count > (data.size() - kFixed - 12) / 8 || kFixed + 8 * (count + 1) + 4 != data.size()) {
    return bad("count " + std::to_string(count) + " does not match its " + std::to_string(data.size()) + " bytes");
  }
  if (MaskCrc32c(Crc32c(p, data.size() - 4)) != Get(p + data.size() - 4, 4)) return bad("checksum mismatch");
  OffsetIndex index;
  index.format = static_cast<ShardFormat>(format - 1);
  index.shard_size = Get(p + 24, 8);
  index.offsets.resize(count + 1);
  for (uint64_t i = 0; i <= count; ++i) {
    index.offsets[i] = Get(p + kFixed + 8 * i, 8);
    if (i > 0 && index.offsets[i] < index.offsets[i - 1]) return bad("offsets decrease at entry " + std::to_string(i));
  }
  if (index.offsets.back() > index.shard_size) return bad("offsets run past the shard's size");
  return index;
}

}  // namespace strata::dataset
