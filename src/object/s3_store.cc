#include "object/s3_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "base/executor.h"
#include "base/hash.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "net/http.h"
#include "net/s3_errors.h"
#include "net/s3_xml.h"
#include "net/uri.h"
#include "object/completed_uploads.h"
#include "object/part_reader.h"
#include "object/s3_metadata.h"
#include "object/s3_part_range.h"
#include "object/s3_request.h"
#include "object/transfer.h"

namespace strata::object {
namespace {

constexpr int kMaxParts = 10000;
constexpr int kChangedRetries = 3;  // restarts of a parallel GET whose object changed under it

std::string QuoteEtag(std::string_view etag) {
  if (etag == "*" || (!etag.empty() && etag.front() == '"')) return std::string(etag);
  return "\"" + std::string(etag) + "\"";
}

bool LooksLikeMd5(std::string_view etag) {
  return etag.size() == 32 && std::all_of(etag.begin(), etag.end(), [](char c) { return std::isxdigit(c); });
}

ObjectInfo InfoFromHeaders(const net::HttpResponse& resp, std::string key, uint64_t size) {
  ObjectInfo info;
  info.metadata = S3MetadataFromHeaders(resp.headers);
  info.key = std::move(key);
  info.size = size;
  info.etag = UnquoteEtag(resp.Header("ETag").value_or(""));
  if (auto lm = resp.Header("Last-Modified")) {
    auto t = net::ParseHttpDate(*lm);
    if (t.ok()) info.mtime = *t;
  }
  return info;
}

Result<uint64_t> ContentLength(const net::HttpResponse& resp, std::string_view what) {
  auto cl = resp.Header("Content-Length");
  uint64_t n = 0;
  if (!cl || cl->empty() || cl->size() > 19 ||
      !std::all_of(cl->begin(), cl->end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return CorruptionError(std::string(what) + ": response without a valid Content-Length");
  }
  n = std::stoull(*cl);
  return n;
}

void AddGetConditions(net::HttpHeaders& h, const GetOptions& o) {
  if (!o.if_match.empty()) h.emplace_back("If-Match", QuoteEtag(o.if_match));
  if (!o.if_none_match.empty()) h.emplace_back("If-None-Match", QuoteEtag(o.if_none_match));
  if (o.if_modified_since) h.emplace_back("If-Modified-Since", net::FormatHttpDate(*o.if_modified_since));
  if (o.if_unmodified_since) h.emplace_back("If-Unmodified-Since", net::FormatHttpDate(*o.if_unmodified_since));
}

// S3 may answer 200 with an <Error> body for Complete and Copy.
Status ErrorInOkBody(const net::HttpResponse& resp, std::string_view resource) {
  std::string_view body = resp.body.view();
  if (body.find("<Error>") == std::string_view::npos) return Status::Ok();
  auto err = net::DecodeS3Error(body);
  std::string code = err.ok() ? err->code : "InternalError";
  return net::StatusFromS3Error(code == "InternalError" || code == "SlowDown" ? 500 : 400, code,
                                err.ok() ? err->message : "", resource);
}

S3Call MakeCall(std::string op, std::string method, std::optional<std::string> key,
                std::vector<std::pair<std::string, std::string>> query = {}, Buffer body = {}) {
  S3Call call;
  call.op = std::move(op);
  call.method = std::move(method);
  call.key = std::move(key);
  call.query = std::move(query);
  call.body = std::move(body);
  return call;
}

class S3Store : public ObjectStore, public PartStreamer {
 public:
  explicit S3Store(std::unique_ptr<S3Requester> r) : r_(std::move(r)) {}

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Result<ListResult> List(const ListOptions& options) override;
  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override;
  Status Delete(std::string_view key) override;
  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override;
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                 const PartOptions& options) override;
  Result<std::string> UploadPartFrom(std::string_view key, std::string_view upload_id, int part_number,
                                     const PartReader& source, const PartOptions& options) override;
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts,
                                             const CompleteOptions& options) override;
  // This store's completions (in memory): the upstream keeps its own.
  Result<std::optional<ObjectInfo>> FindCompletedUpload(std::string_view key, std::string_view upload_id,
                                                        const std::vector<CompletedPart>& parts) override {
    auto done = completed_.Find(upload_id);
    if (!done) return std::optional<ObjectInfo>();
    STRATA_ASSIGN_OR_RETURN(ObjectInfo info, AnswerCompleted(*done, key, upload_id, parts));
    return std::optional<ObjectInfo>(std::move(info));
  }
  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix) override;
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) override;
  Result<PartRange> GetPartRange(std::string_view key, std::string_view etag, int part_number) override;
  std::string Url() const override { return S3ConfigUrl(r_->config()); }
  StoreCapabilities Capabilities() const override {
    StoreCapabilities caps;
    caps.server_side_copy = true;
    caps.range_streaming = true;
    caps.metadata_kept = true;
    caps.read_part_size = r_->config().part_size;
    return caps;
  }
  Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                     const RangeConsumer& consume) override;

 private:
  Result<GetResult> GetAttempt(std::string_view key, const GetOptions& options, bool* changed);
  Result<GetResult> GetSuffix(std::string_view key, const GetOptions& options);
  Result<GetResult> GetEmptyRange(std::string_view key, const GetOptions& options);
  Result<GetResult> GetWhole(std::string_view key, const GetOptions& options);
  Status FetchChunks(const std::string& full, const std::string& etag, uint64_t from, uint64_t to, uint8_t* dst);
  // One ranged GET of [offset, offset + length), pinned to `etag` when set,
  // its body into `sink` (capacity is set here).
  Status FetchRange(const std::string& full, std::string_view etag, uint64_t offset, uint64_t length,
                    net::BodySink sink);
  Result<ObjectInfo> PutSingle(std::string_view key, Buffer data, const PutOptions& options);
  Result<ObjectInfo> PutMultipart(std::string_view key, Buffer data, const PutOptions& options);
  // key is store-relative; `what` names the operation for messages.
  Result<std::string> DoUploadPart(const std::string& full, std::string_view upload_id, int part_number,
                                   const Buffer& data, const PartChecksumInfo& checksum);

  const S3Config& cfg() const { return r_->config(); }
  // Continuation tokens are the server's, wrapped with a checksum bound to
  // this store, so a garbage or foreign token is InvalidArgument here (RGW
  // would silently accept it as a start key; s3rver fails with a 500).
  std::string WrapToken(const std::string& raw) const;
  Result<std::string> UnwrapToken(std::string_view token) const;

  std::unique_ptr<S3Requester> r_;
  Mutex mu_;
  std::map<std::string, PutOptions, std::less<>> upload_conditions_ GUARDED_BY(mu_);  // by upload id, sent on Complete
  CompletedUploads completed_;
};

