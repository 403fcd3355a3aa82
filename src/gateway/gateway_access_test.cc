// Unit tests of per-key access in the gateway (access.h, s3_access.cc,
// s3_acl_ops.cc) over mem stores: owners, read-only and granted keys, canned
// ACLs, anonymous requests and browser (Origin) requests.
#include <gtest/gtest.h>

#include "base/hash.h"
#include "gateway/access.h"
#include "gateway/buckets.h"
#include "gateway/config.h"
#include "gateway/s3_handler.h"
#include "net/s3_xml.h"
#include "net/sigv4.h"
#include "object/mem_store.h"

namespace strata::gateway {
namespace {

const net::AwsCredentials kAlice{"AKIDALICE", "alice-secret-key", ""};
const net::AwsCredentials kBob{"AKIDBOB", "bob-secret-key-01", ""};
const net::AwsCredentials kReader{"AKIDREADER", "reader-secret-key", ""};
const net::AwsCredentials kScoped{"AKIDSCOPED", "scoped-secret-key", ""};

class GatewayAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache::CacheOptions co;
    co.block_size = 64 << 10;
    co.ram_bytes = 16 << 20;
    cache_ = *cache::BlockCache::Open(co);
    std::map<std::string, object::ObjectStorePtr> stores;
    for (const char* name : {"alices", "bobs", "shared", "public"}) stores[name] = object::MakeMemStore("");
    buckets_ = BucketSet::FromStores(stores, cache_);
    S3HandlerOptions ho;
    for (const auto* c : {&kAlice, &kBob, &kReader, &kScoped}) ho.keys[c->access_key_id] = c->secret_access_key;
    KeyAccess reader;
    reader.read_only = true;
    KeyAccess scoped;
    scoped.restricted = true;
    scoped.grants.push_back({"shared", "team/", kPermRead | kPermList | kPermWrite | kPermDelete});
    scoped.grants.push_back({"alices", "drop/", kPermWrite});
    ho.access = AccessPolicy({{kReader.access_key_id, reader}, {kScoped.access_key_id, scoped}},
                             {{"alices", {kAlice.access_key_id, false}},
                              {"bobs", {kBob.access_key_id, false}},
                              {"public", {kAlice.access_key_id, true}}});
    handler_ = std::make_unique<S3Handler>(*buckets_, ho);
  }

  GatewayRequest Signed(const net::AwsCredentials& creds, std::string method, std::string target, std::string body = "",
                        net::HttpHeaders extra = {}) {
    GatewayRequest r;
    r.method = method;
    r.target = target;
    size_t q = target.find('?');
    net::HttpRequestParts p{method, target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1), extra};
    p.headers.emplace_back("Host", "127.0.0.1:9000");
    EXPECT_TRUE(net::SignRequest(p, creds, "us-east-1", "s3", RealClock().WallNow(), ToHex(Sha256(body))).ok());
    r.headers = p.headers;
    r.body = Buffer::FromString(std::move(body));
    return r;
  }
  static GatewayRequest Anonymous(std::string method, std::string target, std::string body = "",
                                  net::HttpHeaders extra = {}) {
    extra.emplace_back("Host", "127.0.0.1:9000");
    return GatewayRequest{method, target, extra, Buffer::FromString(std::move(body)), ""};
  }

  GatewayResponse Do(const GatewayRequest& r) { return handler_->Handle(r); }
  // "200", or the S3 error code.
  std::string Outcome(const GatewayRequest& r) {
    GatewayResponse resp = Do(r);
    if (resp.status < 300) return std::to_string(resp.status);
    auto e = net::DecodeS3Error(resp.body);
    return e.ok() ? e->code : std::to_string(resp.status);
  }
  static std::string Body(GatewayResponse& r) {
    if (!r.stream) return r.body;
    std::string out;
    for (auto b = r.stream->Next(); b.ok() && !b->empty(); b = r.stream->Next()) out += b->view();
    return out;
  }

  std::shared_ptr<cache::BlockCache> cache_;
  std::unique_ptr<BucketSet> buckets_;
  std::unique_ptr<S3Handler> handler_;
};

