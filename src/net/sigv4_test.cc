#include "net/sigv4.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/hash.h"
#include "base/random.h"

namespace strata::net {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

WallTime At(std::string_view amz_date) { return *ParseAmzDate(amz_date); }

// ---- The generic AWS SigV4 test suite (src/net/testdata/sigv4) ----

struct SuiteCase {
  std::string name;
  HttpRequestParts req;
  std::string body, creq, sts, authz;
};

// Parses a .req file: request line, "Name:value" headers, blank line, body.
HttpRequestParts ParseReq(const std::string& text, std::string* body) {
  HttpRequestParts req;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  req.method = line.substr(0, sp1);
  std::string uri = line.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t q = uri.find('?');
  req.path = uri.substr(0, q);
  if (q != std::string::npos) req.query = uri.substr(q + 1);
  while (std::getline(in, line) && !line.empty()) {
    size_t colon = line.find(':');
    req.headers.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  std::stringstream rest;
  rest << in.rdbuf();
  *body = rest.str();
  return req;
}

std::vector<SuiteCase> LoadSuite() {
  std::vector<SuiteCase> cases;
  for (const auto& entry : fs::recursive_directory_iterator(STRATA_NET_TESTDATA "/sigv4")) {
    if (entry.path().extension() != ".req") continue;
    fs::path base = entry.path();
    SuiteCase c;
    c.name = base.stem().string();
    c.req = ParseReq(ReadFile(base), &c.body);
    c.creq = ReadFile(fs::path(base).replace_extension(".creq"));
    c.sts = ReadFile(fs::path(base).replace_extension(".sts"));
    c.authz = ReadFile(fs::path(base).replace_extension(".authz"));
    cases.push_back(std::move(c));
  }
  return cases;
}

const AwsCredentials kSuiteCreds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const char kSuiteToken[] =
    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUu"
    "wthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcH"
    "NVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLx"
    "BA==";

TEST(SigV4Suite, AllVectorsSignAndVerify) {
  std::vector<SuiteCase> cases = LoadSuite();
  ASSERT_GE(cases.size(), 20u) << "test vectors missing under " STRATA_NET_TESTDATA;
  SecretLookup lookup = [](std::string_view ak) -> std::optional<std::string> {
    if (ak == kSuiteCreds.access_key_id) return kSuiteCreds.secret_access_key;
    return std::nullopt;
  };
  WallTime now = At("20150830T123600Z");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    SigV4Options opts;
    opts.normalize_path = true;
    opts.content_sha256_header = false;
    std::string payload = ToHex(Sha256(c.body));
    opts.verify_payload_sha256 = payload;
    EXPECT_EQ(CanonicalRequest(c.req, SignableHeaderNames(c.req.headers), payload, opts), c.creq);
    EXPECT_EQ(StringToSign("20150830T123600Z", CredentialScope("20150830", "us-east-1", "service"), c.creq), c.sts);

    HttpRequestParts signed_req = c.req;
    AwsCredentials creds = kSuiteCreds;
    if (FindHeader(c.req.headers, "x-amz-security-token")) creds.session_token = kSuiteToken;
    ASSERT_TRUE(SignRequest(signed_req, creds, "us-east-1", "service", now, payload, opts).ok());
    const std::string* authz = FindHeader(signed_req.headers, "authorization");
    ASSERT_NE(authz, nullptr);
    EXPECT_EQ(*authz, c.authz);

    auto v = VerifyRequest(signed_req, lookup, now, std::chrono::minutes(15), opts);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->access_key_id, "AKIDEXAMPLE");
    EXPECT_EQ(v->service, "service");

    HttpRequestParts tampered = signed_req;
    tampered.path += "x";
    auto t = VerifyRequest(tampered, lookup, now, std::chrono::minutes(15), opts);
    EXPECT_EQ(t.status().code(), Code::kUnauthenticated);
    EXPECT_EQ(t.status().foreign_code(), "SignatureDoesNotMatch");

    SigV4Options other_body = opts;
    other_body.verify_payload_sha256 = ToHex(Sha256(c.body + "!"));
    EXPECT_EQ(VerifyRequest(signed_req, lookup, now, std::chrono::minutes(15), other_body).status().foreign_code(),
              "SignatureDoesNotMatch");
  }
}

