// libFuzzer target: SigV4 verification on arbitrary Authorization headers,
// presigned query strings, dates and paths, and the aws-chunked decoder.
// Input: newline-separated fields: authorization, query, x-amz-date,
// x-amz-content-sha256, path; the rest is an aws-chunked body.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/sigv4.h"

namespace {

std::string_view NextField(std::string_view* in) {
  size_t nl = in->find('\n');
  std::string_view f = in->substr(0, nl);
  in->remove_prefix(nl == std::string_view::npos ? in->size() : nl + 1);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  using namespace strata::net;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  HttpRequestParts req;
  req.method = "GET";
  std::string_view authz = NextField(&in);
  req.query = std::string(NextField(&in));
  std::string_view date = NextField(&in);
  std::string_view sha = NextField(&in);
  req.path = std::string(NextField(&in));
  req.headers.emplace_back("Host", "127.0.0.1:9000");
  if (!authz.empty()) req.headers.emplace_back("Authorization", std::string(authz));
  if (!date.empty()) req.headers.emplace_back("x-amz-date", std::string(date));
  if (!sha.empty()) req.headers.emplace_back("x-amz-content-sha256", std::string(sha));
  SecretLookup lookup = [](std::string_view ak) -> std::optional<std::string> {
    if (ak == "AKIDEXAMPLE") return std::string("secret");
    return std::nullopt;
  };
  WallTime now = ParseAmzDate("20150830T123600Z").value_or(WallTime{});
  auto v = VerifyRequest(req, lookup, now);
  if (!v.ok() && v.status().code() != Code::kUnauthenticated && v.status().code() != Code::kInvalidArgument) {
    std::abort();
  }
  (void)CanonicalUri(req.path, true);
  (void)CanonicalQuery(req.query, true);

  // Chunk decoder, signed and unsigned, fed in two pieces.
  for (bool signed_chunks : {true, false}) {
    AwsChunkedOptions opts;
    opts.signed_chunks = signed_chunks;
    opts.max_chunk_size = 1 << 16;
    AwsChunkedDecoder d(std::string(32, 'k'), "20150830T123600Z", "20150830/us-east-1/s3/aws4_request",
                        std::string(64, '0'), opts);
    std::string out;
    size_t half = in.size() / 2;
    Status s = d.Feed(in.substr(0, half), &out);
    if (s.ok()) s = d.Feed(in.substr(half), &out);
    if (s.ok()) s = d.Finish();
    if (out.size() > in.size()) std::abort();
  }
  return 0;
}
