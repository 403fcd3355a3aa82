#include "net/http_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "net/fake_http_server.h"

namespace strata::net {
namespace {

using testing_http::FakeHttpServer;
using testing_http::FakeRequest;
using testing_http::FakeResponse;

HttpRequest Get(const std::string& url) {
  HttpRequest r;
  r.url = url;
  return r;
}

TEST(HttpClientTest, GetReturnsStatusHeadersAndBody) {
  FakeHttpServer server([](const FakeRequest& r) {
    FakeResponse resp;
    resp.headers = {{"ETag", "\"abc\""}, {"X-Echo", r.target}};
    resp.body = "hello";
    return resp;
  });
  HttpClient client;
  auto r = client.Send(Get(server.Endpoint() + "/a/b?x=1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.view(), "hello");
  EXPECT_EQ(r->Header("etag").value_or(""), "\"abc\"");
  EXPECT_EQ(r->Header("x-echo").value_or(""), "/a/b?x=1");
  EXPECT_FALSE(r->Header("missing").has_value());
}

TEST(HttpClientTest, HttpErrorStatusIsNotATransportError) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.status = 404;
    resp.body = "<Error><Code>NoSuchKey</Code></Error>";
    return resp;
  });
  HttpClient client;
  auto r = client.Send(Get(server.Endpoint() + "/k"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(r->body.view().find("NoSuchKey"), std::string_view::npos);
}

TEST(HttpClientTest, PutSendsBodyAndHeadersWithoutExpect) {
  FakeHttpServer server([](const FakeRequest&) { return FakeResponse{}; });
  HttpClient client;
  HttpRequest req = Get(server.Endpoint() + "/obj");
  req.method = "PUT";
  req.body = Buffer::Copy(std::string(100000, 'z'));
  req.headers.emplace_back("x-amz-meta-a", "b");
  auto r = client.Send(std::move(req));
  ASSERT_TRUE(r.ok()) << r.status();
  auto reqs = server.Requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "PUT");
  EXPECT_EQ(reqs[0].body, std::string(100000, 'z'));
  EXPECT_EQ(reqs[0].Header("x-amz-meta-a"), "b");
  EXPECT_EQ(reqs[0].Header("Expect"), "");
}

TEST(HttpClientTest, StreamingUploadAndPostAndDelete) {
  FakeHttpServer server([](const FakeRequest&) { return FakeResponse{}; });
  HttpClient client;
  std::string src = "streamed-body";
  size_t pos = 0;
  HttpRequest req = Get(server.Endpoint() + "/up");
  req.method = "POST";
  req.upload = [&](uint8_t* dst, size_t n) {
    size_t take = std::min(n, src.size() - pos);
    std::memcpy(dst, src.data() + pos, take);
    pos += take;
    return take;
  };
  req.upload_size = src.size();
  req.rewind = [&] { pos = 0; };
  ASSERT_TRUE(client.Send(std::move(req)).ok());
  HttpRequest del = Get(server.Endpoint() + "/up");
  del.method = "DELETE";
  ASSERT_TRUE(client.Send(std::move(del)).ok());
  auto reqs = server.Requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].body, src);
  EXPECT_EQ(reqs[1].method, "DELETE");
}

TEST(HttpClientTest, HeadHasNoBodyButKeepsContentLength) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.body = std::string(1234, 'x');
    return resp;
  });
  HttpClient client;
  HttpRequest req = Get(server.Endpoint() + "/h");
  req.method = "HEAD";
  auto r = client.Send(std::move(req));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Header("Content-Length").value_or(""), "1234");
  EXPECT_TRUE(r->body.empty());
}

TEST(HttpClientTest, SinkReceivesSuccessBodyErrorsGoToBody) {
  std::atomic<int> n{0};
  FakeHttpServer server([&](const FakeRequest&) {
    FakeResponse resp;
    if (n++ == 0) {
      resp.body = "0123456789";
    } else {
      resp.status = 403;
      resp.body = "denied";
    }
    return resp;
  });
  HttpClient client;
  std::vector<uint8_t> dst(10);
  HttpRequest req = Get(server.Endpoint() + "/s");
  req.sink = BodySink{.data = dst.data(), .capacity = dst.size(), .write = nullptr};
  auto r = client.Send(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->sunk);
  EXPECT_EQ(r->body_bytes, 10u);
  EXPECT_EQ(std::string(dst.begin(), dst.end()), "0123456789");
  auto r2 = client.Send(req);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->status, 403);
  EXPECT_FALSE(r2->sunk);
  EXPECT_EQ(r2->body.view(), "denied");
}

TEST(HttpClientTest, SinkOverflowIsAnErrorNotData) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.body = std::string(100, 'a');
    return resp;
  });
  HttpClient client;
  std::vector<uint8_t> dst(10);
  HttpRequest req = Get(server.Endpoint() + "/s");
  req.sink = BodySink{.data = dst.data(), .capacity = dst.size(), .write = nullptr};
  auto r = client.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
}

