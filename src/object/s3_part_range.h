// GetObject/HeadObject ?partNumber=N against an S3 upstream: what its answer
// says about the part. Internal to object/ (the s3:// store).
#pragma once

#include <cstdint>
#include <vector>

#include "net/http.h"
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

}  // namespace strata::object
