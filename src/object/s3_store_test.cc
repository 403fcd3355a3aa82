// Unit tests of the S3 store against a scripted in-process HTTP server on
// 127.0.0.1 (no real S3): retries, backoff bounds, truncation, resets, range
// validation, parallel GETs, multipart, signing headers.
#include "object/s3_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>

#include "base/hash.h"
#include "base/metrics.h"
#include "net/fake_http_server.h"
#include "net/http.h"
#include "net/s3_xml.h"
#include "object/s3_request.h"
#include "object/transfer.h"

namespace strata::object {
namespace {

using testing_http::FakeHttpServer;
using testing_http::FakeRequest;
using testing_http::FakeResponse;

FakeResponse Xml(int status, const std::string& code) {
  FakeResponse r;
  r.status = status;
  r.body = "<?xml version=\"1.0\"?><Error><Code>" + code + "</Code><Message>m</Message></Error>";
  return r;
}

FakeResponse Ok(const std::string& body, const std::string& etag = "\"e1\"") {
  FakeResponse r;
  r.body = body;
  r.headers = {{"ETag", etag}, {"Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT"}};
  return r;
}

// Serves one object with Range and If-Match support.
FakeResponse ServeObject(const FakeRequest& req, const std::string& data, const std::string& etag) {
  std::string im = req.Header("If-Match");
  if (!im.empty() && im != "\"" + etag + "\"") return Xml(412, "PreconditionFailed");
  std::string range = req.Header("Range");
  if (range.empty()) return Ok(data, "\"" + etag + "\"");
  auto r = net::ParseRangeHeader(range);
  if (!r.ok()) return Xml(400, "InvalidArgument");
  uint64_t first = r->offset, last = data.size() - 1;
  if (r->suffix) first = data.size() - std::min<uint64_t>(*r->suffix, data.size());
  if (r->length) last = std::min<uint64_t>(last, r->offset + *r->length - 1);
  if (data.empty() || first >= data.size()) return Xml(416, "InvalidRange");
  FakeResponse resp = Ok(data.substr(first, last - first + 1), "\"" + etag + "\"");
  resp.status = 206;
  resp.headers.emplace_back("Content-Range", net::FormatContentRange(first, last, data.size()));
  return resp;
}

class S3StoreTest : public ::testing::Test {
 protected:
  S3Config Config(const FakeHttpServer& server) {
    S3Config c;
    c.bucket = "bkt";
    c.endpoint = server.Endpoint();
    c.credentials = {"AKID", "SECRET", ""};
    c.clock = &clock_;
    c.seed = 42;
    c.max_retries = 3;
    c.backoff_base = std::chrono::milliseconds(100);
    c.backoff_cap = std::chrono::seconds(1);
    return c;
  }
  ObjectStorePtr Open(const S3Config& c) {
    auto s = OpenS3Store(c);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : nullptr;
  }
  FakeClock clock_{/*auto_advance=*/true};
};

TEST_F(S3StoreTest, RetriesOn500And503SlowDownThenSucceeds) {
  std::atomic<int> n{0};
  FakeHttpServer server([&](const FakeRequest& req) {
    int i = n++;
    if (i == 0) return Xml(500, "InternalError");
    if (i == 1) return Xml(503, "SlowDown");
    return ServeObject(req, "payload", "e1");
  });
  auto& retries =
      MetricsRegistry::Global().GetCounter("strata_s3_retries_total", "S3 request retries", {{"op", "GetObject"}});
  uint64_t before = retries.Value();
  auto store = Open(Config(server));
  auto r = store->Get("k");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.view(), "payload");
  EXPECT_EQ(r->info.etag, "e1");
  EXPECT_EQ(r->info.size, 7u);
  EXPECT_EQ(server.RequestCount(), 3u);
  EXPECT_EQ(retries.Value() - before, 2u);
  EXPECT_GT(clock_.TotalSlept().count(), 0);
}

TEST_F(S3StoreTest, NoRetryOn403Or404Or412) {
  struct Case {
    int status;
    const char* s3code;
    Code code;
  };
  for (Case c : {Case{403, "AccessDenied", Code::kPermissionDenied}, Case{404, "NoSuchKey", Code::kNotFound},
                 Case{412, "PreconditionFailed", Code::kPreconditionFailed},
                 Case{403, "SignatureDoesNotMatch", Code::kUnauthenticated}}) {
    FakeHttpServer server([&](const FakeRequest&) { return Xml(c.status, c.s3code); });
    auto store = Open(Config(server));
    auto r = store->Get("k");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    EXPECT_EQ(server.RequestCount(), 1u) << c.s3code;
  }
  EXPECT_EQ(clock_.TotalSlept().count(), 0);
}

TEST_F(S3StoreTest, HeadNotFoundWithoutBody) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse r;
    r.status = 404;
    return r;
  });
  auto store = Open(Config(server));
  auto r = store->Head("missing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound) << r.status();
  EXPECT_EQ(server.RequestCount(), 1u);
}

