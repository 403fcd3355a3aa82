// ObjectStore: the one interface to object storage (a bucket, optionally
// under a key prefix). Implementations: file://, mem://, s3://, and
// decorators (cloud emulation, fault injection, the cache). All methods are
// thread-safe; implementations must return the exact codes documented here
// (the conformance suite in testing/ checks them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/status.h"
#include "object/metadata.h"

namespace strata::object {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // without quotes; changes whenever the content changes
  WallTime mtime{};
  // Head and Get fill it; List leaves it empty (S3 lists no metadata).
  ObjectMetadata metadata;
  // A multipart object's part sizes, in part order (summing to size), as
  // CompleteMultipartUpload made it; Head and Get fill them where the store
  // keeps them (mem://, file://), Complete's answer on s3:// too. Empty: a
  // single PUT or copy, or unknown (s3:// Head/Get, List). Not metadata: a
  // copy never carries them over.
  std::vector<uint64_t> part_sizes;
};

// Half-open byte range [offset, offset + length). length unset: to the end.
// Negative suffix ranges ("the last N bytes") use `suffix`.
struct ByteRange {
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  std::optional<uint64_t> suffix;  // when set, offset/length are ignored
  static ByteRange Of(uint64_t offset, uint64_t length) { return {offset, length, {}}; }
  static ByteRange From(uint64_t offset) { return {offset, {}, {}}; }
  static ByteRange Last(uint64_t n) { return {0, {}, n}; }
};

// Memory a Get may read the bytes into: `size` writable bytes at `data`,
// kept alive by `owner`. A store that uses it returns GetResult::data as a
// view of exactly this memory, saving its caller a copy (the loader
// assembles a shard's parallel ranged reads in one buffer so); one that does
// not (or cannot: another size) returns its own buffer as usual, so callers
// compare data() with `data` before copying. Only the file store uses it.
struct GetInto {
  std::shared_ptr<void> owner;
  uint8_t* data = nullptr;
  size_t size = 0;
};

struct GetOptions {
  std::optional<ByteRange> range;
  GetInto into;
  std::string if_match;                         // PreconditionFailed unless the ETag matches
  std::string if_none_match;                    // NotModified if the ETag matches
  std::optional<WallTime> if_modified_since;    // NotModified if not modified since
  std::optional<WallTime> if_unmodified_since;  // PreconditionFailed if modified since
};

struct GetResult {
  ObjectInfo info;      // of the whole object (size is the full size)
  uint64_t offset = 0;  // where `data` starts within the object
  Buffer data;          // the requested range, exactly
};

// One part of a multipart object, as GetObject ?partNumber=N answers it:
// bytes [offset, offset + length) of version `etag` of an object of
// `object_size` bytes. parts_count 0: the object is not known to be
// multipart, so its one part is the whole object (as S3 answers for a
// single PUT: no x-amz-mp-parts-count).
struct PartRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  int parts_count = 0;
  std::string etag;
  uint64_t object_size = 0;
};

struct ListOptions {
  std::string prefix;
  std::string delimiter;           // usually "/" or empty
  std::string start_after;         // exclusive
  std::string continuation_token;  // from a previous ListResult
  int max_keys = 1000;             // 1..1000
};

struct ListResult {
  std::vector<ObjectInfo> objects;           // sorted by key (byte order)
  std::vector<std::string> common_prefixes;  // sorted, each ends with the delimiter
  bool truncated = false;
  std::string next_continuation_token;  // set iff truncated
};

struct PutOptions {
  std::string if_match;        // PreconditionFailed unless the current ETag matches
  bool if_none_match = false;  // "If-None-Match: *": PreconditionFailed if the key exists
  // Stored with the object (multipart: given at Create, kept until Complete).
  // InvalidArgument if ValidateMetadata fails; NotSupported if non-empty and
  // the store does not keep metadata (Capabilities().metadata_kept).
  ObjectMetadata metadata;
};

// S3's x-amz-metadata-directive.
enum class MetadataDirective { kCopy, kReplace };

struct CopyOptions {
  MetadataDirective directive = MetadataDirective::kCopy;  // kCopy: the source's metadata
  ObjectMetadata metadata;                                 // the copy's metadata under kReplace
};

struct CompletedPart {
  int part_number = 0;  // 1..10000
  std::string etag;
};

