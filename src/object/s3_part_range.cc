#include "object/s3_part_range.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>

#include "object/s3_request.h"

namespace strata::object {
namespace {

// A decimal of 1..19 digits (no sign, no spaces).
bool ParseDecimal(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

Status Malformed(const std::string& what) {
  return CorruptionError("HEAD ?partNumber= answer: " + what, "InvalidPartAnswer");
}

}  // namespace

Result<PartRange> PartRangeFromHeaders(int status, const net::HttpHeaders& headers, int part_number) {
  if (part_number < 1 || part_number > 10000) {
    return InvalidArgumentError("part number " + std::to_string(part_number) + " is not in 1..10000");
  }
  if (status != 200 && status != 206) return Malformed("status " + std::to_string(status));
  PartRange r;
  const std::string* etag = net::FindHeader(headers, "ETag");
  if (etag) r.etag = UnquoteEtag(*etag);
  uint64_t content_length = 0;
  const std::string* cl = net::FindHeader(headers, "Content-Length");
  if (!cl || !ParseDecimal(*cl, &content_length)) {
    return Malformed("Content-Length '" + (cl ? *cl : std::string()) + "'");
  }
  if (const std::string* count = net::FindHeader(headers, "x-amz-mp-parts-count")) {
    uint64_t n = 0;
    if (!ParseDecimal(*count, &n) || n < 1 || n > 10000) return Malformed("x-amz-mp-parts-count '" + *count + "'");
    r.parts_count = static_cast<int>(n);
  }
  const std::string* range = net::FindHeader(headers, "Content-Range");
  if (range) {
    auto cr = net::ParseContentRange(*range);
    if (!cr.ok() || cr->unsatisfied || !cr->total || cr->last < cr->first || cr->last >= *cr->total ||
        cr->last - cr->first + 1 != content_length) {
      return Malformed("Content-Range '" + *range + "' with Content-Length " + std::to_string(content_length));
    }
    r.offset = cr->first;
    r.length = content_length;
    r.object_size = *cr->total;
  } else {
    if (status == 206) return Malformed("206 without Content-Range");
    r.offset = 0;
    r.length = content_length;
    r.object_size = content_length;
  }
  const bool whole = r.offset == 0 && r.length == r.object_size;
  if (r.parts_count == 0) {
    if (!whole) return Malformed("a part range without x-amz-mp-parts-count");
    if (part_number > 1) {
      return OutOfRangeError("the object has one part, not " + std::to_string(part_number))
          .WithForeignCode("InvalidPartNumber");
    }
    return r;
  }
  if (part_number > r.parts_count) {
    return Malformed("part " + std::to_string(part_number) + " of an object of " + std::to_string(r.parts_count) +
                     " parts");
  }
  return r;
}

std::vector<uint64_t> CompletedPartSizes(const std::vector<PartInfo>& listed, const std::vector<CompletedPart>& parts,
                                         uint64_t size) {
  std::map<int, const PartInfo*> by_number;
  for (const PartInfo& p : listed) by_number[p.part_number] = &p;
  std::vector<uint64_t> sizes;
  uint64_t sum = 0;
  for (const CompletedPart& c : parts) {
    auto it = by_number.find(c.part_number);
    if (it == by_number.end() || UnquoteEtag(it->second->etag) != UnquoteEtag(c.etag)) return {};
    if (it->second->size > size - sum) return {};
    sum += it->second->size;
    sizes.push_back(it->second->size);
  }
  if (sum != size) return {};
  return sizes;
}

Status CheckContentRange(const net::HttpResponse& r, uint64_t first, uint64_t last_max, std::optional<uint64_t> suffix,
                         net::ContentRange* out) {
  auto header = r.Header("Content-Range");
  if (!header) return CorruptionError("206 response without Content-Range");
  auto cr = net::ParseContentRange(*header);
  if (!cr.ok() || cr->unsatisfied || !cr->total) {
    return CorruptionError("bad Content-Range '" + *header + "'");
  }
  bool ok = r.body_bytes == cr->last - cr->first + 1;
  if (suffix) {
    uint64_t want = std::min(*suffix, *cr->total);
    ok = ok && cr->last + 1 == *cr->total && cr->last - cr->first + 1 == want;
  } else {
    ok = ok && cr->first == first && cr->last <= last_max;
  }
  if (!ok) {
    return CorruptionError("server answered Content-Range '" + *header + "' with " + std::to_string(r.body_bytes) +
                               " bytes for the requested range" +
                               (suffix ? " (last " + std::to_string(*suffix) + " bytes)"
                                       : " " + std::to_string(first) + "-" + std::to_string(last_max)),
                           "ContentRangeMismatch");
  }
  *out = *cr;
  return Status::Ok();
}

Status RejectEmptyObjectRange(int status, const net::HttpHeaders& headers) {
  if (status != 206) return Status::Ok();
  const std::string* cr = net::FindHeader(headers, "Content-Range");
  if (cr && cr->size() >= 2 && cr->substr(cr->size() - 2) == "/0") {
    return OutOfRangeError("ranged read of an empty object").WithForeignCode("InvalidRange");
  }
  return Status::Ok();
}

}  // namespace strata::object