TEST_F(S3StoreTest, GivesUpAfterMaxRetriesWithAttemptCount) {
  FakeHttpServer server([](const FakeRequest&) { return Xml(503, "SlowDown"); });
  auto store = Open(Config(server));
  auto r = store->Head("k");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kThrottled) << r.status();
  EXPECT_NE(r.status().message().find("after 4 attempts"), std::string::npos) << r.status();
  EXPECT_EQ(server.RequestCount(), 4u);
}

TEST_F(S3StoreTest, BackoffSleepsWithinFullJitterBounds) {
  FakeHttpServer server([](const FakeRequest&) { return Xml(500, "InternalError"); });
  S3Config c = Config(server);
  c.max_retries = 6;
  auto store = Open(c);
  ASSERT_FALSE(store->Head("k").ok());
  // Full jitter: retry i sleeps uniformly in [0, min(cap, base * 2^i)].
  Duration bound{0};
  for (int i = 0; i < 6; ++i) {
    bound += std::min<Duration>(c.backoff_cap, c.backoff_base * (1 << i));
  }
  Duration slept = clock_.TotalSlept();
  EXPECT_GT(slept.count(), 0);
  EXPECT_LE(slept, bound);
  // Each individual sleep is bounded too.
  auto req = S3Requester::Create(c);
  ASSERT_TRUE(req.ok());
  for (int attempt = 0; attempt < 12; ++attempt) {
    for (int k = 0; k < 50; ++k) {
      Duration d = (*req)->Backoff(attempt);
      EXPECT_GE(d.count(), 0);
      EXPECT_LE(d, std::min<Duration>(c.backoff_cap, c.backoff_base * (1LL << attempt)));
    }
  }
}

TEST_F(S3StoreTest, TruncatedBodyIsRetriedAndNeverReturned) {
  std::atomic<int> n{0};
  std::string data(100, 'd');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  FakeHttpServer server([&](const FakeRequest& req) {
    FakeResponse r = ServeObject(req, data, "e");
    if (n++ == 0) r.truncate_after = 50;  // Content-Length 100, then close after 50
    return r;
  });
  auto store = Open(Config(server));
  auto r = store->Get("k");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.view(), data);
  EXPECT_EQ(server.RequestCount(), 2u);

  FakeHttpServer always([&](const FakeRequest& req) {
    FakeResponse r = ServeObject(req, data, "e");
    r.truncate_after = 50;
    return r;
  });
  auto store2 = Open(Config(always));
  auto r2 = store2->Get("k");
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), Code::kUnavailable) << r2.status();
  EXPECT_NE(r2.status().message().find("after 4 attempts"), std::string::npos) << r2.status();
}

TEST_F(S3StoreTest, ConnectionResetIsRetried) {
  std::atomic<int> n{0};
  FakeHttpServer server([&](const FakeRequest& req) {
    if (n++ < 2) {
      FakeResponse r;
      r.reset = true;
      return r;
    }
    return ServeObject(req, "abc", "e");
  });
  auto store = Open(Config(server));
  auto r = store->Get("k");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.view(), "abc");
  EXPECT_EQ(server.RequestCount(), 3u);
}

TEST_F(S3StoreTest, MismatchedContentRangeIsRejected) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse r = Ok("0123456789");
    r.status = 206;
    r.headers.emplace_back("Content-Range", "bytes 0-9/100");  // asked for 10-19
    return r;
  });
  auto store = Open(Config(server));
  GetOptions o;
  o.range = ByteRange::Of(10, 10);
  auto r = store->Get("k", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status();
}