Result<GetResult> S3Store::Get(std::string_view key, const GetOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  if (options.range && options.range->suffix) return GetSuffix(key, options);
  if (options.range && options.range->length && *options.range->length == 0) return GetEmptyRange(key, options);
  for (int i = 0;; ++i) {
    bool changed = false;
    auto r = GetAttempt(key, options, &changed);
    if (r.ok() || !changed || i + 1 >= kChangedRetries) return r;
  }
}

// HTTP cannot ask for zero bytes; answer from a HEAD with the same checks.
Result<GetResult> S3Store::GetEmptyRange(std::string_view key, const GetOptions& options) {
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, Head(key));
  uint64_t begin = 0, end = 0;
  STRATA_RETURN_IF_ERROR(ResolveRange(options.range, info.size, &begin, &end));
  if (!options.if_match.empty() && options.if_match != "*" && UnquoteEtag(options.if_match) != info.etag) {
    return PreconditionFailedError("If-Match failed for " + r_->Resource(r_->FullKey(key)));
  }
  return GetResult{info, begin, Buffer()};
}

// Without Range: for empty objects, where S3 refuses every range (416) and
// s3rver answers a bogus "bytes 0-0/0" with a body it never sends.
Result<GetResult> S3Store::GetWhole(std::string_view key, const GetOptions& options) {
  S3Call whole = MakeCall("GetObject", "GET", r_->FullKey(key));
  AddGetConditions(whole.headers, options);
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(whole));
  uint64_t b = 0, e = 0;
  STRATA_RETURN_IF_ERROR(ResolveRange(options.range, resp.body.size(), &b, &e));
  return GetResult{InfoFromHeaders(resp, std::string(key), resp.body.size()), b, resp.body.Slice(b, e - b)};
}

Result<GetResult> S3Store::GetSuffix(std::string_view key, const GetOptions& options) {
  std::string full = r_->FullKey(key);
  uint64_t n = *options.range->suffix;
  if (n == 0) return OutOfRangeError("suffix range of zero bytes for " + r_->Resource(full));
  S3Call call = MakeCall("GetObject", "GET", full);
  call.headers.emplace_back("Range", "bytes=-" + std::to_string(n));
  AddGetConditions(call.headers, options);
  net::ContentRange cr;
  call.validate = [&](const net::HttpResponse& r) {
    return r.status == 206 ? CheckContentRange(r, 0, 0, n, &cr) : Status::Ok();
  };
  call.on_headers = RejectEmptyObjectRange;
  auto result = r_->Execute(call);
  if (!result.ok() && result.status().code() == Code::kOutOfRange) return GetWhole(key, options);
  if (!result.ok()) return result.status();
  net::HttpResponse& resp = *result;
  if (resp.status == 206) {
    return GetResult{InfoFromHeaders(resp, std::string(key), *cr.total), cr.first, resp.body};
  }
  uint64_t size = resp.body.size(), begin = 0, end = 0;  // the whole object: slice it here
  STRATA_RETURN_IF_ERROR(ResolveRange(options.range, size, &begin, &end));
  return GetResult{InfoFromHeaders(resp, std::string(key), size), begin, resp.body.Slice(begin, end - begin)};
}