TEST(SigV4, CanonicalUriS3DoesNotNormalise) {
  EXPECT_EQ(CanonicalUri("/bucket/a/../b//c", false), "/bucket/a/../b//c");
  EXPECT_EQ(CanonicalUri("/bucket/a/../b//c", true), "/bucket/b/c");
  EXPECT_EQ(CanonicalUri("/bucket/my%20key+x", false), "/bucket/my%20key%2Bx");
  EXPECT_EQ(CanonicalUri("/test$file.text", false), "/test%24file.text");
  EXPECT_EQ(CanonicalUri("", false), "/");
  EXPECT_EQ(CanonicalUri("/bad%zzescape", false), "/bad%25zzescape");
}

TEST(SigV4, CanonicalQuerySortsAndReencodes) {
  EXPECT_EQ(CanonicalQuery("b=2&a=1&a=0&c"), "a=0&a=1&b=2&c=");
  EXPECT_EQ(CanonicalQuery("prefix=a%2fb&x=%7e"), "prefix=a%2Fb&x=~");
  EXPECT_EQ(CanonicalQuery("X-Amz-Signature=abc&a=1", true), "a=1");
  EXPECT_EQ(CanonicalQuery("&&a=1&"), "a=1");
}

// ---- S3 documentation examples ----

const AwsCredentials kS3Creds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
const std::string kEmpty(kEmptyPayloadSha256);

SecretLookup S3Lookup() {
  return [](std::string_view ak) -> std::optional<std::string> {
    if (ak == kS3Creds.access_key_id) return kS3Creds.secret_access_key;
    return std::nullopt;
  };
}

std::string SignatureOf(const HttpRequestParts& req) {
  const std::string* a = FindHeader(req.headers, "authorization");
  if (a == nullptr) return "";
  return a->substr(a->rfind('=') + 1);
}

HttpRequestParts GetObjectRange() {
  HttpRequestParts req{"GET", "/test.txt", "", {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}}};
  EXPECT_TRUE(SignRequest(req, kS3Creds, "us-east-1", "s3", At("20130524T000000Z"), kEmpty).ok());
  return req;
}