TEST_F(S3StoreTest, WholeObjectAnswerToARangeIsSliced) {
  FakeHttpServer server([](const FakeRequest&) { return Ok("0123456789"); });  // ignores Range
  auto store = Open(Config(server));
  GetOptions o;
  o.range = ByteRange::Of(3, 4);
  auto r = store->Get("k", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.view(), "3456");
  EXPECT_EQ(r->offset, 3u);
  EXPECT_EQ(r->info.size, 10u);
  o.range = ByteRange::Last(2);
  r = store->Get("k", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.view(), "89");
  EXPECT_EQ(r->offset, 8u);
}

TEST_F(S3StoreTest, RangesAndSuffixAgainstARangeServer) {
  std::string data = "abcdefghijklmnopqrstuvwxyz";
  FakeHttpServer server([&](const FakeRequest& req) { return ServeObject(req, data, "e"); });
  auto store = Open(Config(server));
  GetOptions o;
  o.range = ByteRange::Last(5);
  auto r = store->Get("k", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.view(), "vwxyz");
  EXPECT_EQ(r->offset, 21u);
  o.range = ByteRange::From(20);
  r = store->Get("k", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.view(), "uvwxyz");
  o.range = ByteRange::Of(24, 100);  // clamped
  r = store->Get("k", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.view(), "yz");
  o.range = ByteRange::From(26);
  r = store->Get("k", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kOutOfRange) << r.status();
}

TEST_F(S3StoreTest, EmptyObjectWithBogusRangeAnswerDoesNotHang) {
  // s3rver answers a range on an empty object with 206 "bytes 0-0/0" and a
  // Content-Length of 1 that its body never fills.
  FakeHttpServer server([](const FakeRequest& req) {
    if (req.Header("Range").empty()) return Ok("", "\"d41d8cd98f00b204e9800998ecf8427e\"");
    FakeResponse r = Ok("");
    r.status = 206;
    r.headers.emplace_back("Content-Range", "bytes 0-0/0");
    r.headers.emplace_back("Content-Length", "1");
    return r;
  });
  S3Config c = Config(server);
  c.stall_timeout = std::chrono::seconds(60);  // a hang would show as a test timeout
  auto store = Open(c);
  auto r = store->Get("empty");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data.size(), 0u);
  EXPECT_EQ(r->info.size, 0u);
  EXPECT_EQ(server.RequestCount(), 2u);
}

TEST_F(S3StoreTest, ParallelGetPinsEtagAndAssemblesParts) {
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 1000);
  FakeHttpServer server([&](const FakeRequest& req) { return ServeObject(req, data, "pinned"); });
  S3Config c = Config(server);
  c.part_size = 64 << 10;
  c.parallel_get_threshold = 128 << 10;
  c.concurrency = 8;
  auto store = Open(c);
  auto r = store->Get("big");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->data.size(), data.size());
  EXPECT_TRUE(r->data.view() == data);
  auto reqs = server.Requests();
  EXPECT_EQ(reqs.size(), 16u);
  int pinned = 0;
  for (const auto& q : reqs) pinned += q.Header("If-Match") == "\"pinned\"";
  EXPECT_EQ(pinned, 15);  // every part after the first
  // A large explicit range is split the same way.
  GetOptions o;
  o.range = ByteRange::Of(1000, 300000);
  r = store->Get("big", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->data.view() == std::string_view(data).substr(1000, 300000));
  EXPECT_EQ(r->offset, 1000u);
}

TEST_F(S3StoreTest, ParallelGetRestartsWhenTheObjectChanges) {
  std::atomic<int> version{0};
  std::string v0(300000, 'a'), v1(300000, 'b');
  FakeHttpServer server([&](const FakeRequest& req) {
    bool first = version.load() == 0;
    FakeResponse r = ServeObject(req, first ? v0 : v1, first ? "v0" : "v1");
    version = 1;  // replaced right after the first answer
    return r;
  });
  S3Config c = Config(server);
  c.part_size = 100000;
  c.parallel_get_threshold = 100000;
  auto store = Open(c);
  auto r = store->Get("k");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->data.view() == v1);  // never a mix of versions
  EXPECT_EQ(r->info.etag, "v1");
}

