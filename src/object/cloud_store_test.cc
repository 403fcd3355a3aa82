#include "object/cloud_store.h"

#include <gtest/gtest.h>

#include <thread>

#include "object/mem_store.h"
#include "object/transfer.h"

namespace strata::object {
namespace {

using std::chrono::milliseconds;

TEST(ParseCloudProfile, ParsesUnits) {
  auto p = ParseCloudProfile("ttfb=30ms,bw=25MB/s,jitter=5ms");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->first_byte, milliseconds(30));
  EXPECT_DOUBLE_EQ(p->bytes_per_second_per_connection, 25e6);
  EXPECT_EQ(p->jitter, milliseconds(5));
  EXPECT_EQ(p->seed, 1u);

  p = ParseCloudProfile("bw=1.5MiB/s,ttfb=250us,seed=9");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->bytes_per_second_per_connection, 1.5 * 1048576);
  EXPECT_EQ(p->first_byte, std::chrono::microseconds(250));
  EXPECT_EQ(p->seed, 9u);

  p = ParseCloudProfile("ttfb=0.5s,bw=2GB,jitter=100ns");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->first_byte, milliseconds(500));
  EXPECT_DOUBLE_EQ(p->bytes_per_second_per_connection, 2e9);
  EXPECT_EQ(p->jitter, std::chrono::nanoseconds(100));

  p = ParseCloudProfile("bw=unlimited");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bytes_per_second_per_connection, 0);
  EXPECT_EQ(p->first_byte, milliseconds(30));  // default kept

  EXPECT_TRUE(ParseCloudProfile("").ok());
  EXPECT_TRUE(ParseCloudProfile("bw=100KiB/s,bw=1KB/s").ok());
}

TEST(ParseCloudProfile, RejectsMalformedSpecsNamingThem) {
  for (const char* bad :
       {"ttfb=30", "ttfb=ms", "ttfb=-5ms", "ttfb=30min", "bw=25", "bw=25Mb/s", "latency", "foo=1ms", "seed=-1",
        "seed=", "ttfb=1e3ms", "bw=99999999999999999999GB/s", "ttfb=99999999999s", "jitter=1..2ms"}) {
    auto p = ParseCloudProfile(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(p.status().message().find(bad), std::string::npos) << p.status();
  }
}

TEST(ParseCloudProfile, FormatRoundTrips) {
  for (const char* spec :
       {"ttfb=30ms,bw=25MB/s", "ttfb=1500us,bw=unlimited,jitter=5ms,seed=3", "ttfb=7ns,bw=1B/s", "ttfb=2s,bw=1MiB/s"}) {
    auto p = ParseCloudProfile(spec);
    ASSERT_TRUE(p.ok()) << spec;
    auto again = ParseCloudProfile(FormatCloudProfile(*p));
    ASSERT_TRUE(again.ok()) << FormatCloudProfile(*p);
    EXPECT_EQ(again->first_byte, p->first_byte);
    EXPECT_DOUBLE_EQ(again->bytes_per_second_per_connection, p->bytes_per_second_per_connection);
    EXPECT_EQ(again->jitter, p->jitter);
    EXPECT_EQ(again->seed, p->seed);
  }
}

TEST(CloudStore, EveryRequestPaysFirstByteAndBodiesPayBandwidth) {
  FakeClock clock(/*auto_advance=*/true);
  CloudProfile profile;
  profile.first_byte = milliseconds(30);
  profile.bytes_per_second_per_connection = 1e6;  // 1 MB/s: 1000 bytes = 1 ms
  auto store = EmulateCloud(MakeMemStore(), profile, clock);

  ASSERT_TRUE(store->Put("k", Buffer::Copy(std::string(10000, 'x'))).ok());
  EXPECT_EQ(clock.TotalSlept(), milliseconds(30 + 10));
  ASSERT_TRUE(store->Head("k").ok());
  EXPECT_EQ(clock.TotalSlept(), milliseconds(40 + 30));
  GetOptions o;
  o.range = ByteRange::Of(0, 2000);
  ASSERT_TRUE(store->Get("k", o).ok());
  EXPECT_EQ(clock.TotalSlept(), milliseconds(70 + 30 + 2));
  ASSERT_TRUE(store->List({}).ok());
  ASSERT_TRUE(store->Delete("k").ok());
  EXPECT_EQ(clock.TotalSlept(), milliseconds(102 + 60));
  // Errors pay the latency too (a 404 still takes a round trip).
  EXPECT_EQ(store->Get("k").status().code(), Code::kNotFound);
  EXPECT_EQ(clock.TotalSlept(), milliseconds(162 + 30));
}

TEST(CloudStore, JitterIsSeededAndBounded) {
  auto total = [](uint64_t seed) {
    FakeClock clock(true);
    CloudProfile profile;
    profile.first_byte = milliseconds(10);
    profile.jitter = milliseconds(5);
    profile.seed = seed;
    auto store = EmulateCloud(MakeMemStore(), profile, clock);
    for (int i = 0; i < 100; ++i) store->Head("missing").status().IgnoreError();
    return clock.TotalSlept();
  };
  Duration a = total(7);
  EXPECT_EQ(a, total(7));
  EXPECT_NE(a, total(8));
  EXPECT_GT(a, milliseconds(1000));
  EXPECT_LT(a, milliseconds(1500));
}

TEST(CloudStore, ParallelRangesOverlapTheirWaits) {
  // With a manual clock, N concurrent requests all sleep at once: the wall
  // of simulated time is one request's worth, not N.
  FakeClock clock;
  CloudProfile profile;
  profile.first_byte = milliseconds(30);
  profile.bytes_per_second_per_connection = 0;
  auto inner = MakeMemStore();
  ASSERT_TRUE(inner->Put("k", Buffer::Copy(std::string(8, 'x'))).ok());
  auto store = EmulateCloud(inner, profile, clock);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { EXPECT_TRUE(store->Head("k").ok()); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (clock.Sleepers() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(clock.Sleepers(), 4);
  clock.Advance(milliseconds(30));
  for (auto& t : threads) t.join();
  EXPECT_EQ(clock.Sleepers(), 0);
}

TEST(CloudStore, UrlCarriesTheProfile) {
  FakeClock clock(true);
  auto store = EmulateCloud(MakeMemStore("cloud-url-test"), CloudProfile{}, clock);
  EXPECT_EQ(store->Url(), "mem://cloud-url-test?emulate=ttfb=30ms,bw=25000000B/s");
  DropMemStore("cloud-url-test");
}

TEST(CloudDelay, Arithmetic) {
  CloudProfile p;
  p.first_byte = milliseconds(30);
  p.bytes_per_second_per_connection = 25e6;
  EXPECT_EQ(CloudDelay(p, 0), milliseconds(30));
  EXPECT_EQ(CloudDelay(p, 25'000'000), milliseconds(1030));
  p.bytes_per_second_per_connection = 0;
  EXPECT_EQ(CloudDelay(p, 1ull << 40), milliseconds(30));
}

}  // namespace
}  // namespace strata::object