TEST(SigV4S3, GetObjectWithRange) {
  HttpRequestParts req = GetObjectRange();
  EXPECT_EQ(SignatureOf(req), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(*FindHeader(req.headers, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4S3, PutObject) {
  std::string body = "Welcome to Amazon S3.";
  HttpRequestParts req{"PUT",
                       "/test$file.text",
                       "",
                       {{"Host", "examplebucket.s3.amazonaws.com"},
                        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                        {"x-amz-storage-class", "REDUCED_REDUNDANCY"}}};
  ASSERT_TRUE(SignRequest(req, kS3Creds, "us-east-1", "s3", At("20130524T000000Z"), ToHex(Sha256(body))).ok());
  EXPECT_EQ(SignatureOf(req), "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  auto v = VerifyRequest(req, S3Lookup(), At("20130524T000500Z"));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(CheckPayloadSha256(*v, ToHex(Sha256(body))).ok());
  Status bad = CheckPayloadSha256(*v, ToHex(Sha256(body + "x")));
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.foreign_code(), "XAmzContentSHA256Mismatch");
}

TEST(SigV4S3, GetBucketLifecycleAndListObjects) {
  HttpRequestParts lifecycle{"GET", "/", "lifecycle", {{"Host", "examplebucket.s3.amazonaws.com"}}};
  ASSERT_TRUE(SignRequest(lifecycle, kS3Creds, "us-east-1", "s3", At("20130524T000000Z"), kEmpty).ok());
  EXPECT_EQ(SignatureOf(lifecycle), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
  HttpRequestParts list{"GET", "/", "max-keys=2&prefix=J", {{"Host", "examplebucket.s3.amazonaws.com"}}};
  ASSERT_TRUE(SignRequest(list, kS3Creds, "us-east-1", "s3", At("20130524T000000Z"), kEmpty).ok());
  EXPECT_EQ(SignatureOf(list), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
  EXPECT_TRUE(VerifyRequest(list, S3Lookup(), At("20130524T000000Z")).ok());
  list.query = "max-keys=3&prefix=J";
  EXPECT_EQ(VerifyRequest(list, S3Lookup(), At("20130524T000000Z")).status().foreign_code(), "SignatureDoesNotMatch");
}

TEST(SigV4S3, VerifyFailuresArePrecise) {
  WallTime now = At("20130524T000000Z");
  HttpRequestParts good = GetObjectRange();
  auto v = VerifyRequest(good, S3Lookup(), now);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->access_key_id, "AKIAIOSFODNN7EXAMPLE");
  EXPECT_EQ(v->payload_sha256, kEmpty);
  EXPECT_EQ(v->region, "us-east-1");
  EXPECT_EQ(v->seed_signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_FALSE(v->presigned);

  auto s3_code = [&](const HttpRequestParts& r, WallTime t = {}) {
    auto res = VerifyRequest(r, S3Lookup(), t == WallTime{} ? now : t);
    EXPECT_FALSE(res.ok());
    return res.status().foreign_code();
  };
  HttpRequestParts r = good;
  SetHeader(r.headers, "Range", "bytes=0-10");
  EXPECT_EQ(s3_code(r), "SignatureDoesNotMatch");
  r = good;
  SetHeader(r.headers, "X-Amz-Content-Sha256", ToHex(Sha256("x")));
  EXPECT_EQ(s3_code(r), "SignatureDoesNotMatch");
  r = good;
  r.method = "DELETE";
  EXPECT_EQ(s3_code(r), "SignatureDoesNotMatch");
  r = good;
  RemoveHeader(r.headers, "range");
  EXPECT_EQ(s3_code(r), "SignatureDoesNotMatch");
  EXPECT_EQ(s3_code(good, now + std::chrono::minutes(16)), "RequestTimeTooSkewed");
  EXPECT_EQ(s3_code(good, now - std::chrono::minutes(16)), "RequestTimeTooSkewed");
  EXPECT_TRUE(VerifyRequest(good, S3Lookup(), now + std::chrono::minutes(14)).ok());

  HttpRequestParts other = good;
  ASSERT_TRUE(SignRequest(other, {"AKIDUNKNOWN", "secret", ""}, "us-east-1", "s3", now, kEmpty).ok());
  EXPECT_EQ(s3_code(other), "InvalidAccessKeyId");
  HttpRequestParts wrong_secret = good;
  ASSERT_TRUE(
      SignRequest(wrong_secret, {kS3Creds.access_key_id, "not-the-secret", ""}, "us-east-1", "s3", now, kEmpty).ok());
  EXPECT_EQ(s3_code(wrong_secret), "SignatureDoesNotMatch");

  for (const char* authz :
       {"AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request",
        "AWS4-HMAC-SHA256 Credential=AK/2013/us-east-1/s3/aws4_request, SignedHeaders=host, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=range, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host, Signature=XYZ",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130525/us-east-1/s3/aws4_request, "
        "SignedHeaders=host, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"}) {
    SCOPED_TRACE(authz);
    r = good;
    SetHeader(r.headers, "Authorization", authz);
    EXPECT_EQ(s3_code(r), "AuthorizationHeaderMalformed");
  }
  r = good;
  RemoveHeader(r.headers, "authorization");
  EXPECT_EQ(s3_code(r), "AccessDenied");
  r = good;
  RemoveHeader(r.headers, "x-amz-content-sha256");
  auto missing = VerifyRequest(r, S3Lookup(), now);
  EXPECT_EQ(missing.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(missing.status().foreign_code(), "InvalidRequest");
}

TEST(SigV4S3, SignRequiresHost) {
  HttpRequestParts req{"GET", "/x", "", {}};
  EXPECT_EQ(SignRequest(req, kS3Creds, "us-east-1", "s3", At("20130524T000000Z"), kEmpty).code(),
            Code::kInvalidArgument);
}

TEST(SigV4S3, SessionTokenIsSignedAndVerified) {
  AwsCredentials creds = kS3Creds;
  creds.session_token = "token/with+chars==";
  HttpRequestParts req{"GET", "/bucket/key", "", {{"host", "127.0.0.1:9000"}}};
  WallTime now = At("20240101T101010Z");
  ASSERT_TRUE(SignRequest(req, creds, "us-east-1", "s3", now, kUnsignedPayload).ok());
  EXPECT_EQ(*FindHeader(req.headers, "x-amz-security-token"), creds.session_token);
  EXPECT_NE(FindHeader(req.headers, "authorization")->find("x-amz-security-token"), std::string::npos);
  ASSERT_TRUE(VerifyRequest(req, S3Lookup(), now).ok());
  SetHeader(req.headers, "x-amz-security-token", "other");
  EXPECT_EQ(VerifyRequest(req, S3Lookup(), now).status().foreign_code(), "SignatureDoesNotMatch");
}

// ---- Presigned URLs ----

TEST(SigV4Presign, AwsExampleAndVerification) {
  HttpRequestParts req{"GET", "/test.txt", "", {{"Host", "examplebucket.s3.amazonaws.com"}}};
  WallTime t0 = At("20130524T000000Z");
  auto q = PresignUrl(req, kS3Creds, "us-east-1", "s3", t0, std::chrono::hours(24));
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2F"
            "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature="
            "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
  HttpRequestParts incoming = req;
  incoming.query = *q;
  auto v = VerifyRequest(incoming, S3Lookup(), t0 + std::chrono::hours(23));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->presigned);
  EXPECT_EQ(v->payload_sha256, kUnsignedPayload);

  auto expired = VerifyRequest(incoming, S3Lookup(), t0 + std::chrono::hours(24) + std::chrono::seconds(1));
  EXPECT_EQ(expired.status().code(), Code::kUnauthenticated);
  EXPECT_EQ(expired.status().foreign_code(), "AccessDenied");
  EXPECT_EQ(VerifyRequest(incoming, S3Lookup(), t0 - std::chrono::hours(1)).status().foreign_code(), "AccessDenied");

  HttpRequestParts longer = incoming;
  longer.query.replace(longer.query.find("X-Amz-Expires=86400"), 19, "X-Amz-Expires=86401");
  EXPECT_EQ(VerifyRequest(longer, S3Lookup(), t0).status().foreign_code(), "SignatureDoesNotMatch");
  HttpRequestParts other_key = incoming;
  other_key.path = "/secret.txt";
  EXPECT_EQ(VerifyRequest(other_key, S3Lookup(), t0).status().foreign_code(), "SignatureDoesNotMatch");
  HttpRequestParts too_long = incoming;
  too_long.query.replace(too_long.query.find("X-Amz-Expires=86400"), 19, "X-Amz-Expires=999999");
  EXPECT_EQ(VerifyRequest(too_long, S3Lookup(), t0).status().foreign_code(), "AuthorizationQueryParametersError");
  HttpRequestParts dup = incoming;
  dup.query += "&X-Amz-Date=20130524T000000Z";
  EXPECT_EQ(VerifyRequest(dup, S3Lookup(), t0).status().foreign_code(), "AuthorizationQueryParametersError");

  EXPECT_EQ(PresignUrl(req, kS3Creds, "us-east-1", "s3", t0, std::chrono::hours(24 * 8)).status().code(),
            Code::kInvalidArgument);
}

TEST(SigV4Presign, KeepsExistingQueryAndToken) {
  AwsCredentials creds = kS3Creds;
  creds.session_token = "tok";
  HttpRequestParts req{"GET", "/b/a%20b", "partNumber=2&versionId=x", {{"Host", "127.0.0.1:8080"}}};
  WallTime t0 = At("20240301T000000Z");
  auto q = PresignUrl(req, creds, "eu-west-1", "s3", t0, std::chrono::seconds(60));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->rfind("partNumber=2&versionId=x&", 0), 0u);
  EXPECT_NE(q->find("X-Amz-Security-Token=tok"), std::string::npos);
  req.query = *q;
  auto v = VerifyRequest(req, S3Lookup(), t0 + std::chrono::seconds(59));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->region, "eu-west-1");
  EXPECT_EQ(VerifyRequest(req, S3Lookup(), t0 + std::chrono::seconds(61)).status().foreign_code(), "AccessDenied");
}

}  // namespace
}  // namespace strata::net