TEST_F(S3StoreTest, ParallelGetToStreamsPinnedRangesStraightToTheConsumer) {
  std::string data(300001, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 13 + i / 777);
  FakeHttpServer server([&](const FakeRequest& req) { return ServeObject(req, data, "pinned"); });
  auto store = Open(Config(server));
  ASSERT_TRUE(store->Capabilities().range_streaming);
  std::string out(data.size(), '\0');
  std::mutex mu;
  auto info = ParallelGetTo(*store, "k", 65536, 4, [&](uint64_t offset, const uint8_t* p, size_t n) -> Status {
    std::lock_guard lock(mu);
    if (offset + n > out.size()) return CorruptionError("out of bounds");
    std::memcpy(out.data() + offset, p, n);
    return Status::Ok();
  });
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->etag, "pinned");
  EXPECT_TRUE(out == data);
  auto reqs = server.Requests();
  ASSERT_EQ(reqs.size(), 1u + 5u);  // the Head, then 5 ranges
  for (size_t i = 1; i < reqs.size(); ++i) EXPECT_EQ(reqs[i].Header("If-Match"), "\"pinned\"");
  // ParallelGet takes the same path into one buffer.
  auto whole = ParallelGet(*store, "k", 65536, 4);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(whole->view() == data);
}

TEST_F(S3StoreTest, StreamedRangeWithWrongHeadersNeverReachesTheConsumer) {
  const std::string data(1000, 'x');
  struct Case {
    const char* name;
    std::function<FakeResponse(const FakeRequest&)> answer;
    Code code;
  } cases[] = {
      {"wrong Content-Range",
       [&](const FakeRequest&) {
         FakeResponse r = Ok(data.substr(0, 100), "\"e\"");
         r.status = 206;
         r.headers.emplace_back("Content-Range", "bytes 0-99/1000");  // asked for 100-199
         return r;
       },
       Code::kCorruption},
      {"whole object instead of a range", [&](const FakeRequest&) { return Ok(data, "\"e\""); }, Code::kCorruption},
      {"If-Match ignored, another version sent",
       [&](const FakeRequest&) {
         FakeResponse r = Ok(std::string(100, 'y'), "\"other\"");
         r.status = 206;
         r.headers.emplace_back("Content-Range", "bytes 100-199/1000");
         return r;
       },
       Code::kPreconditionFailed},
  };
  for (const auto& c : cases) {
    FakeHttpServer server([&](const FakeRequest& req) { return c.answer(req); });
    auto store = Open(Config(server));
    ObjectStore* streamer = store.get();
    ASSERT_TRUE(streamer->Capabilities().range_streaming);
    int calls = 0;
    Status st = streamer->ReadRangeTo("k", "e", 100, 100, [&](uint64_t, const uint8_t*, size_t) {
      ++calls;
      return Status::Ok();
    });
    EXPECT_EQ(st.code(), c.code) << c.name << ": " << st;
    EXPECT_EQ(calls, 0) << c.name;
  }
}