TEST_F(GatewayAccessTest, EachKeySeesOnlyItsOwnBuckets) {
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/secret", "alice's")), "200");
  ASSERT_EQ(Outcome(Signed(kBob, "PUT", "/bobs/mine", "bob's")), "200");
  // Bob can neither read nor list nor write nor delete in Alice's bucket, and the reverse.
  EXPECT_EQ(Outcome(Signed(kBob, "GET", "/alices/secret")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "HEAD", "/alices/secret")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "GET", "/alices?list-type=2")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "GET", "/alices")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "PUT", "/alices/secret", "overwritten")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "DELETE", "/alices/secret")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "GET", "/alices/secret?acl")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "HEAD", "/alices")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kAlice, "GET", "/bobs/mine")), "AccessDenied");
  // Writes are refused from their headers, before any body is read (or 100-continued).
  GatewayRequest bobs_put = Signed(kBob, "PUT", "/alices/big", std::string(1000, 'b'));
  auto refused = handler_->PreCheck(bobs_put);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 403);
  EXPECT_EQ(refused->error_code, "AccessDenied");
  EXPECT_TRUE(refused->close);
  GatewayRequest alices_put = Signed(kAlice, "PUT", "/alices/big", std::string(1000, 'a'));
  EXPECT_FALSE(handler_->PreCheck(alices_put).has_value());
  GatewayRequest anonymous_put = Anonymous("PUT", "/public/big", std::string(1000, 'x'));
  auto anon = handler_->PreCheck(anonymous_put);
  ASSERT_TRUE(anon.has_value());
  EXPECT_EQ(anon->error_code, "AccessDenied");
  GatewayRequest readers_post = Signed(kReader, "POST", "/shared?delete", "<Delete/>");
  ASSERT_TRUE(handler_->PreCheck(readers_post).has_value());
  // A copy out of Alice's bucket into Bob's is a read of hers: refused, nothing written.
  EXPECT_EQ(Outcome(Signed(kBob, "PUT", "/bobs/stolen", "", {{"x-amz-copy-source", "/alices/secret"}})),
            "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "GET", "/bobs/stolen")), "NoSuchKey");
  GatewayResponse get = Do(Signed(kAlice, "GET", "/alices/secret"));
  EXPECT_EQ(Body(get), "alice's");
  // ListBuckets names the buckets a key owns, or shares (nobody's), and no other.
  GatewayResponse alice = Do(Signed(kAlice, "GET", "/"));
  auto listed = net::DecodeListAllMyBuckets(alice.body);
  ASSERT_TRUE(listed.ok()) << alice.body;
  std::vector<std::string> names;
  for (const auto& b : listed->buckets) names.push_back(b.name);
  EXPECT_EQ(names, (std::vector<std::string>{"alices", "public", "shared"}));
  GatewayResponse bob = Do(Signed(kBob, "GET", "/"));
  EXPECT_EQ(bob.body.find("alices"), std::string::npos) << bob.body;
  EXPECT_NE(bob.body.find("bobs"), std::string::npos) << bob.body;
  // A bucket nobody owns is shared by the unrestricted keys.
  EXPECT_EQ(Outcome(Signed(kAlice, "PUT", "/shared/x", "a")), "200");
  EXPECT_EQ(Outcome(Signed(kBob, "GET", "/shared/x")), "200");
}

TEST_F(GatewayAccessTest, ReadOnlyKeyReadsAndListsButNeverWrites) {
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/shared/doc", "text")), "200");
  EXPECT_EQ(Outcome(Signed(kReader, "GET", "/shared/doc")), "200");
  EXPECT_EQ(Outcome(Signed(kReader, "GET", "/shared?list-type=2")), "200");
  EXPECT_EQ(Outcome(Signed(kReader, "PUT", "/shared/doc", "changed")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kReader, "DELETE", "/shared/doc")), "AccessDenied");
  const std::string del = "<Delete><Object><Key>doc</Key></Object></Delete>";
  EXPECT_EQ(Outcome(Signed(kReader, "POST", "/shared?delete", del)), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kReader, "POST", "/shared/up?uploads")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kReader, "PUT", "/shared/doc?acl", "", {{"x-amz-acl", "public-read"}})), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kReader, "PUT", "/newbucket")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kReader, "GET", "/alices?list-type=2")), "AccessDenied");  // owned by someone else
  GatewayResponse get = Do(Signed(kAlice, "GET", "/shared/doc"));
  EXPECT_EQ(Body(get), "text");
}