TEST(HttpClientTest, TruncatedBodyIsRetryableUnavailableNeverData) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.body = std::string(100, 'x');
    resp.truncate_after = 50;
    return resp;
  });
  HttpClient client;
  auto r = client.Send(Get(server.Endpoint() + "/t"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status();
  EXPECT_TRUE(r.status().retryable());
}

TEST(HttpClientTest, ConnectionResetIsRetryableUnavailable) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.reset = true;
    return resp;
  });
  HttpClient client;
  auto r = client.Send(Get(server.Endpoint() + "/r"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status();
  EXPECT_TRUE(r.status().retryable());
}

TEST(HttpClientTest, RefusedConnectionIsUnavailable) {
  int port;
  {
    FakeHttpServer server([](const FakeRequest&) { return FakeResponse{}; });
    port = server.port();
  }  // closed: nothing listens there now
  HttpClient client;
  auto r = client.Send(Get("http://127.0.0.1:" + std::to_string(port) + "/x"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("could not connect"), std::string::npos);
}

TEST(HttpClientTest, TotalTimeoutIsDeadlineExceeded) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.stall_ms = 2000;
    return resp;
  });
  HttpClient client;
  HttpRequest req = Get(server.Endpoint() + "/slow");
  req.timeout = std::chrono::milliseconds(200);
  auto r = client.Send(std::move(req));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded) << r.status();
  EXPECT_TRUE(r.status().retryable());
}

TEST(HttpClientTest, KeepAliveReusesConnections) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.body = "x";
    return resp;
  });
  HttpClient client;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client.Send(Get(server.Endpoint() + "/k")).ok());
  EXPECT_EQ(server.Connections(), 1);
}

TEST(HttpClientTest, SixtyFourConcurrentRequests) {
  constexpr int kOverlap = 17;
  std::atomic<int> inside{0}, peak{0};
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  FakeHttpServer server([&](const FakeRequest& r) {
    int now = ++inside;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    {
      // Hold every request until kOverlap are inside at once (or a deadline
      // passes, if the client serialises them: then the peak check fails).
      std::unique_lock<std::mutex> lock(mu);
      if (now >= kOverlap) released = true;
      cv.notify_all();
      if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return released; })) released = true;
    }
    --inside;
    FakeResponse resp;
    resp.body = r.target;
    return resp;
  });
  HttpClient client;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&, i] {
      auto r = client.Send(Get(server.Endpoint() + "/c" + std::to_string(i)));
      if (r.ok() && r->body.view() == "/c" + std::to_string(i)) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 64);
  // One I/O thread drives them all; they must overlap, not serialise.
  EXPECT_GE(peak.load(), kOverlap);
}

TEST(HttpClientTest, DestructionWithRequestsInFlightCancelsThem) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.stall_ms = 5000;
    return resp;
  });
  std::atomic<int> cancelled{0};
  {
    HttpClient client;
    for (int i = 0; i < 4; ++i) {
      client.SendAsync(Get(server.Endpoint() + "/x"), [&](Result<HttpResponse> r) {
        if (!r.ok() && r.status().code() == Code::kCancelled) ++cancelled;
      });
    }
  }
  EXPECT_EQ(cancelled.load(), 4);
}

// curl calls the sink, upload source and header hook from C: one that throws
// fails its own request (Internal) instead of ending the process, and the
// client serves the next request. So does a SendAsync callback that throws.
TEST(HttpClientTest, ACallbackThatThrowsFailsItsRequestNotTheProcess) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse resp;
    resp.body = std::string(1000, 'b');
    return resp;
  });
  HttpClient client;
  std::vector<uint8_t> dst(1000);
  HttpRequest sink = Get(server.Endpoint() + "/sink");
  sink.sink = BodySink{.data = dst.data(),
                       .capacity = dst.size(),
                       .write = [](uint64_t, const uint8_t*, size_t) -> Status { throw std::runtime_error("sink"); }};
  auto r = client.Send(sink);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInternal) << r.status();
  EXPECT_NE(r.status().message().find("sink"), std::string::npos) << r.status();

  HttpRequest headers = Get(server.Endpoint() + "/headers");
  headers.on_headers = [](int, const HttpHeaders&) -> Status { throw std::bad_alloc(); };
  EXPECT_EQ(client.Send(headers).status().code(), Code::kInternal);

  HttpRequest put = Get(server.Endpoint() + "/put");
  put.method = "PUT";
  put.upload = [](uint8_t*, size_t) -> size_t { throw 42; };  // not even a std::exception
  put.upload_size = 10;
  EXPECT_EQ(client.Send(put).status().code(), Code::kInternal);

  std::mutex mu;
  std::condition_variable cv;
  bool called = false;
  client.SendAsync(Get(server.Endpoint() + "/async"), [&](Result<HttpResponse>) {
    {
      std::lock_guard lock(mu);
      called = true;
    }
    cv.notify_all();
    throw std::runtime_error("callback");
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return called; }));
  }
  auto after = client.Send(Get(server.Endpoint() + "/after"));  // the I/O thread is still there
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->body.view(), std::string(1000, 'b'));
}

TEST(HttpClientTest, CurlCodeMapping) {
  EXPECT_EQ(CurlCodeToStatus(7 /*COULDNT_CONNECT*/, "GET x").code(), Code::kUnavailable);
  EXPECT_EQ(CurlCodeToStatus(28 /*OPERATION_TIMEDOUT*/, "GET x").code(), Code::kDeadlineExceeded);
  EXPECT_EQ(CurlCodeToStatus(56 /*RECV_ERROR*/, "GET x").code(), Code::kUnavailable);
  EXPECT_EQ(CurlCodeToStatus(18 /*PARTIAL_FILE*/, "GET x").code(), Code::kUnavailable);
  EXPECT_EQ(CurlCodeToStatus(3 /*URL_MALFORMAT*/, "GET x").code(), Code::kInvalidArgument);
  EXPECT_FALSE(CurlCodeToStatus(3, "GET x").retryable());
}

}  // namespace
}  // namespace strata::net
