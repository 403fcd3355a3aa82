#include "dataset/offset_index.h"

#include <cstring>

#include "base/coding.h"
#include "base/hash.h"

namespace strata::dataset {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'I', 'D', 'X', '0', '1'};
constexpr size_t kFixed = 8 + 4 + 4 + 8 + 8;

}  // namespace

std::string SidecarName(const std::string& shard_name) { return shard_name + ".idx"; }

Buffer EncodeOffsetIndex(const OffsetIndex& index) {
  std::string out(kMagic, 8);
  PutFixed32(&out, static_cast<uint32_t>(index.format) + 1);
  PutFixed32(&out, 0);
  PutFixed64(&out, index.count());
  PutFixed64(&out, index.shard_size);
  std::vector<uint64_t> offsets = index.offsets.empty() ? std::vector<uint64_t>{0} : index.offsets;
  for (uint64_t o : offsets) PutFixed64(&out, o);
  PutFixed32(&out, MaskCrc32c(Crc32c(out.data(), out.size())));
  return Buffer::FromString(std::move(out));
}

Result<OffsetIndex> DecodeOffsetIndex(const Buffer& data, const std::string& name) {
  auto bad = [&](const std::string& what) { return CorruptionError(name + ": bad index sidecar: " + what); };
  const uint8_t* p = data.data();
  if (data.size() < kFixed + 8 + 4 || std::memcmp(p, kMagic, 8) != 0) return bad("wrong magic or too short");
  uint64_t format = DecodeFixed32(p + 8);
  if (format < 1 || format > 3) return bad("unknown shard format " + std::to_string(format));
  uint64_t count = DecodeFixed64(p + 16);
  // Checked against the bytes that exist before sizing anything by `count`.
  if (count > (data.size() - kFixed - 12) / 8 || kFixed + 8 * (count + 1) + 4 != data.size()) {
    return bad("count " + std::to_string(count) + " does not match its " + std::to_string(data.size()) + " bytes");
  }
  if (MaskCrc32c(Crc32c(p, data.size() - 4)) != DecodeFixed32(p + data.size() - 4)) return bad("checksum mismatch");
  OffsetIndex index;
  index.format = static_cast<ShardFormat>(format - 1);
  index.shard_size = DecodeFixed64(p + 24);
  index.offsets.resize(count + 1);
  for (uint64_t i = 0; i <= count; ++i) {
    index.offsets[i] = DecodeFixed64(p + kFixed + 8 * i);
    if (i > 0 && index.offsets[i] < index.offsets[i - 1]) return bad("offsets decrease at entry " + std::to_string(i));
  }
  if (index.offsets.back() > index.shard_size) return bad("offsets run past the shard's size");
  return index;
}

}  // namespace strata::dataset