Result<GetResult> S3Store::GetAttempt(std::string_view key, const GetOptions& options, bool* changed) {
  std::string full = r_->FullKey(key);
  uint64_t begin = options.range ? options.range->offset : 0;
  // UINT64_MAX: to the end. Clamped so begin + want cannot overflow.
  uint64_t want = options.range && options.range->length ? *options.range->length : UINT64_MAX;
  want = std::min(want, UINT64_MAX - begin);
  // A small explicit range is fetched at once; anything else starts with one
  // part, whose Content-Range tells the size and the ETag to pin.
  bool small = want <= cfg().parallel_get_threshold;
  uint64_t first_len = small ? want : std::min<uint64_t>(want, cfg().part_size);
  uint64_t last_max = begin + first_len - 1;
  S3Call call = MakeCall("GetObject", "GET", full);
  call.headers.emplace_back("Range", "bytes=" + std::to_string(begin) + "-" + std::to_string(last_max));
  AddGetConditions(call.headers, options);
  net::ContentRange cr;
  call.validate = [&](const net::HttpResponse& r) {
    return r.status == 206 ? CheckContentRange(r, begin, last_max, std::nullopt, &cr) : Status::Ok();
  };
  call.on_headers = RejectEmptyObjectRange;
  auto probe = r_->Execute(call);
  // S3 refuses any range on an empty object; fetch it whole.
  if (!probe.ok() && probe.status().code() == Code::kOutOfRange && begin == 0) return GetWhole(key, options);
  if (!probe.ok()) return probe.status();
  net::HttpResponse& resp = *probe;
  if (resp.status != 206) {  // the server ignored Range and sent everything
    uint64_t b = 0, e = 0;
    STRATA_RETURN_IF_ERROR(ResolveRange(options.range, resp.body.size(), &b, &e));
    return GetResult{InfoFromHeaders(resp, std::string(key), resp.body.size()), b, resp.body.Slice(b, e - b)};
  }
  ObjectInfo info = InfoFromHeaders(resp, std::string(key), *cr.total);
  uint64_t end = std::min(*cr.total, begin + want);
  if (cr.last + 1 >= end) return GetResult{info, begin, resp.body};
  if (info.etag.empty()) {
    return NotSupportedError("server sent no ETag for " + r_->Resource(full) + "; cannot pin a parallel read");
  }
  MutableBuffer buf(end - begin);
  std::memcpy(buf.data(), resp.body.data(), resp.body.size());
  Status s = FetchChunks(full, info.etag, cr.last + 1, end, buf.data() + (cr.last + 1 - begin));
  if (!s.ok()) {
    // The ETag pin failed: the object was replaced mid-read. Start over unless
    // the caller pinned it themselves.
    *changed = s.code() == Code::kPreconditionFailed && options.if_match.empty();
    return s;
  }
  return GetResult{info, begin, std::move(buf).Freeze()};
}

// The headers of a ranged part read, checked before any body byte is
// accepted (a streamed body cannot be taken back): 206 with exactly the
// requested range, and the pinned ETag when the server names one (so a server
// that ignores If-Match still cannot mix two versions).
Status CheckPartHeaders(int status, const net::HttpHeaders& headers, std::string_view etag, uint64_t offset,
                        uint64_t length) {
  if (status < 200 || status >= 300) return Status::Ok();  // an error answer: mapped by the requester
  if (status != 206) return Status(Code::kCorruption, "expected 206 for a ranged part read", "", true);
  const std::string* header = net::FindHeader(headers, "Content-Range");
  auto cr = header ? net::ParseContentRange(*header) : Result<net::ContentRange>(CorruptionError("missing"));
  if (!cr.ok() || cr->unsatisfied || cr->first != offset || cr->last != offset + length - 1 || !cr->total ||
      *cr->total < offset + length) {
    return Status(Code::kCorruption,
                  "server answered Content-Range '" + (header ? *header : std::string()) + "' for bytes " +
                      std::to_string(offset) + "-" + std::to_string(offset + length - 1),
                  "ContentRangeMismatch", true);
  }
  const std::string* got_etag = net::FindHeader(headers, "ETag");
  if (!etag.empty() && got_etag && UnquoteEtag(*got_etag) != UnquoteEtag(etag)) {
    return PreconditionFailedError("the object changed during a pinned read (ETag " + *got_etag + ", expected " +
                                   std::string(etag) + ")")
        .WithForeignCode("PreconditionFailed");
  }
  return Status::Ok();
}

