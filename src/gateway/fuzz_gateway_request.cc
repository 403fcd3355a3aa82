// libFuzzer target: arbitrary bytes as an HTTP request (request line,
// headers, body) through the gateway's target parsing, SigV4 verification,
// aws-chunked decoding, XML bodies and S3 routing, over mem stores.
// Input: "METHOD TARGET\n" then "Name: value\n" lines, "\n", then the body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/buckets.h"
#include "gateway/s3_handler.h"
#include "object/mem_store.h"

namespace {

struct World {
  std::shared_ptr<strata::BlockCache> cache;
  std::unique_ptr<strata::BucketSet> buckets;
  std::unique_ptr<strata::S3Handler> anonymous, signed_only;
  World() {
    strata::CacheOptions co;
    co.block_size = 4096;
    co.ram_bytes = 1 << 20;
    cache = *strata::BlockCache::Open(co);
    strata::MemStoreOptions mo;
    mo.min_part_size = 1;
    buckets = strata::BucketSet::FromStores({{"bucket", strata::MakeMemStore("", mo)}}, cache);
    strata::S3HandlerOptions ho;
    ho.keys["AKID"] = "secret";
    ho.allow_anonymous = true;
    anonymous = std::make_unique<strata::S3Handler>(*buckets, ho);
    ho.allow_anonymous = false;
    signed_only = std::make_unique<strata::S3Handler>(*buckets, ho);
  }
};

std::string_view Line(std::string_view& in) {
  size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  strata::GatewayRequest req;
  std::string_view first = Line(in);
  size_t sp = first.find(' ');
  req.method = std::string(first.substr(0, sp));
  if (sp != std::string_view::npos) req.target = std::string(first.substr(sp + 1));
  for (int i = 0; i < 64 && !in.empty(); ++i) {
    std::string_view line = Line(in);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    req.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  req.body = strata::Buffer::Copy(in);
  (void)strata::ParseTarget(req.target);
  for (auto* handler : {world.anonymous.get(), world.signed_only.get()}) {
    (void)handler->PreCheck(req);
    strata::GatewayResponse r = handler->Handle(req);
    // Drain streamed bodies (bounded by the small mem objects).
    for (int i = 0; r.stream && i < 1024; ++i) {
      auto b = r.stream->Next();
      if (!b.ok() || b->empty()) break;
    }
  }
  return 0;
}
