// Unit tests of the connection caps (connection_table.h) with fake connections.
#include "net/connection_table.h"

#include <gtest/gtest.h>

namespace strata::net {
namespace {

class FakeConnection : public ServedConnection {
 public:
  void ForceClose() override { closed = true; }
  void StopIfIdle() override {}
  bool closed = false;
};

using Admission = ConnectionTable::Admission;

struct Pool {
  std::vector<std::shared_ptr<FakeConnection>> conns;
  std::shared_ptr<FakeConnection> New() { return conns.emplace_back(std::make_shared<FakeConnection>()); }
};

TEST(ConnectionTableTest, AnIdleConnectionMakesRoomAndABusyOneNever) {
  ConnectionTable table(3, 2);
  Pool pool;
  auto a = pool.New(), b = pool.New();
  ASSERT_EQ(table.Admit(a.get(), a, "10.0.0.1"), Admission::kAdmitted);
  b->MarkIdle();  // idle since after a
  ASSERT_EQ(table.Admit(b.get(), b, "10.0.0.1"), Admission::kAdmitted);
  // The client's cap: its longest-idle connection (a) is closed for the newcomer.
  auto c = pool.New();
  EXPECT_EQ(table.Admit(c.get(), c, "10.0.0.1"), Admission::kAdmittedByEviction);
  EXPECT_TRUE(a->closed);
  EXPECT_FALSE(b->closed);
  EXPECT_EQ(table.size(), 2u);  // a no longer counts while it closes
  // Busy connections are never closed: with b and c busy, a third from that client is refused.
  b->MarkBusy();
  c->MarkBusy();
  auto d = pool.New();
  EXPECT_EQ(table.Admit(d.get(), d, "10.0.0.1"), Admission::kRefused);
  EXPECT_FALSE(b->closed || c->closed);
  // Another client still fits under the listener's cap (3), then that cap evicts the idle one.
  auto e = pool.New(), f = pool.New();
  EXPECT_EQ(table.Admit(e.get(), e, "10.0.0.2"), Admission::kAdmitted);
  EXPECT_EQ(table.Admit(f.get(), f, "10.0.0.3"), Admission::kAdmittedByEviction);
  EXPECT_TRUE(e->closed);
  // Unregistering frees the slot; an evicted one's removal does not count twice.
  table.Remove(a.get());
  table.Remove(e.get());
  EXPECT_EQ(table.size(), 3u);
  table.Remove(b.get());
  EXPECT_EQ(table.size(), 2u);
  auto g = pool.New();
  EXPECT_EQ(table.Admit(g.get(), g, "10.0.0.1"), Admission::kAdmitted);
  EXPECT_EQ(table.Live().size(), 3u);
}

TEST(ConnectionTableTest, OutOfDescriptorsClosesTheLongestIdle) {
  ConnectionTable table(100, 100);
  Pool pool;
  auto old_idle = pool.New();
  ASSERT_EQ(table.Admit(old_idle.get(), old_idle, "c"), Admission::kAdmitted);
  auto busy = pool.New(), newer = pool.New();
  ASSERT_EQ(table.Admit(busy.get(), busy, "c"), Admission::kAdmitted);
  ASSERT_EQ(table.Admit(newer.get(), newer, "c"), Admission::kAdmitted);
  busy->MarkBusy();
  newer->MarkIdle();
  EXPECT_TRUE(table.EvictOldestIdle());
  EXPECT_TRUE(old_idle->closed);
  EXPECT_FALSE(newer->closed || busy->closed);
  EXPECT_TRUE(table.EvictOldestIdle());
  EXPECT_TRUE(newer->closed);
  EXPECT_FALSE(table.EvictOldestIdle());  // only the busy one is left
  for (auto& c : pool.conns) table.Remove(c.get());
  EXPECT_TRUE(table.WaitEmpty(std::chrono::milliseconds(1)));
}

}  // namespace
}  // namespace strata::net