Status S3Store::FetchRange(const std::string& full, std::string_view etag, uint64_t offset, uint64_t length,
                           net::BodySink sink) {
  S3Call call = MakeCall("GetObject", "GET", full);
  call.headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1));
  if (!etag.empty()) call.headers.emplace_back("If-Match", QuoteEtag(etag));
  sink.capacity = length;
  call.sink = std::move(sink);
  call.on_headers = [etag, offset, length](int status, const net::HttpHeaders& headers) {
    return CheckPartHeaders(status, headers, etag, offset, length);
  };
  call.validate = [length](const net::HttpResponse& r) -> Status {
    if (r.status != 206 || r.body_bytes != length || !r.sunk) {
      return Status(Code::kCorruption, "short ranged part", "", true);
    }
    return Status::Ok();
  };
  return r_->Execute(call).status();
}

Status S3Store::ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                            const RangeConsumer& consume) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  if (length == 0) return Status::Ok();
  if (offset > UINT64_MAX - length) return InvalidArgumentError("range past 2^64 for " + r_->Resource(key));
  net::BodySink sink;
  sink.write = [&consume, offset](uint64_t at, const uint8_t* data, size_t n) { return consume(offset + at, data, n); };
  return FetchRange(r_->FullKey(key), etag, offset, length, std::move(sink));
}

Status S3Store::FetchChunks(const std::string& full, const std::string& etag, uint64_t from, uint64_t to,
                            uint8_t* dst) {
  const uint64_t part = cfg().part_size;
  const size_t n = static_cast<size_t>((to - from + part - 1) / part);
  std::mutex mu;
  Status first_error;
  std::atomic<bool> failed{false};
  ParallelFor(n, static_cast<size_t>(cfg().concurrency), [&](size_t i) {
    if (failed.load()) return;
    uint64_t off = from + i * part;
    uint64_t len = std::min(part, to - off);
    net::BodySink sink;
    sink.data = dst + (off - from);
    Status st = FetchRange(full, etag, off, len, std::move(sink));
    if (!st.ok()) {
      std::lock_guard lock(mu);
      if (first_error.ok()) first_error = st;
      failed = true;
    }
  });
  return first_error;
}

std::string S3Store::WrapToken(const std::string& raw) const {
  uint32_t crc = Crc32c(cfg().bucket + "/" + cfg().prefix + "\n" + raw);
  return "s3." + ToHex(&crc, sizeof(crc)) + "." + Base64Encode(raw.data(), raw.size());
}

Result<std::string> S3Store::UnwrapToken(std::string_view token) const {
  auto bad = [&] {
    return InvalidArgumentError("bad continuation token for s3://" + cfg().bucket + "/" + cfg().prefix +
                                " (tokens come from a previous List of the same store)");
  };
  if (token.size() < 12 || token.substr(0, 3) != "s3." || token[11] != '.') return bad();
  std::string raw;
  if (!Base64Decode(token.substr(12), &raw)) return bad();
  if (WrapToken(raw) != token) return bad();
  return raw;
}

Result<ObjectInfo> S3Store::Head(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  std::string full = r_->FullKey(key);
  S3Call call = MakeCall("HeadObject", "HEAD", full);
  call.headers.emplace_back("x-amz-checksum-mode", "ENABLED");  // an upstream that keeps checksums names them
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, ContentLength(resp, "HEAD " + r_->Resource(full)));
  return InfoFromHeaders(resp, std::string(key), size);
}

// HEAD ?partNumber=N, pinned with If-Match; the upstream knows the parts.
Result<PartRange> S3Store::GetPartRange(std::string_view key, std::string_view etag, int part_number) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  if (part_number < 1 || part_number > kMaxParts) {
    return InvalidArgumentError("part number " + std::to_string(part_number) + " is not in 1..10000");
  }
  std::string full = r_->FullKey(key);
  S3Call call = MakeCall("HeadObject", "HEAD", full, {{"partNumber", std::to_string(part_number)}});
  if (!etag.empty()) call.headers.emplace_back("If-Match", QuoteEtag(etag));
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
  auto r = PartRangeFromHeaders(resp.status, resp.headers, part_number);
  if (!r.ok() && r.status().code() == Code::kCorruption) {
    return Status(Code::kCorruption, r.status().message() + " (" + r_->Resource(full) + ")", "InvalidPartAnswer");
  }
  if (r.ok() && !etag.empty() && !r->etag.empty() && r->etag != UnquoteEtag(etag)) {
    return PreconditionFailedError(r_->Resource(full) + " changed (ETag " + r->etag + ")");
  }
  return r;
}