TEST_F(GatewayAccessTest, GrantsScopeAKeyToPrefixesAndPermissions) {
  EXPECT_EQ(Outcome(Signed(kScoped, "PUT", "/shared/team/a", "1")), "200");
  EXPECT_EQ(Outcome(Signed(kScoped, "GET", "/shared/team/a")), "200");
  EXPECT_EQ(Outcome(Signed(kScoped, "PUT", "/shared/other", "1")), "AccessDenied");
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/shared/other", "theirs")), "200");
  EXPECT_EQ(Outcome(Signed(kScoped, "GET", "/shared/other")), "AccessDenied");
  // Listing: only with a prefix inside the grant.
  EXPECT_EQ(Outcome(Signed(kScoped, "GET", "/shared?list-type=2&prefix=team/")), "200");
  EXPECT_EQ(Outcome(Signed(kScoped, "GET", "/shared?list-type=2")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kScoped, "GET", "/shared?list-type=2&prefix=te")), "AccessDenied");
  // DeleteObjects: each key on its own.
  GatewayResponse del = Do(Signed(kScoped, "POST", "/shared?delete",
                                  "<Delete><Object><Key>team/a</Key></Object><Object><Key>other</Key></Object>"
                                  "</Delete>"));
  ASSERT_EQ(del.status, 200) << del.body;
  auto result = net::DecodeDeleteResult(del.body);
  ASSERT_TRUE(result.ok()) << del.body;
  EXPECT_EQ(result->deleted, (std::vector<std::string>{"team/a"}));
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].key, "other");
  EXPECT_EQ(result->errors[0].code, "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kAlice, "GET", "/shared/other")), "200");
  // Write-only drop box in Alice's bucket: put, but not read back or list; no public ACL.
  EXPECT_EQ(Outcome(Signed(kScoped, "PUT", "/alices/drop/report", "r")), "200");
  EXPECT_EQ(Outcome(Signed(kScoped, "GET", "/alices/drop/report")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kScoped, "PUT", "/alices/drop/pub", "p", {{"x-amz-acl", "public-read"}})), "AccessDenied");
  // A scoped key creates no buckets and lists only what it is granted.
  EXPECT_EQ(Outcome(Signed(kScoped, "PUT", "/newbucket")), "AccessDenied");
  GatewayResponse list = Do(Signed(kScoped, "GET", "/"));
  EXPECT_NE(list.body.find("<Name>shared</Name>"), std::string::npos) << list.body;
  EXPECT_EQ(list.body.find("<Name>bobs</Name>"), std::string::npos) << list.body;
}

TEST_F(GatewayAccessTest, AnonymousReadsOnlyWhatIsPublicAndNeverWrites) {
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/private", "p")), "200");
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/open", "o", {{"x-amz-acl", "public-read"}})), "200");
  EXPECT_EQ(Outcome(Anonymous("GET", "/alices/private")), "AccessDenied");
  // A missing key in a bucket the requester cannot list is AccessDenied too: nothing learnt by probing.
  EXPECT_EQ(Outcome(Anonymous("GET", "/alices/nope")), "AccessDenied");
  GatewayResponse open = Do(Anonymous("GET", "/alices/open"));
  ASSERT_EQ(open.status, 200);
  EXPECT_EQ(Body(open), "o");
  EXPECT_EQ(open.access_key, "-");
  EXPECT_EQ(net::FindHeader(open.headers, "x-amz-meta-strata-acl"), nullptr);  // the ACL's place stays internal
  // The object is readable, not its bucket listable; Bob reads it too.
  EXPECT_EQ(Outcome(Anonymous("GET", "/alices?list-type=2")), "AccessDenied");
  EXPECT_EQ(Outcome(Signed(kBob, "GET", "/alices/open")), "200");
  // Never a write, a delete or an ACL, even on a public object.
  EXPECT_EQ(Outcome(Anonymous("PUT", "/alices/open", "x")), "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("DELETE", "/alices/open")), "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("POST", "/alices?delete", "<Delete><Object><Key>open</Key></Object></Delete>")),
            "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("POST", "/alices/new?uploads")), "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("PUT", "/alices/open?acl", "", {{"x-amz-acl", "private"}})), "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("PUT", "/anonbucket")), "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("GET", "/")), "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("PUT", "/public/x", "x")), "AccessDenied");
  GatewayResponse still = Do(Signed(kAlice, "GET", "/alices/open"));
  EXPECT_EQ(Body(still), "o");
  // A public_read bucket: anyone lists it and reads every object; a missing key is NoSuchKey.
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/public/data", "d")), "200");
  EXPECT_EQ(Outcome(Anonymous("GET", "/public?list-type=2")), "200");
  EXPECT_EQ(Outcome(Anonymous("GET", "/public/data")), "200");
  EXPECT_EQ(Outcome(Anonymous("GET", "/public/nope")), "NoSuchKey");
  // Made private again: refused again.
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/open?acl", "", {{"x-amz-acl", "private"}})), "200");
  EXPECT_EQ(Outcome(Anonymous("GET", "/alices/open")), "AccessDenied");
}

