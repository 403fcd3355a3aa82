#include "object/object_store.h"

#include <algorithm>

#include "base/checksum.h"
#include "base/hash.h"

namespace strata::object {

Result<ObjectInfo> ObjectStore::Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) {
  STRATA_ASSIGN_OR_RETURN(GetResult src, Get(src_key));
  PutOptions put;
  put.metadata = options.directive == MetadataDirective::kReplace ? options.metadata : std::move(src.info.metadata);
  return Put(dst_key, std::move(src.data), put);
}

Status ObjectStore::ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                                const RangeConsumer& consume) {
  GetOptions options;
  options.if_match = std::string(etag);
  options.range = ByteRange::Of(offset, length);
  STRATA_ASSIGN_OR_RETURN(GetResult got, Get(key, options));
  if (got.offset != offset || got.data.size() != length) {
    return UnavailableError("range " + std::to_string(offset) + "+" + std::to_string(length) + " of '" +
                            std::string(key) + "' came back as " + std::to_string(got.offset) + "+" +
                            std::to_string(got.data.size()));
  }
  return consume(offset, got.data.data(), got.data.size());
}

Result<std::optional<ObjectInfo>> ObjectStore::FindCompletedUpload(std::string_view /*key*/,
                                                                   std::string_view /*upload_id*/,
                                                                   const std::vector<CompletedPart>& /*parts*/) {
  return std::optional<ObjectInfo>();
}

Result<std::vector<UploadInfo>> ObjectStore::ListMultipartUploads(std::string_view /*prefix*/) {
  return NotSupportedError("listing multipart uploads is not supported by " + Url());
}

Result<PartRange> ObjectStore::GetPartRange(std::string_view key, std::string_view etag, int part_number) {
  if (part_number < 1 || part_number > 10000) {
    return InvalidArgumentError("part number " + std::to_string(part_number) + " is not in 1..10000");
  }
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, Head(key));
  if (!etag.empty() && info.etag != etag) {
    return PreconditionFailedError("'" + std::string(key) + "' is no longer version " + std::string(etag));
  }
  return PartRangeOf(info, part_number);
}

Result<PartRange> PartRangeOf(const ObjectInfo& info, int part_number) {
  const std::vector<uint64_t>& parts = info.part_sizes;
  if (part_number < 1 || static_cast<size_t>(part_number) > std::max<size_t>(parts.size(), 1)) {
    return OutOfRangeError("'" + info.key + "' has no part " + std::to_string(part_number))
        .WithForeignCode("InvalidPartNumber");
  }
  PartRange r{0, info.size, static_cast<int>(parts.size()), info.etag, info.size};
  if (parts.empty()) return r;
  auto stale = [&] {
    return UnavailableError("the part sizes of '" + info.key + "' do not fit its " + std::to_string(info.size) +
                            " bytes (changed while being read; retry)");
  };
  // Compared without adding, so sizes that overrun cannot wrap around.
  r.offset = 0;
  for (int i = 0; i + 1 < part_number; ++i) {
    if (parts[i] > info.size - r.offset) return stale();
    r.offset += parts[i];
  }
  r.length = parts[part_number - 1];
  if (r.length > info.size - r.offset) return stale();
  return r;
}

Status ValidateKey(std::string_view key) {
  if (key.empty()) return InvalidArgumentError("object key is empty");
  if (key.size() > 1024) return InvalidArgumentError("object key is longer than 1024 bytes");
  if (key.find('\0') != std::string_view::npos) return InvalidArgumentError("object key contains a NUL byte");
  return Status::Ok();
}

Status ResolveRange(const std::optional<ByteRange>& range, uint64_t size, uint64_t* begin, uint64_t* end) {
  *begin = 0;
  *end = size;
  if (!range) return Status::Ok();
  if (range->suffix) {
    if (*range->suffix == 0) return OutOfRangeError("suffix range of zero bytes");
    *begin = *range->suffix >= size ? 0 : size - *range->suffix;
    return Status::Ok();
  }
  if (range->offset >= size && !(size == 0 && range->offset == 0)) {
    return OutOfRangeError("range starts at byte " + std::to_string(range->offset) + " but the object has " +
                           std::to_string(size) + " bytes");
  }
  *begin = range->offset;
  // Compared without adding, so a huge length cannot wrap around.
  if (range->length && *range->length < size - range->offset) *end = range->offset + *range->length;
  return Status::Ok();
}

std::string MultipartEtag(const std::vector<std::string>& part_md5_hex) {
  std::string concat;
  for (const auto& hex : part_md5_hex) {
    std::string raw;
    if (!HexDecode(hex, &raw)) raw = hex;
    concat += raw;
  }
  return ToHex(Md5(concat)) + "-" + std::to_string(part_md5_hex.size());
}

void CompleteChecksum(ObjectMetadata* m, const std::vector<PartInfo>& parts) {
  auto clear = [m] {
    m->checksum_algorithm.clear();
    m->checksum_type.clear();
    m->checksum.clear();
  };
  auto algorithm = ParseChecksumAlgorithm(m->checksum_algorithm);
  if (!algorithm) return clear();
  // The whole object's value known at Create (a single PUT the gateway
  // streams to the store in parts, verified by it): kept as it is.
  if (!m->checksum.empty() && ParseChecksumType(m->checksum_type)) return;
  auto type = m->checksum_type.empty() ? DefaultChecksumType(*algorithm) : ParseChecksumType(m->checksum_type);
  if (!type) return clear();
  std::vector<PartChecksum> raws;
  for (const PartInfo& p : parts) {
    if (ParseChecksumAlgorithm(p.checksum.algorithm) != algorithm) return clear();
    auto raw = DecodeChecksum(*algorithm, p.checksum.value);
    if (!raw) return clear();
    raws.push_back({std::move(*raw), p.size});
  }
  auto value = CombinePartChecksums(*algorithm, *type, raws);
  if (!value.ok()) return clear();
  m->checksum_type = std::string(ChecksumTypeName(*type));
  m->checksum = std::move(*value);
}

}  // namespace strata::object