// A part's S3 checksum (x-amz-checksum-* of UploadPart), kept with the part
// so Complete can combine them into the object's (see CompleteChecksum) and
// ListParts can return them. Both empty: none.
struct PartChecksumInfo {
  std::string algorithm;  // as ObjectMetadata::checksum_algorithm ("CRC32", ...)
  std::string value;      // base64, as S3 prints it
  bool operator==(const PartChecksumInfo&) const = default;
};

struct PartOptions {
  PartChecksumInfo checksum;  // verified by the caller; the store keeps it
};

// CompleteMultipartUpload's own conditions ("If-Match" / "If-None-Match: *"
// sent with Complete), checked atomically with the commit as Put checks
// PutOptions' (together with any given at CreateMultipartUpload):
// PreconditionFailed when they fail. `checksum` is the whole object's
// checksum as a client sent it with Complete and `part_checksums` the parts'
// (part_checksums[i] belongs to parts[i]; may be empty), already checked by
// the caller where the store keeps part checksums; stores that keep none
// (s3://) pass them to their upstream, which decides.
struct CompleteOptions {
  std::string if_match;
  bool if_none_match = false;
  PartChecksumInfo checksum;
  std::string checksum_type;  // "FULL_OBJECT" / "COMPOSITE" / empty
  std::vector<PartChecksumInfo> part_checksums;
};

struct PartInfo {
  int part_number = 0;
  std::string etag;
  uint64_t size = 0;
  PartChecksumInfo checksum;
};

// Receives downloaded bytes [offset, offset + size) of an object. Called
// concurrently from several threads (and for streaming stores on the store's
// I/O thread: keep it short, e.g. a memcpy or a pwrite), in any order; `data`
// is valid only during the call. A range may be delivered again after a
// retry, always with the same bytes (the read is pinned to one ETag), so
// positional writes are safe. A non-OK Status stops the download.
using RangeConsumer = std::function<Status(uint64_t offset, const uint8_t* data, size_t size)>;

// What a store can do, declared so callers never guess from an error.
// Decorators report their base's, adjusted for what they change.
struct StoreCapabilities {
  bool directory_markers = true;         // keys ending in '/' can be stored ("dir/" markers)
  bool conditional_put = true;           // Put honours PutOptions::if_match / if_none_match
  bool server_side_copy = false;         // Copy moves no bytes through this process
  bool range_streaming = false;          // ReadRangeTo streams into the consumer with no buffer of its own
  bool metadata_kept = false;            // PutOptions::metadata (its checksum too) is stored and returned by Head/Get
  bool checksums_kept = false;           // PartOptions::checksum is kept (ListParts) and Complete combines them
  bool part_sizes_kept = false;          // Head/Get of a multipart object fill ObjectInfo::part_sizes
  uint64_t min_part_size = 5ull << 20;   // every multipart part but the last is at least this
  uint64_t max_part_size = 5ull << 30;   // S3's limit per part
  uint64_t read_part_size = 8ull << 20;  // a good size for one ranged GET of a parallel read
};

// Virtual methods take every argument (no defaults, which would bind to the
// static type); the non-virtual overloads supply the usual ones. Classes that
// override a virtual and are called through their own type add
// `using ObjectStore::Get;` (etc.) so the overloads stay visible.
struct UploadInfo {  // an in-progress multipart upload
  std::string key;
  std::string upload_id;
  WallTime initiated{};
  // The upload's checksum algorithm and type (CreateMultipartUpload's
  // metadata) where the store keeps them; empty: none.
  std::string checksum_algorithm;
  std::string checksum_type;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Codes: NotFound (no such key), OutOfRange (range starts past the end of a
  // non-empty object), PreconditionFailed / NotModified (conditions).
  // A range extending past the end is clamped, as S3 does.
  virtual Result<GetResult> Get(std::string_view key, const GetOptions& options) = 0;
  Result<GetResult> Get(std::string_view key) { return Get(key, GetOptions{}); }
  // Codes: NotFound.
  virtual Result<ObjectInfo> Head(std::string_view key) = 0;
  // Codes: InvalidArgument (bad continuation token or max_keys).
  virtual Result<ListResult> List(const ListOptions& options) = 0;
  // Atomic: readers see the old object or the new one, never a mix.
  // Codes: PreconditionFailed, InvalidArgument (bad key).
  virtual Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) = 0;
  Result<ObjectInfo> Put(std::string_view key, Buffer data) { return Put(key, std::move(data), PutOptions{}); }
  // Deleting a missing key succeeds (as in S3).
  virtual Status Delete(std::string_view key) = 0;