Result<ListResult> S3Store::List(const ListOptions& options) {
  if (options.max_keys < 1) {
    return InvalidArgumentError("max_keys must be at least 1, got " + std::to_string(options.max_keys));
  }
  const std::string& base = cfg().prefix;
  S3Call call = MakeCall("ListObjectsV2", "GET", std::nullopt);
  call.query.emplace_back("list-type", "2");
  call.query.emplace_back("encoding-type", "url");
  call.query.emplace_back("max-keys", std::to_string(std::min(options.max_keys, 1000)));
  if (!base.empty() || !options.prefix.empty()) call.query.emplace_back("prefix", base + options.prefix);
  if (!options.delimiter.empty()) call.query.emplace_back("delimiter", options.delimiter);
  if (!options.start_after.empty()) call.query.emplace_back("start-after", base + options.start_after);
  if (!options.continuation_token.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::string raw, UnwrapToken(options.continuation_token));
    call.query.emplace_back("continuation-token", raw);
  }
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
  auto decoded = net::DecodeListObjectsV2(resp.body.view());
  if (!decoded.ok()) return decoded.status().WithContext("ListObjectsV2 s3://" + cfg().bucket);
  ListResult out;
  for (auto& e : decoded->contents) {
    if (e.key.compare(0, base.size(), base) != 0 || e.key.size() == base.size()) continue;
    out.objects.push_back(ObjectInfo{e.key.substr(base.size()), e.size, UnquoteEtag(e.etag), e.last_modified, {}, {}});
  }
  for (auto& p : decoded->common_prefixes) {
    if (p.compare(0, base.size(), base) != 0) continue;
    out.common_prefixes.push_back(p.substr(base.size()));
  }
  out.truncated = decoded->is_truncated;
  if (decoded->is_truncated) out.next_continuation_token = WrapToken(decoded->next_continuation_token);
  if (out.truncated && out.next_continuation_token.empty()) {
    return CorruptionError("ListObjectsV2 s3://" + cfg().bucket + ": truncated without a continuation token");
  }
  return out;
}

Result<ObjectInfo> S3Store::Put(std::string_view key, Buffer data, const PutOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  STRATA_RETURN_IF_ERROR(ValidateMetadata(options.metadata));
  bool conditional = !options.if_match.empty() || options.if_none_match;
  // Conditions go on a single PUT (S3 checks them atomically there).
  if (data.size() > cfg().part_size && !conditional) return PutMultipart(key, std::move(data), options);
  return PutSingle(key, std::move(data), options);
}

Result<ObjectInfo> S3Store::PutSingle(std::string_view key, Buffer data, const PutOptions& options) {
  std::string full = r_->FullKey(key);
  std::string md5 = ToHex(Md5(data.data(), data.size()));
  S3Call call = MakeCall("PutObject", "PUT", full, {}, data);
  call.headers.emplace_back("Content-MD5", Base64Encode(Md5(data.data(), data.size())));
  AddS3MetadataHeaders(call.headers, options.metadata);
  const ObjectMetadata& m = options.metadata;
  AddS3ChecksumHeaders(call.headers, m.checksum_algorithm, "", m.checksum);  // the upstream verifies it too
  if (!options.if_match.empty()) call.headers.emplace_back("If-Match", QuoteEtag(options.if_match));
  if (options.if_none_match) call.headers.emplace_back("If-None-Match", "*");
  call.validate = [&](const net::HttpResponse& r) -> Status {
    std::string etag = UnquoteEtag(r.Header("ETag").value_or(""));
    if (LooksLikeMd5(etag) && etag != md5) {
      return Status(Code::kCorruption, "server ETag " + etag + " differs from the MD5 " + md5 + " of the bytes sent",
                    {}, true)
          .WithForeignCode("BadDigest");
    }
    return Status::Ok();
  };
  auto result = r_->Execute(call);
  if (!result.ok() && result.status().code() == Code::kPreconditionFailed && !options.if_match.empty()) {
    // Ceph RGW (16.x) compares a PUT's If-Match with the unquoted ETag, so a
    // correct quoted tag fails. When the current ETag does match, resend
    // unquoted: still a conditional PUT, so a concurrent change still fails.
    auto head = Head(key);
    if (head.ok() && head->etag == UnquoteEtag(options.if_match)) {
      net::SetHeader(call.headers, "If-Match", UnquoteEtag(options.if_match));
      result = r_->Execute(call);
    }
  }
  if (!result.ok()) return result.status();
  const net::HttpResponse& resp = *result;
  ObjectInfo info = InfoFromHeaders(resp, std::string(key), data.size());
  if (info.etag.empty()) info.etag = md5;
  if (info.mtime == WallTime{}) info.mtime = std::chrono::time_point_cast<std::chrono::seconds>(r_->clock().WallNow());
  info.metadata = options.metadata;  // a PUT answer carries none
  return info;
}