TEST_F(GatewayAccessTest, UnsignedBrowserRequestsAreRefused) {
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/public/page", "p")), "200");
  net::HttpHeaders origin{{"Origin", "http://evil.example"}};
  EXPECT_EQ(Outcome(Anonymous("GET", "/public/page", "", origin)), "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("POST", "/public?delete", "<Delete><Object><Key>page</Key></Object></Delete>", origin)),
            "AccessDenied");
  EXPECT_EQ(Outcome(Anonymous("GET", "/public/page")), "200");                   // the same without Origin
  EXPECT_EQ(Outcome(Signed(kAlice, "GET", "/public/page", "", origin)), "200");  // a signed one is fine
  GatewayRequest pre = Anonymous("PUT", "/public/page", "x", origin);
  auto refusal = handler_->PreCheck(pre);  // before any body is read
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->status, 403);
}

TEST_F(GatewayAccessTest, CannedAclsReadAndWrittenAsS3Does) {
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/o", "o")), "200");
  GatewayResponse acl = Do(Signed(kAlice, "GET", "/alices/o?acl"));
  ASSERT_EQ(acl.status, 200) << acl.body;
  EXPECT_NE(acl.body.find("<Owner><ID>AKIDALICE</ID>"), std::string::npos) << acl.body;
  EXPECT_NE(acl.body.find("<Permission>FULL_CONTROL</Permission>"), std::string::npos) << acl.body;
  EXPECT_EQ(acl.body.find("AllUsers"), std::string::npos) << acl.body;
  // PutObjectAcl with an AccessControlPolicy body (what boto3's AccessControlPolicy= sends).
  const std::string policy =
      "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>AKIDALICE</ID></Owner>"
      "<AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
      "xsi:type=\"CanonicalUser\"><ID>AKIDALICE</ID></Grantee><Permission>FULL_CONTROL</Permission></Grant>"
      "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\">"
      "<URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee><Permission>READ</Permission></Grant>"
      "</AccessControlList></AccessControlPolicy>";
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/o?acl", policy)), "200");
  GatewayResponse now = Do(Signed(kAlice, "GET", "/alices/o?acl"));
  EXPECT_NE(now.body.find("<URI>http://acs.amazonaws.com/groups/global/AllUsers</URI>"), std::string::npos);
  EXPECT_NE(now.body.find("<Permission>READ</Permission>"), std::string::npos) << now.body;
  EXPECT_EQ(Outcome(Anonymous("GET", "/alices/o")), "200");
  // The bytes stayed.
  GatewayResponse get = Do(Signed(kAlice, "GET", "/alices/o"));
  EXPECT_EQ(Body(get), "o");
  // Grants other than the canned ones, and other canned ACLs: not implemented, nothing changed.
  std::string write_grant = policy;
  write_grant.replace(write_grant.find("<Permission>READ</Permission>"), 29, "<Permission>WRITE</Permission>");
  EXPECT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/o?acl", write_grant)), "NotImplemented");
  EXPECT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/o?acl", "", {{"x-amz-acl", "public-read-write"}})),
            "NotImplemented");
  EXPECT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/o?acl", "", {{"x-amz-grant-read", "uri=x"}})), "NotImplemented");
  EXPECT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/o?acl", "<AccessControlPolicy>")), "MalformedACLError");
  EXPECT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/o?acl", policy, {{"x-amz-acl", "private"}})), "UnexpectedContent");
  EXPECT_EQ(Outcome(Anonymous("GET", "/alices/o")), "200");
  // The ACL lives where nobody can set it as metadata.
  EXPECT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/m", "m", {{"x-amz-meta-strata-acl", "public-read"}})),
            "InvalidArgument");
  // A copy does not inherit its source's ACL.
  ASSERT_EQ(Outcome(Signed(kAlice, "PUT", "/alices/copy", "", {{"x-amz-copy-source", "/alices/o"}})), "200");
  EXPECT_EQ(Outcome(Anonymous("GET", "/alices/copy")), "AccessDenied");
  // Bucket ACLs: a fixed bucket's is the config's to set; GetBucketAcl shows public_read.
  EXPECT_EQ(Outcome(Signed(kAlice, "PUT", "/alices?acl", "", {{"x-amz-acl", "public-read"}})), "NotImplemented");
  GatewayResponse pub = Do(Signed(kAlice, "GET", "/public?acl"));
  EXPECT_NE(pub.body.find("AllUsers"), std::string::npos) << pub.body;
  EXPECT_EQ(Outcome(Signed(kBob, "GET", "/public?acl")), "AccessDenied");
}