TEST_F(S3StoreTest, StreamedRangeIsDeliveredAgainAfterATruncatedAttempt) {
  std::string data(1000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  std::atomic<int> n{0};
  FakeHttpServer server([&](const FakeRequest& req) {
    FakeResponse r = ServeObject(req, data, "e");
    if (n++ == 0) r.truncate_after = 50;
    return r;
  });
  auto store = Open(Config(server));
  ObjectStore* streamer = store.get();
  ASSERT_TRUE(streamer->Capabilities().range_streaming);
  std::string out(data.size(), '?');
  uint64_t delivered = 0;
  Status st = streamer->ReadRangeTo("k", "e", 200, 300, [&](uint64_t offset, const uint8_t* p, size_t len) {
    EXPECT_GE(offset, 200u);
    EXPECT_LE(offset + len, 500u);
    std::memcpy(out.data() + offset, p, len);
    delivered += len;
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(server.RequestCount(), 2u);
  EXPECT_GE(delivered, 300u);  // the retry starts the range over
  EXPECT_EQ(out.substr(200, 300), data.substr(200, 300));
  EXPECT_EQ(out.substr(0, 200), std::string(200, '?'));
}

TEST_F(S3StoreTest, PutSignsWithPayloadHashAndSendsMd5) {
  std::string body = "hello world";
  std::string md5 = ToHex(Md5(body));
  FakeHttpServer server([&](const FakeRequest&) { return Ok("", "\"" + md5 + "\""); });
  auto store = Open(Config(server));
  auto r = store->Put("dir/a b+c", Buffer::Copy(body));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->etag, md5);
  EXPECT_EQ(r->size, body.size());
  auto reqs = server.Requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "PUT");
  EXPECT_EQ(reqs[0].target, "/bkt/dir/a%20b%2Bc");
  EXPECT_EQ(reqs[0].body, body);
  EXPECT_EQ(reqs[0].Header("x-amz-content-sha256"), ToHex(Sha256(body)));
  EXPECT_EQ(reqs[0].Header("Content-MD5"), Base64Encode(Md5(body)));
  EXPECT_EQ(reqs[0].Header("Authorization").rfind("AWS4-HMAC-SHA256 Credential=AKID/", 0), 0u);
}

TEST_F(S3StoreTest, PutEtagMismatchIsNeverSuccess) {
  FakeHttpServer server([](const FakeRequest&) { return Ok("", "\"00000000000000000000000000000000\""); });
  auto store = Open(Config(server));
  auto r = store->Put("k", Buffer::Copy("data"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status();
}

TEST_F(S3StoreTest, ListUsesPrefixAndReturnsRelativeKeys) {
  FakeHttpServer server([](const FakeRequest&) {
    net::ListObjectsV2Result res;
    res.is_truncated = true;
    res.next_continuation_token = "tok2";
    res.contents.push_back({"base/a/1", 3, "\"x\"", {}, ""});
    res.common_prefixes.push_back("base/b/");
    return Ok(net::EncodeListObjectsV2(res));
  });
  S3Config c = Config(server);
  c.prefix = "base/";
  auto store = Open(c);
  ListOptions o;
  o.prefix = "a";
  o.delimiter = "/";
  o.start_after = "a/0";
  o.max_keys = 5000;
  auto r = store->List(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->objects.size(), 1u);
  EXPECT_EQ(r->objects[0].key, "a/1");
  EXPECT_EQ(r->objects[0].etag, "x");
  EXPECT_EQ(r->common_prefixes, std::vector<std::string>{"b/"});
  EXPECT_TRUE(r->truncated);
  ASSERT_FALSE(r->next_continuation_token.empty());
  // The server's token goes back to the server as it was.
  ListOptions next = o;
  next.continuation_token = r->next_continuation_token;
  ASSERT_TRUE(store->List(next).ok());
  EXPECT_NE(server.Requests()[1].target.find("continuation-token=tok2"), std::string::npos)
      << server.Requests()[1].target;
  // Garbage never reaches the server.
  next.continuation_token = "tok2";
  EXPECT_EQ(store->List(next).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(server.RequestCount(), 2u);
  std::string target = server.Requests()[0].target;
  EXPECT_NE(target.find("list-type=2"), std::string::npos) << target;
  EXPECT_NE(target.find("prefix=base%2Fa"), std::string::npos) << target;
  EXPECT_NE(target.find("start-after=base%2Fa%2F0"), std::string::npos) << target;
  EXPECT_NE(target.find("max-keys=1000"), std::string::npos) << target;
  o.max_keys = 0;
  EXPECT_EQ(store->List(o).status().code(), Code::kInvalidArgument);
}

// Just enough multipart to drive Put's parallel upload, with RGW's empty
// <ETag> answer to Complete.
struct MiniMultipart {
  std::mutex mu;
  std::map<int, std::string> parts;
  std::string object;
  bool aborted = false;
  int fail_part = 0;

  FakeResponse Handle(const FakeRequest& req) {
    std::lock_guard lock(mu);
    const std::string& t = req.target;
    if (req.method == "POST" && t.find("?uploads") != std::string::npos) {
      return Ok(net::EncodeInitiateMultipartUpload({"bkt", "k", "UP1"}));
    }
    if (req.method == "PUT" && t.find("uploadId=UP1") != std::string::npos) {
      int n = std::stoi(t.substr(t.find("partNumber=") + 11));
      if (n == fail_part) return Xml(403, "AccessDenied");
      parts[n] = req.body;
      return Ok("", "\"" + ToHex(Md5(req.body)) + "\"");
    }
    if (req.method == "POST" && t.find("uploadId=UP1") != std::string::npos) {
      for (auto& [n, p] : parts) object += p;
      return Ok(net::EncodeCompleteMultipartUploadResult({"", "bkt", "k", "", {}, ""}));  // empty ETag
    }
    if (req.method == "DELETE" && t.find("uploadId=UP1") != std::string::npos) {
      aborted = true;
      FakeResponse r;
      r.status = 204;
      return r;
    }
    if (req.method == "HEAD") {
      FakeResponse r = Ok(object, "\"md5-3\"");
      return r;
    }
    return Xml(400, "InvalidRequest");
  }
};

TEST_F(S3StoreTest, LargePutUsesParallelMultipartAndHeadsForEmptyEtag) {
  MiniMultipart mp;
  FakeHttpServer server([&](const FakeRequest& req) { return mp.Handle(req); });
  S3Config c = Config(server);
  c.part_size = 100000;
  auto store = Open(c);
  std::string data(250000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i % 251);
  auto r = store->Put("k", Buffer::Copy(data));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->etag, "md5-3");
  EXPECT_EQ(r->size, data.size());
  EXPECT_EQ(mp.parts.size(), 3u);
  EXPECT_TRUE(mp.object == data);
  EXPECT_FALSE(mp.aborted);
}

TEST_F(S3StoreTest, FailedPartAbortsTheUpload) {
  MiniMultipart mp;
  mp.fail_part = 2;
  FakeHttpServer server([&](const FakeRequest& req) { return mp.Handle(req); });
  S3Config c = Config(server);
  c.part_size = 100000;
  auto store = Open(c);
  auto r = store->Put("k", Buffer::Copy(std::string(250000, 'x')));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << r.status();
  EXPECT_TRUE(mp.aborted);
}

TEST_F(S3StoreTest, DeleteOfMissingKeySucceedsAndCopyEncodesSource) {
  FakeHttpServer server([](const FakeRequest& req) {
    if (req.method == "DELETE") return Xml(404, "NoSuchKey");
    if (req.method == "PUT") return Ok("<CopyObjectResult><ETag>abc</ETag></CopyObjectResult>");
    FakeResponse r = Ok("12345", "\"abc\"");
    return r;
  });
  S3Config c = Config(server);
  c.prefix = "p/";
  auto store = Open(c);
  EXPECT_TRUE(store->Delete("gone").ok());
  auto r = store->Copy("src key", "dst");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->etag, "abc");
  EXPECT_EQ(r->size, 5u);
  auto reqs = server.Requests();
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].Header("x-amz-copy-source"), "bkt/p/src%20key");
  EXPECT_EQ(reqs[1].target, "/bkt/p/dst");
}