Result<ObjectInfo> S3Store::PutMultipart(std::string_view key, Buffer data, const PutOptions& options) {
  uint64_t part = cfg().part_size;
  if ((data.size() + part - 1) / part > kMaxParts) part = ((data.size() / kMaxParts >> 20) + 1) << 20;
  const size_t n = static_cast<size_t>((data.size() + part - 1) / part);
  STRATA_ASSIGN_OR_RETURN(std::string upload_id, CreateMultipartUpload(key, options));
  std::string full = r_->FullKey(key);
  std::vector<CompletedPart> parts(n);
  std::mutex mu;
  Status first_error;
  std::atomic<bool> failed{false};
  ParallelFor(n, static_cast<size_t>(cfg().concurrency), [&](size_t i) {
    if (failed.load()) return;
    auto etag = DoUploadPart(full, upload_id, static_cast<int>(i + 1), data.Slice(i * part, part), {});
    std::lock_guard lock(mu);
    if (etag.ok()) {
      parts[i] = CompletedPart{static_cast<int>(i + 1), *etag};
    } else if (first_error.ok()) {
      first_error = etag.status();
      failed = true;
    }
  });
  Result<ObjectInfo> done = first_error.ok() ? CompleteMultipartUpload(key, upload_id, parts, {}) : first_error;
  if (!done.ok()) {
    AbortMultipartUpload(key, upload_id).IgnoreError();  // best effort; the error that matters is `done`
    return done;
  }
  done->size = data.size();
  return done;
}

Status S3Store::Delete(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  S3Call call = MakeCall("DeleteObject", "DELETE", r_->FullKey(key));
  auto r = r_->Execute(call);
  if (!r.ok() && r.status().code() == Code::kNotFound && r.status().foreign_code() == "NoSuchKey") return Status::Ok();
  return r.status();
}

Result<std::string> S3Store::CreateMultipartUpload(std::string_view key, const PutOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  std::string full = r_->FullKey(key);
  STRATA_RETURN_IF_ERROR(ValidateMetadata(options.metadata));
  S3Call call = MakeCall("CreateMultipartUpload", "POST", full, {{"uploads", ""}});
  AddS3MetadataHeaders(call.headers, options.metadata);
  const ObjectMetadata& m = options.metadata;
  if (!m.checksum_algorithm.empty() && m.checksum.empty()) {  // the parts will carry checksums of it
    call.headers.emplace_back("x-amz-checksum-algorithm", m.checksum_algorithm);
    if (!m.checksum_type.empty()) call.headers.emplace_back("x-amz-checksum-type", m.checksum_type);
  }
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
  auto decoded = net::DecodeInitiateMultipartUpload(resp.body.view());
  if (!decoded.ok()) return decoded.status().WithContext("CreateMultipartUpload " + r_->Resource(full));
  if (decoded->upload_id.empty()) {
    return CorruptionError("CreateMultipartUpload " + r_->Resource(full) + ": no UploadId in the answer");
  }
  if (!options.if_match.empty() || options.if_none_match) {
    MutexLock lock(mu_);
    upload_conditions_[decoded->upload_id] = options;
  }
  return decoded->upload_id;
}

Result<std::string> S3Store::DoUploadPart(const std::string& full, std::string_view upload_id, int part_number,
                                          const Buffer& data, const PartChecksumInfo& checksum) {
  if (part_number < 1 || part_number > kMaxParts) {
    return InvalidArgumentError("part number " + std::to_string(part_number) + " for " + r_->Resource(full) +
                                " is outside 1..10000");
  }
  std::string md5 = ToHex(Md5(data.data(), data.size()));
  S3Call call = MakeCall("UploadPart", "PUT", full,
                         {{"partNumber", std::to_string(part_number)}, {"uploadId", std::string(upload_id)}}, data);
  call.headers.emplace_back("Content-MD5", Base64Encode(Md5(data.data(), data.size())));
  AddS3ChecksumHeaders(call.headers, checksum.algorithm, "", checksum.value);
  call.validate = [&](const net::HttpResponse& r) -> Status {
    std::string etag = UnquoteEtag(r.Header("ETag").value_or(""));
    if (etag.empty()) return Status(Code::kCorruption, "UploadPart answer without an ETag", "", true);
    if (LooksLikeMd5(etag) && etag != md5) {
      return Status(Code::kCorruption, "part ETag " + etag + " differs from the MD5 " + md5 + " sent", {}, true)
          .WithForeignCode("BadDigest");
    }
    return Status::Ok();
  };
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
  return UnquoteEtag(resp.Header("ETag").value_or(""));
}

Result<std::string> S3Store::UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                        const PartOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  return DoUploadPart(r_->FullKey(key), upload_id, part_number, data, options.checksum);
}