TEST(AccessPolicyTest, Decisions) {
  KeyAccess ro;
  ro.read_only = true;
  KeyAccess scoped;
  scoped.restricted = true;
  scoped.grants.push_back({"*", "logs/", kPermList});
  AccessPolicy p({{"RO", ro}, {"S", scoped}}, {{"pub", {"", true}}, {"owned", {"A", false}}});
  Principal a{"A"}, b{"B"}, anon{};
  BucketRecord nobody, of_a{"A", CannedAcl::kPrivate}, public_of_a{"A", CannedAcl::kPublicRead};
  EXPECT_EQ(p.Permissions(a, "x", nobody, "k"), kPermAll);
  EXPECT_EQ(p.Permissions(b, "x", of_a, "k"), 0u);
  EXPECT_EQ(p.Permissions(b, "x", public_of_a, "k"), unsigned{kPermList});
  EXPECT_EQ(p.Permissions(anon, "x", nobody, "k"), 0u);
  EXPECT_EQ(p.Permissions(anon, "pub", nobody, "k"), unsigned{kPermRead | kPermList});
  EXPECT_EQ(p.Permissions({"RO"}, "x", nobody, "k"), unsigned{kPermRead | kPermList});
  EXPECT_EQ(p.Permissions({"S"}, "x", nobody, "logs/1"), unsigned{kPermList});
  EXPECT_EQ(p.Permissions({"S"}, "x", nobody, "data/1"), 0u);
  EXPECT_TRUE(p.AnyPermission({"S"}, "x", nobody, kPermList));
  EXPECT_FALSE(p.AnyPermission({"S"}, "x", nobody, kPermDelete));
  EXPECT_TRUE(p.OwnerRights(a, nobody));
  EXPECT_FALSE(p.OwnerRights({"RO"}, nobody));
  EXPECT_FALSE(p.OwnerRights({"S"}, nobody));
  EXPECT_FALSE(p.OwnerRights(b, of_a));
  EXPECT_EQ(p.Effective("owned", nobody).owner, "A");
  EXPECT_TRUE(p.MayCreateBuckets(a));
  EXPECT_FALSE(p.MayCreateBuckets({"RO"}));
  EXPECT_FALSE(p.MayCreateBuckets({"S"}));
  EXPECT_FALSE(p.MayCreateBuckets(anon));
  EXPECT_TRUE(p.ObjectReadable("x", CannedAcl::kPublicRead));
  EXPECT_FALSE(p.ObjectReadable("x", CannedAcl::kPrivate));
  EXPECT_TRUE(p.ObjectReadable("pub", CannedAcl::kPrivate));
  EXPECT_EQ(ParseCannedAcl("authenticated-read").status().foreign_code(), "NotImplemented");
  EXPECT_EQ(ParseCannedAcl("bogus").status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(ParsePermission("admin").ok());
}

TEST(GatewayAccessConfigTest, KeysGrantsBucketsAndLimitsFromJson) {
  GatewayConfig c;
  c.backends = {"mem://x"};
  ASSERT_TRUE(ParseGatewayConfigJson(R"({
    "keys": [{"access_key": "A", "secret_key": "secret-of-key-A-01"},
             {"access_key": "R", "secret_key": "secret-of-key-R-01", "read_only": true,
              "grants": [{"bucket": "data", "prefix": "train/", "allow": ["read", "list"]}, {"bucket": "*"}]}],
    "buckets": {"data": {"owner": "A"}, "open": {"public_read": true}},
    "limits": {"max_connections": 100, "max_connections_per_client": 10, "min_transfer_rate": "64KiB/s",
               "transfer_grace": "3s"}})",
                                     &c)
                  .ok());
  EXPECT_EQ(c.keys.size(), 2u);
  EXPECT_FALSE(c.key_access.at("A").restricted);
  const KeyAccess& r = c.key_access.at("R");
  EXPECT_TRUE(r.read_only);
  EXPECT_TRUE(r.restricted);
  ASSERT_EQ(r.grants.size(), 2u);
  EXPECT_EQ(r.grants[0].prefix, "train/");
  EXPECT_EQ(r.grants[0].permissions, unsigned{kPermRead | kPermList});
  EXPECT_EQ(r.grants[1].permissions, unsigned{kPermAll});
  EXPECT_EQ(c.bucket_settings.at("data").owner, "A");
  EXPECT_TRUE(c.bucket_settings.at("open").public_read);
  EXPECT_EQ(c.limits.max_connections, 100u);
  EXPECT_EQ(c.limits.max_connections_per_client, 10u);
  EXPECT_EQ(c.limits.min_transfer_rate, 64u << 10);
  EXPECT_EQ(c.limits.transfer_grace, std::chrono::seconds(3));
  EXPECT_TRUE(ValidateGatewayConfig(c).ok());
  // Mistakes are named.
  auto bad = [](std::string_view json) {
    GatewayConfig x;
    x.backends = {"mem://x"};
    Status st = ParseGatewayConfigJson(json, &x);
    return st.ok() ? ValidateGatewayConfig(x) : st;
  };
  EXPECT_NE(bad(R"({"allow_anonymous": true})").message().find("public_read"), std::string::npos);
  EXPECT_FALSE(
      bad(R"({"keys": [{"access_key": "A", "secret_key": "secret-of-key-A-01", "grants": [{"allow": ["read"]}]}]})")
          .ok());
  EXPECT_FALSE(
      bad(R"({"keys": [{"access_key": "A", "secret_key": "secret-of-key-A-01", "grants": [{"bucket": "b", "allow": ["admin"]}]}]})")
          .ok());
  EXPECT_FALSE(
      bad(R"({"keys": [{"access_key": "A", "secret_key": "secret-of-key-A-01"}], "buckets": {"b": {"owner": "Z"}}})")
          .ok());
  EXPECT_FALSE(
      bad(R"({"keys": [{"access_key": "A", "secret_key": "secret-of-key-A-01"}], "limits": {"max_connections": 0}})")
          .ok());
  EXPECT_FALSE(
      bad(R"({"keys": [{"access_key": "A", "secret_key": "secret-of-key-A-01"}], "limits": {"min_transfer_rate": "fast"}})")
          .ok());
  // No keys is fine when a bucket is public (anonymous readers only); no keys and nothing public is not.
  EXPECT_TRUE(bad(R"({"buckets": {"open": {"public_read": true}}})").ok());
  EXPECT_FALSE(bad(R"({})").ok());
}

