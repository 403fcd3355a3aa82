// Byte ranges in an S3 upstream's answers: what GetObject/HeadObject
// ?partNumber=N says about the part, and whether a ranged GET's answer is the
// range asked for. Internal to object/ (the s3:// store).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "net/http.h"
#include "net/http_client.h"
#include "object/object_store.h"

namespace strata::object {

// The part `part_number` a successful HEAD ?partNumber= answer (`status`,
// `headers`) describes. 206: Content-Range is the part (within the object)
// and x-amz-mp-parts-count, when present, the object's part count. 200
// without Content-Range: the whole object, one part, unless
// x-amz-mp-parts-count names more (a one-part multipart object). An upstream
// that ignores partNumber (Ceph RGW 16.2) answers every N with the whole
// object and no count: that is part 1 of a single-part object and
// OutOfRange (InvalidPartNumber) for any other N, as S3 answers for a single
// PUT. Corruption for a malformed or inconsistent answer.
Result<PartRange> PartRangeFromHeaders(int status, const net::HttpHeaders& headers, int part_number);

// The sizes of the parts a CompleteMultipartUpload names, in its order, from
// a ListParts taken before it; empty unless every part is listed with the
// same ETag and the sizes add up to the completed object's `size`.
std::vector<uint64_t> CompletedPartSizes(const std::vector<PartInfo>& listed, const std::vector<CompletedPart>& parts,
                                         uint64_t size);

// Checks a 206 answer against the range asked for: [first, last_max] (or the
// last `suffix` bytes), filling *out. Data from a mismatching range is never returned.
Status CheckContentRange(const net::HttpResponse& r, uint64_t first, uint64_t last_max, std::optional<uint64_t> suffix,
                         net::ContentRange* out);

// A 206 for an object of zero bytes ("bytes 0-0/0" from s3rver, with a
// Content-Length its body never fills) is treated like S3's 416.
Status RejectEmptyObjectRange(int status, const net::HttpHeaders& headers);

}  // namespace strata::object
