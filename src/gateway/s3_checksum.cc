// S3 checksums (x-amz-checksum-*) of writes: read from a header or an
// aws-chunked trailer, verified against the payload (BadDigest), kept in the
// object's metadata and returned on reads with x-amz-checksum-mode: ENABLED.
#include <algorithm>
#include <cctype>

#include "base/checksum.h"
#include "gateway/s3_ops.h"

namespace strata::gateway {
namespace {

Status InvalidRequest(std::string message) {
  return S3Error(Code::kInvalidArgument, "InvalidRequest", std::move(message));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<RequestChecksum> ReadRequestChecksum(const Ctx& ctx, bool multipart) {
  RequestChecksum found;
  std::string source;
  for (ChecksumAlgorithm a : kAllChecksumAlgorithms) {
    const std::string header = ChecksumHeader(a);
    const std::string* v = ctx.Header(header);
    if (!v) continue;
    if (found.algorithm) {
      return InvalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
    }
    found = {a, *v};
    source = header;
  }
  if (const std::string* t = ctx.Header("x-amz-trailer")) {
    // One trailer, a checksum (the only trailers S3 takes).
    std::string name = Lower(*t);
    name.erase(std::remove_if(name.begin(), name.end(), [](char c) { return c == ' ' || c == '\t'; }), name.end());
    constexpr std::string_view kPrefix = "x-amz-checksum-";
    auto a = name.starts_with(kPrefix) ? ParseChecksumAlgorithm(std::string_view(name).substr(kPrefix.size()))
                                       : std::nullopt;
    if (!a) return InvalidRequest("The value specified in the x-amz-trailer header is not supported");
    if (found.algorithm) {
      return InvalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
    }
    const std::string* v = net::FindHeader(ctx.trailers, name);
    if (!v) return InvalidRequest("The request declared the trailer " + name + " in x-amz-trailer but did not send it");
    found = {*a, *v};
    source = name;
  }
  if (const std::string* sdk = ctx.Header("x-amz-sdk-checksum-algorithm")) {
    auto a = ParseChecksumAlgorithm(*sdk);
    if (!a) return InvalidRequest("Value for x-amz-sdk-checksum-algorithm header is invalid.");
    if (!found.algorithm) {
      return InvalidRequest(
          "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers "
          "were found.");
    }
    if (*a != *found.algorithm) return InvalidRequest("Value for x-amz-sdk-checksum-algorithm header is invalid.");
  }
  std::string_view digest = found.value;
  if (size_t dash = digest.find('-'); multipart && dash != std::string_view::npos) {
    std::string_view count = digest.substr(dash + 1);
    bool number = !count.empty() && count.size() <= 5 &&
                  std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (number) digest = digest.substr(0, dash);
  }
  if (found.algorithm && !DecodeChecksum(*found.algorithm, digest)) {
    return InvalidRequest("Value for " + source + " header is invalid.");
  }
  return found;
}

Result<RequestChecksum> VerifyRequestChecksum(const Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(RequestChecksum c, ReadRequestChecksum(ctx, /*multipart=*/false));
  if (!c.algorithm) return c;
  if (ComputeChecksum(*c.algorithm, ctx.body.view()) != *DecodeChecksum(*c.algorithm, c.value)) {
    return S3Error(
        Code::kCorruption, "BadDigest",
        "The " + std::string(ChecksumName(*c.algorithm)) + " you specified did not match the calculated checksum.");
  }
  return c;
}

void KeepChecksum(const RequestChecksum& c, object::ObjectStore& store, object::ObjectMetadata* m) {
  // Verified; kept with the object's metadata (s3://: see object/s3_metadata.h).
  if (!c.algorithm || !store.Capabilities().metadata_kept) return;
  m->checksum_algorithm = std::string(ChecksumName(*c.algorithm));
  m->checksum_type = std::string(ChecksumTypeName(ChecksumType::kFullObject));
  m->checksum = c.value;
}

void ChecksumResponseHeaders(Ctx& ctx, const object::ObjectMetadata& m) {
  auto a = ParseChecksumAlgorithm(m.checksum_algorithm);
  if (!a || m.checksum.empty()) return;
  ctx.resp.headers.emplace_back(ChecksumHeader(*a), m.checksum);
  if (!m.checksum_type.empty()) ctx.resp.headers.emplace_back("x-amz-checksum-type", m.checksum_type);
}

bool ChecksumModeEnabled(const Ctx& ctx) {
  const std::string* mode = ctx.Header("x-amz-checksum-mode");
  return mode && Lower(*mode) == "enabled";
}

Status UploadChecksumOptions(const Ctx& ctx, object::ObjectStore& store, object::ObjectMetadata* m) {
  const std::string* alg = ctx.Header("x-amz-checksum-algorithm");
  const std::string* type = ctx.Header("x-amz-checksum-type");
  if (!alg) {
    if (type) return InvalidRequest("x-amz-checksum-type needs x-amz-checksum-algorithm");
    return Status::Ok();
  }
  auto a = ParseChecksumAlgorithm(*alg);
  if (!a)
    return InvalidRequest(
        "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, "
        "CRC64NVME, SHA1, SHA256]");
  ChecksumType t = DefaultChecksumType(*a);
  if (type) {
    auto parsed = ParseChecksumType(*type);
    if (!parsed) return InvalidRequest("Value for x-amz-checksum-type header is invalid.");
    t = *parsed;
  }
  if (!ChecksumTypeAllowed(*a, t)) {
    return InvalidRequest("The " + std::string(ChecksumTypeName(t)) + " checksum type cannot be used with the " +
                          Lower(ChecksumName(*a)) + " checksum algorithm.");
  }
  // s3:// keeps no part checksums but passes the algorithm on to its upstream.
  const object::StoreCapabilities caps = store.Capabilities();
  if (!caps.checksums_kept && !caps.metadata_kept) return Status::Ok();
  m->checksum_algorithm = std::string(ChecksumName(*a));
  m->checksum_type = std::string(ChecksumTypeName(t));
  return Status::Ok();
}

Status CheckCompleteChecksums(const Ctx& ctx, object::ObjectStore& store, const std::string& upload_id,
                              const std::vector<net::S3CompletedPart>& wire_parts) {
  bool any_part = std::any_of(wire_parts.begin(), wire_parts.end(),
                              [](const net::S3CompletedPart& p) { return !p.checksum.algorithm.empty(); });
  STRATA_ASSIGN_OR_RETURN(RequestChecksum whole, ReadRequestChecksum(ctx, /*multipart=*/true));
  // A store that keeps no part checksums (s3://) has nothing to check them against.
  if ((!any_part && !whole.algorithm) || !store.Capabilities().checksums_kept) return Status::Ok();
  auto listed = store.ListParts(ctx.target.key, upload_id);
  if (!listed.ok()) return Status::Ok();  // Complete itself reports the missing upload
  std::vector<object::PartInfo> chosen;
  for (const net::S3CompletedPart& wp : wire_parts) {
    auto it = std::find_if(listed->begin(), listed->end(),
                           [&](const object::PartInfo& p) { return p.part_number == wp.part_number; });
    if (it == listed->end()) continue;  // Complete answers InvalidPart
    if (!wp.checksum.algorithm.empty() &&
        (wp.checksum.algorithm != it->checksum.algorithm || wp.checksum.value != it->checksum.value)) {
      return S3Error(Code::kInvalidArgument, "InvalidPart",
                     "One or more of the specified parts could not be found. The part may not have been uploaded, "
                     "or the specified checksum may not have matched the part's checksum (part " +
                         std::to_string(wp.part_number) + ").");
    }
    chosen.push_back(*it);
  }
  if (!whole.algorithm) return Status::Ok();
  // The whole object's checksum sent with Complete: combined from the parts as S3 does.
  object::ObjectMetadata m;
  m.checksum_algorithm = std::string(ChecksumName(*whole.algorithm));
  const std::string* type = ctx.Header("x-amz-checksum-type");
  if (type) {
    if (!ParseChecksumType(*type)) return InvalidRequest("Value for x-amz-checksum-type header is invalid.");
    m.checksum_type = *type;
  } else {
    // SDKs send FULL_OBJECT values this way; a "-N" value, or a SHA, can only be composite.
    bool composite = whole.value.find('-') != std::string::npos || !IsCrc(*whole.algorithm);
    m.checksum_type = std::string(ChecksumTypeName(composite ? ChecksumType::kComposite : ChecksumType::kFullObject));
  }
  object::CompleteChecksum(&m, chosen);
  if (m.checksum.empty()) {
    return InvalidRequest("The upload's parts do not all carry a " + std::string(ChecksumName(*whole.algorithm)) +
                          " checksum, so the object's cannot be checked");
  }
  if (m.checksum != whole.value) {
    return S3Error(
        Code::kCorruption, "BadDigest",
        "The " + std::string(ChecksumName(*whole.algorithm)) + " you specified did not match the calculated checksum.");
  }
  return Status::Ok();
}

}  // namespace strata::gateway
