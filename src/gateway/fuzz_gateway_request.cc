// libFuzzer target: arbitrary bytes as an HTTP request (request line,
// headers, body) through the gateway's target parsing, SigV4 verification,
// aws-chunked decoding, XML bodies and S3 routing, over mem stores.
// Input: "METHOD TARGET\n" then "Name: value\n" lines, "\n", then the body.
// The clock is fixed (FakeClock: 2023-11-14T22:13:20Z), so seeds signed for
// that instant with AKID/secret verify. A "fuzz-sign:" header line (removed
// before serving) has the harness sign the request itself, so mutations of
// the headers, target and body still reach payload decoding and every
// operation handler: "header" (Authorization; payload hash from
// x-amz-content-sha256 if given, else the body's), "presign" (query form)
// or "chunked" (the body re-framed as signed aws-chunked pieces).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/hash.h"
#include "gateway/buckets.h"
#include "gateway/s3_handler.h"
#include "net/sigv4.h"
#include "object/mem_store.h"

namespace {

const strata::net::AwsCredentials kCreds{"AKID", "secret", ""};

struct World {
  strata::FakeClock clock;
  std::shared_ptr<strata::cache::BlockCache> cache;
  std::unique_ptr<strata::gateway::BucketSet> buckets;
  // An unrestricted key over a public_read bucket (anonymous reads reach the
  // operations), and the same key scoped by a grant to one prefix.
  std::unique_ptr<strata::gateway::S3Handler> open, scoped;
  World() {
    strata::cache::CacheOptions co;
    co.block_size = 4096;
    co.ram_bytes = 1 << 20;
    cache = *strata::cache::BlockCache::Open(co);
    strata::object::MemStoreOptions mo;
    mo.min_part_size = 1;
    buckets = strata::gateway::BucketSet::FromStores({{"bucket", strata::object::MakeMemStore("", mo)}}, cache);
    strata::gateway::S3HandlerOptions ho;
    ho.keys[kCreds.access_key_id] = kCreds.secret_access_key;
    ho.max_copy_bytes = 1 << 20;
    ho.clock = &clock;
    ho.access = strata::gateway::AccessPolicy({}, {{"bucket", {"", true}}});
    open = std::make_unique<strata::gateway::S3Handler>(*buckets, ho);
    strata::gateway::KeyAccess key;
    key.restricted = true;
    key.grants.push_back({"bucket", "a", strata::gateway::kPermRead | strata::gateway::kPermWrite});
    ho.access = strata::gateway::AccessPolicy({{kCreds.access_key_id, key}}, {});
    scoped = std::make_unique<strata::gateway::S3Handler>(*buckets, ho);
  }
};

std::string_view Line(std::string_view& in) {
  size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Signs `req` as a client would at the fixed instant (see the file comment).
void Sign(strata::gateway::GatewayRequest& req, std::string_view mode, strata::WallTime now) {
  size_t q = req.target.find('?');
  strata::net::HttpRequestParts p{req.method, req.target.substr(0, q),
                                  q == std::string::npos ? "" : req.target.substr(q + 1), req.headers};
  if (!strata::net::FindHeader(p.headers, "host")) p.headers.emplace_back("Host", "127.0.0.1");
  if (mode == "presign") {
    auto query = strata::net::PresignUrl(p, kCreds, "us-east-1", "s3", now, std::chrono::minutes(5));
    if (!query.ok()) return;
    req.target = p.path + "?" + *query;
    req.headers = p.headers;
    return;
  }
  if (mode == "chunked") {
    std::string payload(req.body.view());
    strata::net::SetHeader(p.headers, "x-amz-decoded-content-length", std::to_string(payload.size()));
    strata::net::SetHeader(p.headers, "content-encoding", "aws-chunked");
    if (!strata::net::SignRequest(p, kCreds, "us-east-1", "s3", now, strata::net::kStreamingPayload).ok()) return;
    auto v = strata::net::VerifyRequest(
        p, [](std::string_view) { return std::optional<std::string>(kCreds.secret_access_key); }, now);
    if (!v.ok()) return;
    std::string prev = v->seed_signature, wire;
    for (size_t off = 0; off < payload.size(); off += 64) {
      wire += strata::net::EncodeSignedChunk(v->signing_key, v->amz_date, v->scope, &prev,
                                             std::string_view(payload).substr(off, 64));
    }
    wire += strata::net::EncodeSignedChunk(v->signing_key, v->amz_date, v->scope, &prev, "");
    req.body = strata::Buffer::FromString(std::move(wire));
    req.headers = p.headers;
    return;
  }
  const std::string* claimed = strata::net::FindHeader(p.headers, "x-amz-content-sha256");
  std::string hash = claimed ? *claimed : strata::ToHex(strata::Sha256(req.body.data(), req.body.size()));
  if (strata::net::SignRequest(p, kCreds, "us-east-1", "s3", now, hash).ok()) req.headers = p.headers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  strata::gateway::GatewayRequest req;
  std::string_view first = Line(in);
  size_t sp = first.find(' ');
  req.method = std::string(first.substr(0, sp));
  if (sp != std::string_view::npos) req.target = std::string(first.substr(sp + 1));
  std::string sign_mode;
  for (int i = 0; i < 64 && !in.empty(); ++i) {
    std::string_view line = Line(in);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (line.substr(0, colon) == "fuzz-sign") {
      sign_mode = std::string(value);
      continue;
    }
    req.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  req.body = strata::Buffer::Copy(in);
  if (!sign_mode.empty()) Sign(req, sign_mode, world.clock.WallNow());
  (void)strata::gateway::ParseTarget(req.target);
  for (auto* handler : {world.open.get(), world.scoped.get()}) {
    strata::gateway::GatewayRequest copy = req;
    // As the server does: the pre-check decides authentication, Handle trusts it.
    if (handler->PreCheck(copy)) copy.auth.reset();
    strata::gateway::GatewayResponse r = handler->Handle(copy);
    // Handle's boundary turns an exception into a 500; for the fuzzer it is still a bug to report.
    if (handler->exceptions_caught() != 0) __builtin_trap();
    // Drain streamed bodies (bounded by the small mem objects).
    for (int i = 0; r.stream && i < 1024; ++i) {
      auto b = r.stream->Next();
      if (!b.ok() || b->empty()) break;
    }
  }
  return 0;
}