TEST_F(S3StoreTest, CopyErrorInsideA200IsAnError) {
  FakeHttpServer server(
      [](const FakeRequest&) { return Ok("<Error><Code>InternalError</Code><Message>x</Message></Error>"); });
  auto store = Open(Config(server));
  auto r = store->Copy("a", "b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status();
  EXPECT_EQ(server.RequestCount(), 4u);  // retried
}

TEST_F(S3StoreTest, ConditionalPutRetriesUnquotedIfMatchForRgw) {
  FakeHttpServer server([](const FakeRequest& req) {
    if (req.method == "HEAD") return Ok("old", "\"e1\"");
    if (req.Header("If-Match") == "e1") return Ok("", "\"" + ToHex(Md5("new")) + "\"");
    return Xml(412, "PreconditionFailed");  // RGW 16 with a quoted tag
  });
  auto store = Open(Config(server));
  PutOptions o;
  o.if_match = "e1";
  auto r = store->Put("k", Buffer::Copy("new"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(server.RequestCount(), 3u);
  EXPECT_EQ(server.Requests()[0].Header("If-Match"), "\"e1\"");
  // A real mismatch stays a mismatch, with no unquoted resend.
  o.if_match = "other";
  EXPECT_EQ(store->Put("k", Buffer::Copy("x"), o).status().code(), Code::kPreconditionFailed);
  EXPECT_EQ(server.RequestCount(), 5u);
}

TEST_F(S3StoreTest, CompleteOfUnknownUploadIsNotFoundDespite500) {
  FakeHttpServer server([](const FakeRequest& req) {
    if (req.method == "POST") return Xml(500, "InternalError");  // RGW 16's answer
    return Xml(404, "NoSuchUpload");
  });
  auto store = Open(Config(server));
  auto r = store->CompleteMultipartUpload("k", "nope", {{1, "abc"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound) << r.status();
}

TEST_F(S3StoreTest, UrlHasNoSecret) {
  FakeHttpServer server([](const FakeRequest&) { return Ok(""); });
  auto store = Open(Config(server));
  EXPECT_EQ(store->Url().find("SECRET"), std::string::npos);
  EXPECT_EQ(store->Url().rfind("s3://bkt", 0), 0u);
}

}  // namespace
}  // namespace strata::object