// The part streams from `source` to the upstream (signed with the SHA-256
// the caller computed, or UNSIGNED-PAYLOAD), checked against its MD5 if given.
Result<std::string> S3Store::UploadPartFrom(std::string_view key, std::string_view upload_id, int part_number,
                                            const PartReader& source, const PartOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  std::string full = r_->FullKey(key);
  if (part_number < 1 || part_number > kMaxParts) {
    return InvalidArgumentError("part number " + std::to_string(part_number) + " for " + r_->Resource(full) +
                                " is outside 1..10000");
  }
  S3Call call = MakeCall("UploadPart", "PUT", full,
                         {{"partNumber", std::to_string(part_number)}, {"uploadId", std::string(upload_id)}});
  call.read_body = source.read;
  call.body_size = source.size;
  call.body_sha256 = source.sha256_hex;
  AddS3ChecksumHeaders(call.headers, options.checksum.algorithm, "", options.checksum.value);
  std::string raw_md5;
  if (HexDecode(source.md5_hex, &raw_md5) && raw_md5.size() == 16) {
    call.headers.emplace_back("Content-MD5", Base64Encode(raw_md5.data(), raw_md5.size()));
  }
  call.validate = [&](const net::HttpResponse& r) -> Status {
    std::string etag = UnquoteEtag(r.Header("ETag").value_or(""));
    if (etag.empty()) return Status(Code::kCorruption, "UploadPart answer without an ETag", "", true);
    if (!source.md5_hex.empty() && LooksLikeMd5(etag) && etag != source.md5_hex) {
      return Status(Code::kCorruption, "part ETag " + etag + " differs from the MD5 " + source.md5_hex + " sent", {},
                    true)
          .WithForeignCode("BadDigest");
    }
    return Status::Ok();
  };
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
  return UnquoteEtag(resp.Header("ETag").value_or(""));
}

// The conditions and checksums go to the upstream, which checks them
// atomically with its commit (as far as it implements them).
Result<ObjectInfo> S3Store::CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                                    const std::vector<CompletedPart>& parts,
                                                    const CompleteOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  std::string full = r_->FullKey(key);
  if (parts.empty()) {
    return InvalidArgumentError("CompleteMultipartUpload " + r_->Resource(full) + ": no parts");
  }
  if (auto done = completed_.Find(upload_id)) return AnswerCompleted(*done, key, upload_id, parts);
  std::vector<net::S3CompletedPart> wire;
  for (size_t i = 0; i < parts.size(); ++i) {
    net::S3CompletedPart w{parts[i].part_number, QuoteEtag(parts[i].etag), {}};
    if (i < options.part_checksums.size()) {
      w.checksum.algorithm = options.part_checksums[i].algorithm;
      w.checksum.value = options.part_checksums[i].value;
    }
    wire.push_back(std::move(w));
  }
  // The part sizes go back with the answer (ObjectInfo::part_sizes) so the
  // cache can answer ?partNumber= where the upstream does not (RGW 16.2
  // ignores it). Best effort: without them, nothing else changes.
  auto listed = ListParts(key, upload_id);
  S3Call call = MakeCall("CompleteMultipartUpload", "POST", full, {{"uploadId", std::string(upload_id)}},
                         Buffer::FromString(net::EncodeCompleteMultipartUpload(wire)));
  call.headers.emplace_back("Content-Type", "application/xml");
  {
    MutexLock lock(mu_);
    auto it = upload_conditions_.find(upload_id);
    std::string if_match = options.if_match;
    bool if_none_match = options.if_none_match;
    if (it != upload_conditions_.end()) {
      if (if_match.empty()) if_match = it->second.if_match;
      if_none_match = if_none_match || it->second.if_none_match;
    }
    if (!if_match.empty()) call.headers.emplace_back("If-Match", QuoteEtag(if_match));
    if (if_none_match) call.headers.emplace_back("If-None-Match", "*");
  }
  AddS3ChecksumHeaders(call.headers, options.checksum.algorithm, options.checksum_type, options.checksum.value);
  std::string resource = r_->Resource(full);
  call.validate = [&](const net::HttpResponse& r) { return ErrorInOkBody(r, resource); };
  auto result = r_->Execute(call);
  if (!result.ok() && result.status().retryable()) {
    // Ceph RGW (16.x) answers 500 "completion already in progress" for an
    // unknown upload id; ask ListParts, which says NoSuchUpload plainly.
    S3Call probe = MakeCall("ListParts", "GET", full, {{"uploadId", std::string(upload_id)}, {"max-parts", "1"}});
    auto parts_answer = r_->Execute(probe);
    if (!parts_answer.ok() && parts_answer.status().code() == Code::kNotFound) return parts_answer.status();
  }
  if (!result.ok()) return result.status();
  const net::HttpResponse& resp = *result;
  {
    MutexLock lock(mu_);
    upload_conditions_.erase(std::string(upload_id));
  }
  auto decoded = net::DecodeCompleteMultipartUploadResult(resp.body.view());
  std::string etag = decoded.ok() ? UnquoteEtag(decoded->etag) : std::string();
  // RGW answers an empty <ETag>; the size is never in the answer: HEAD.
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, Head(key));
  if (!etag.empty()) info.etag = etag;
  if (listed.ok()) info.part_sizes = CompletedPartSizes(*listed, parts, info.size);
  completed_.Record(std::string(upload_id), CompletedWith(parts, info));
  return info;
}