  // Multipart upload. Parts 1..10000; every part but the last must be at
  // least MinPartSize() bytes, checked at Complete (InvalidArgument).
  // Unknown upload ids: NotFound. The object appears only on Complete.
  virtual Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) = 0;
  Result<std::string> CreateMultipartUpload(std::string_view key) { return CreateMultipartUpload(key, PutOptions{}); }
  virtual Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                         const PartOptions& options) = 0;  // returns the part's ETag
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data) {
    return UploadPart(key, upload_id, part_number, std::move(data), PartOptions{});
  }
  virtual Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                                     const std::vector<CompletedPart>& parts,
                                                     const CompleteOptions& options) = 0;
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts) {
    return CompleteMultipartUpload(key, upload_id, parts, CompleteOptions{});
  }
  // An upload that already completed, for a CompleteMultipartUpload sent
  // again (an SDK retrying one whose answer was lost; S3 answers it 200): the
  // object that completion made when `parts` are the ones it completed with,
  // NotFound (NoSuchUpload) when they are not, nullopt when the store has no
  // record of the upload completing (in progress, aborted, unknown, or older
  // than the most recent kCompletedUploadsKept). Complete itself answers such
  // a retry the same way. The default: nullopt (decorators forward it).
  virtual Result<std::optional<ObjectInfo>> FindCompletedUpload(std::string_view key, std::string_view upload_id,
                                                                const std::vector<CompletedPart>& parts);
  virtual Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) = 0;
  virtual Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) = 0;
  uint64_t MinPartSize() const { return Capabilities().min_part_size; }
  // In-progress uploads whose key starts with `prefix`, sorted by key, then by
  // initiation. The default: NotSupported (decorators must forward it).
  virtual Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix);

  // Server-side copy where the backend has one (Capabilities().server_side_copy);
  // the default reads and writes. The copy keeps the source's metadata
  // unless options.directive is kReplace. Copying a key onto itself with
  // kReplace changes only its metadata (the bytes and ETag stay).
  virtual Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options);
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) {
    return Copy(src_key, dst_key, CopyOptions{});
  }

  // Delivers exactly [offset, offset + length) of `key` (which must lie within
  // the object) to `consume`, pinned to `etag` when it is non-empty
  // (PreconditionFailed if the object changed). Stores with
  // Capabilities().range_streaming hand over bytes as they arrive; the
  // default makes one ranged Get.
  virtual Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                             const RangeConsumer& consume);

  // Part `part_number` (1..10000) of `key` (GetObject ?partNumber=), pinned
  // to `etag` when non-empty. Codes: NotFound, OutOfRange (no such part:
  // S3's InvalidPartNumber), PreconditionFailed (the object is no longer
  // `etag`), InvalidArgument. The default derives it from Head's part_sizes
  // (PartRangeOf); s3:// asks its upstream.
  virtual Result<PartRange> GetPartRange(std::string_view key, std::string_view etag, int part_number);

  virtual StoreCapabilities Capabilities() const { return {}; }

  // A URL that names this store (credentials never included).
  virtual std::string Url() const = 0;
};

using ObjectStorePtr = std::shared_ptr<ObjectStore>;

// Key rules shared by every implementation: non-empty, at most 1024 bytes, no
// NUL. Implementations backed by files add their own (no "..", no leading "/").
Status ValidateKey(std::string_view key);

// Resolves `range` against an object of `size` bytes into [*begin, *end).
// OutOfRange when the range starts at or past the end of a non-empty object.
Status ResolveRange(const std::optional<ByteRange>& range, uint64_t size, uint64_t* begin, uint64_t* end);

// Part `part_number` of the object `info` describes, from info.part_sizes
// (empty: one part, the whole object). OutOfRange past the last part,
// Unavailable when the sizes overrun info.size (a stale mix of versions).
Result<PartRange> PartRangeOf(const ObjectInfo& info, int part_number);

// S3-style multipart ETag: hex(md5(concat(md5(part_i)))) + "-" + N.
std::string MultipartEtag(const std::vector<std::string>& part_md5_hex);

// The checksum a completed multipart object gets: when the upload's metadata
// names an algorithm (and type) and every completed part kept a checksum of
// that algorithm, sets m->checksum to their combination (S3's COMPOSITE or
// FULL_OBJECT value); otherwise the object has none and the fields are
// cleared. A value already set (with its type) is kept: the whole
// object's, known at Create. `parts` are the completed parts in order.
void CompleteChecksum(ObjectMetadata* m, const std::vector<PartInfo>& parts);

}  // namespace strata::object