// A secret short enough to guess offline from one signed request is refused by name and length,
// without echoing it; kMinSecretKeyChars characters are enough.
TEST(GatewayAccessConfigTest, SecretKeysShorterThanTheMinimumAreRefused) {
  auto with_secret = [](const std::string& secret) {
    GatewayConfig c;
    c.backends = {"mem://x"};
    c.keys["SHORTKEY"] = secret;
    return ValidateGatewayConfig(c);
  };
  const std::string minimum(kMinSecretKeyChars, 'k');
  EXPECT_TRUE(with_secret(minimum).ok()) << with_secret(minimum);
  for (const std::string& secret : {std::string("SK"), std::string("hunter2"), minimum.substr(1)}) {
    const Status st = with_secret(secret);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << secret;
    EXPECT_NE(st.message().find("SHORTKEY"), std::string::npos) << st;
    EXPECT_NE(st.message().find("at least " + std::to_string(kMinSecretKeyChars)), std::string::npos) << st;
    EXPECT_EQ(st.message().find(secret), std::string::npos) << "the error echoes the secret: " << st;
  }
  GatewayConfig from_json;
  from_json.backends = {"mem://x"};
  ASSERT_TRUE(ParseGatewayConfigJson(R"({"keys": [{"access_key": "J", "secret_key": "short"}]})", &from_json).ok());
  EXPECT_FALSE(ValidateGatewayConfig(from_json).ok());
}

}  // namespace
}  // namespace strata::gateway