Status S3Store::AbortMultipartUpload(std::string_view key, std::string_view upload_id) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  S3Call call = MakeCall("AbortMultipartUpload", "DELETE", r_->FullKey(key), {{"uploadId", std::string(upload_id)}});
  auto r = r_->Execute(call);
  MutexLock lock(mu_);
  upload_conditions_.erase(std::string(upload_id));
  return r.status();
}

Result<std::vector<PartInfo>> S3Store::ListParts(std::string_view key, std::string_view upload_id) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  std::string full = r_->FullKey(key);
  std::vector<PartInfo> out;
  int marker = 0;
  for (int page = 0; page < kMaxParts; ++page) {
    S3Call call = MakeCall("ListParts", "GET", full, {{"uploadId", std::string(upload_id)}});
    if (marker > 0) call.query.emplace_back("part-number-marker", std::to_string(marker));
    STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
    auto decoded = net::DecodeListParts(resp.body.view());
    if (!decoded.ok()) return decoded.status().WithContext("ListParts " + r_->Resource(full));
    for (const auto& p : decoded->parts)
      out.push_back(PartInfo{p.part_number, UnquoteEtag(p.etag), p.size, {p.checksum.algorithm, p.checksum.value}});
    if (!decoded->is_truncated) return out;
    if (decoded->next_part_number_marker <= marker) {
      return CorruptionError("ListParts " + r_->Resource(full) + ": truncated but the marker did not advance");
    }
    marker = decoded->next_part_number_marker;
  }
  return CorruptionError("ListParts " + r_->Resource(full) + ": too many pages");
}

Result<std::vector<UploadInfo>> S3Store::ListMultipartUploads(std::string_view prefix) {
  const std::string& base = cfg().prefix;
  std::vector<UploadInfo> out;
  std::string key_marker, id_marker;
  for (int page = 0; page < 100000; ++page) {
    S3Call call = MakeCall("ListMultipartUploads", "GET", std::nullopt, {{"uploads", ""}});
    if (!base.empty() || !prefix.empty()) call.query.emplace_back("prefix", base + std::string(prefix));
    if (!key_marker.empty()) call.query.emplace_back("key-marker", key_marker);
    if (!id_marker.empty()) call.query.emplace_back("upload-id-marker", id_marker);
    STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
    auto decoded = net::DecodeListMultipartUploads(resp.body.view());
    if (!decoded.ok()) return decoded.status().WithContext("ListMultipartUploads " + r_->Resource(base));
    for (auto& u : decoded->uploads) {
      if (u.key.compare(0, base.size(), base) != 0 || u.key.size() == base.size()) continue;
      out.push_back(UploadInfo{u.key.substr(base.size()), std::move(u.upload_id), u.initiated, {}, {}});
    }
    if (!decoded->is_truncated) return out;
    if (decoded->next_key_marker.empty() ||
        (decoded->next_key_marker == key_marker && decoded->next_upload_id_marker == id_marker)) {
      return CorruptionError("ListMultipartUploads: truncated but the marker did not advance");
    }
    key_marker = decoded->next_key_marker;
    id_marker = decoded->next_upload_id_marker;
  }
  return CorruptionError("ListMultipartUploads: too many pages");
}

Result<ObjectInfo> S3Store::Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateKey(src_key));
  STRATA_RETURN_IF_ERROR(ValidateKey(dst_key));
  STRATA_RETURN_IF_ERROR(ValidateMetadata(options.metadata));
  std::string src = r_->FullKey(src_key), dst = r_->FullKey(dst_key);
  S3Call call = MakeCall("CopyObject", "PUT", dst);
  call.headers.emplace_back("x-amz-copy-source", net::UriEncode(cfg().bucket) + "/" + net::UriEncode(src, false));
  if (options.directive == MetadataDirective::kReplace) {
    call.headers.emplace_back("x-amz-metadata-directive", "REPLACE");
    AddS3MetadataHeaders(call.headers, options.metadata);
  }
  std::string resource = r_->Resource(dst);
  call.validate = [&](const net::HttpResponse& r) { return ErrorInOkBody(r, resource); };
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
  auto decoded = net::DecodeCopyObjectResult(resp.body.view());
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, Head(dst_key));
  if (decoded.ok() && !decoded->etag.empty()) info.etag = UnquoteEtag(decoded->etag);
  return info;
}

}  // namespace

Result<ObjectStorePtr> OpenS3Store(const S3Config& config) {
  if (config.bucket.empty()) return InvalidArgumentError("S3 config has no bucket");
  STRATA_ASSIGN_OR_RETURN(auto requester, S3Requester::Create(config));
  return ObjectStorePtr(std::make_shared<S3Store>(std::move(requester)));
}

Result<ObjectStorePtr> OpenS3StoreFromUrl(std::string_view url) {
  STRATA_ASSIGN_OR_RETURN(S3Config config, S3ConfigFromUrl(url));
  return OpenS3Store(config);
}

}  // namespace strata::object
