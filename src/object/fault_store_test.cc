#include "object/fault_store.h"

#include <gtest/gtest.h>

#include "object/mem_store.h"

namespace strata::object {
namespace {

std::shared_ptr<FaultStore> Make(FaultConfig config, Clock& clock) {
  auto inner = MakeMemStore();
  EXPECT_TRUE(inner->Put("k", Buffer::Copy("value")).ok());
  config.clock = &clock;
  return std::make_shared<FaultStore>(inner, config);
}

TEST(FaultStore, FailNextIsExactAndNotApplied) {
  FakeClock clock(true);
  auto store = Make({}, clock);
  store->FailNext(2, Status(Code::kThrottled, "slow down"));
  EXPECT_EQ(store->Put("new", Buffer::Copy("x")).status().code(), Code::kThrottled);
  EXPECT_EQ(store->Get("k").status().code(), Code::kThrottled);
  EXPECT_TRUE(store->Get("k").ok());
  EXPECT_EQ(store->inner().Head("new").status().code(), Code::kNotFound);  // the failed Put never happened
  EXPECT_EQ(store->counters().scripted, 2u);
  EXPECT_EQ(store->counters().requests, 3u);
}

TEST(FaultStore, PerKeyRulesMatchPrefixOpAndCount) {
  FakeClock clock(true);
  auto store = Make({}, clock);
  ASSERT_TRUE(store->inner().Put("data/a", Buffer::Copy("a")).ok());
  store->FailKey("data/", UnavailableError("disk on fire"), 2, FaultOp::kGet);
  EXPECT_TRUE(store->Head("data/a").ok());  // another op
  EXPECT_TRUE(store->Get("k").ok());        // another key
  EXPECT_EQ(store->Get("data/a").status().code(), Code::kUnavailable);
  EXPECT_EQ(store->Get("data/a").status().code(), Code::kUnavailable);
  EXPECT_TRUE(store->Get("data/a").ok());  // the rule ran out
  store->FailKey("k", Status(Code::kPermissionDenied, "no"));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(store->Delete("k").code(), Code::kPermissionDenied);
  store->ClearRules();
  EXPECT_TRUE(store->Delete("k").ok());
}

TEST(FaultStore, RandomFaultsAreSeededRetryableAndCounted) {
  auto run = [](uint64_t seed) {
    FakeClock clock(true);
    FaultConfig config;
    config.seed = seed;
    config.error_rate = 0.1;
    config.throttle_rate = 0.1;
    config.reset_rate = 0.1;
    config.truncate_rate = 0.1;
    auto store = Make(config, clock);
    std::string outcomes;
    for (int i = 0; i < 400; ++i) {
      auto r = store->Get("k");
      if (r.ok()) {
        EXPECT_EQ(r->data.ToString(), "value");
        outcomes += '.';
      } else {
        EXPECT_TRUE(r.status().retryable()) << r.status();
        EXPECT_TRUE(r.status().code() == Code::kUnavailable || r.status().code() == Code::kThrottled);
        outcomes += r.status().cause().empty() ? 'x' : r.status().cause()[0];
      }
    }
    StoreFaultCounters c = store->counters();
    EXPECT_EQ(c.requests, 400u);
    EXPECT_GT(c.errors, 10u);
    EXPECT_GT(c.throttles, 10u);
    EXPECT_GT(c.resets, 10u);
    EXPECT_GT(c.truncations, 10u);
    EXPECT_EQ(static_cast<size_t>(std::count(outcomes.begin(), outcomes.end(), '.')), 400 - c.injected());
    return outcomes;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

TEST(FaultStore, TruncationAndResetCarryTheirCause) {
  FakeClock clock(true);
  FaultConfig config;
  config.truncate_rate = 1;
  auto store = Make(config, clock);
  auto r = store->Get("k");
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().cause(), "truncated body");
  EXPECT_TRUE(store->Head("k").ok());  // truncation only hits bodies
  config = {};
  config.reset_rate = 1;
  store->SetConfig(config);
  EXPECT_EQ(store->Head("k").status().cause(), "connection reset by peer");
}

TEST(FaultStore, LostRepliesAreAppliedButReportFailure) {
  FakeClock clock(true);
  FaultConfig config;
  config.lost_reply_rate = 1;
  auto store = Make(config, clock);
  auto put = store->Put("applied", Buffer::Copy("yes"));
  EXPECT_EQ(put.status().code(), Code::kUnavailable);
  EXPECT_TRUE(store->inner().Head("applied").ok());
  EXPECT_TRUE(store->Get("applied").ok());  // reads are not affected
  EXPECT_EQ(store->counters().lost_replies, 1u);
}

TEST(FaultStore, StallsSleepOnTheClock) {
  FakeClock clock(true);
  FaultConfig config;
  config.stall_rate = 1;
  config.stall = std::chrono::seconds(3);
  auto store = Make(config, clock);
  EXPECT_TRUE(store->Get("k").ok());
  EXPECT_TRUE(store->Head("k").ok());
  EXPECT_EQ(clock.TotalSlept(), std::chrono::seconds(6));
  EXPECT_EQ(store->counters().stalls, 2u);
  EXPECT_EQ(store->counters().injected(), 0u);
}

TEST(FaultStore, StaleAnswersComeWholeFromTheKeptOlderVersion) {
  FakeClock clock(true);
  FaultConfig config;
  config.stale_rate = 1.0;
  auto store = Make(config, clock);  // "k" = "value"
  auto old = store->Head("k");
  ASSERT_TRUE(old.ok()) << old.status();
  ASSERT_TRUE(store->Put("k", Buffer::Copy("a newer value")).ok());  // through the store: "value" kept
  auto now = store->inner().Head("k");
  ASSERT_TRUE(now.ok());
  ASSERT_NE(now->etag, old->etag);

  auto head = store->Head("k");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->etag, old->etag);
  EXPECT_EQ(head->size, 5u);
  auto got = store->Get("k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data.ToString(), "value");
  EXPECT_EQ(got->info.etag, old->etag);
  GetOptions ranged;
  ranged.range = ByteRange::Of(1, 3);
  got = store->Get("k", ranged);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data.ToString(), "alu");
  EXPECT_EQ(got->offset, 1u);
  // Conditions are the replica's: If-Match on the newer ETag fails, as S3 answers it.
  GetOptions match;
  match.if_match = now->etag;
  EXPECT_EQ(store->Get("k", match).status().code(), Code::kPreconditionFailed);
  ranged.range = ByteRange::Of(7, 3);  // past the old version's end
  EXPECT_EQ(store->Get("k", ranged).status().code(), Code::kOutOfRange);
  EXPECT_EQ(
      store->ReadRangeTo("k", now->etag, 0, 3, [](uint64_t, const uint8_t*, size_t) { return Status::Ok(); }).code(),
      Code::kPreconditionFailed);
  EXPECT_EQ(store->counters().stale, 6u);
  EXPECT_EQ(store->counters().injected(), 6u);

  // Keys without an older version, and stale_rate 0, answer the current version.
  ASSERT_TRUE(store->inner().Put("fresh", Buffer::Copy("x")).ok());
  EXPECT_EQ(store->Get("fresh")->data.ToString(), "x");
  store->SetConfig(FaultConfig{});
  EXPECT_EQ(store->Get("k")->data.ToString(), "a newer value");
  EXPECT_EQ(store->counters().stale, 6u);
}

TEST(FaultStore, KeepVersionAndForgetVersions) {
  FakeClock clock(true);
  FaultConfig config;
  config.stale_rate = 1.0;
  auto store = Make(config, clock);
  EXPECT_EQ(store->KeepVersion("missing").code(), Code::kNotFound);
  ASSERT_TRUE(store->KeepVersion("k").ok());
  ASSERT_TRUE(store->inner().Put("k", Buffer::Copy("replaced underneath")).ok());
  EXPECT_EQ(store->Get("k")->data.ToString(), "value");
  store->ForgetVersions();
  EXPECT_EQ(store->Get("k")->data.ToString(), "replaced underneath");
}

}  // namespace
}  // namespace strata::object
