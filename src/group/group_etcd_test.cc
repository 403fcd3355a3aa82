// Cache group membership through a real etcd (Debian's etcd-server), started
// on 127.0.0.1 ports with its data dir in the test's temp dir and stopped by PID.
// The members' safety-net poll is an hour here, so every change the tests wait
// for can only have come through the watch stream.

#include <iostream>

#include "group/etcd_membership.h"
#include "group/group_test_util.h"
#include "testing/background_process.h"

namespace strata::group {
namespace {

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition, with a deadline
  }
  return pred();
}

class GroupEtcdTest : public GroupTest {
 protected:
  void SetUp() override {
    GroupTest::SetUp();
    auto etcd = testing::StartEtcd(dir_.string());
    if (etcd.status().code() == Code::kNotFound) GTEST_SKIP() << etcd.status();
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    endpoint_ = etcd->client_url;
    etcd_ = std::move(etcd->process);
  }
  void TearDown() override {
    memberships_.clear();
    if (etcd_) etcd_->Stop();
    GroupTest::TearDown();
  }

  // Node i joins group `g` in etcd; its CacheGroup follows the member list.
  void Join(int i, const std::string& g = "train") {
    EtcdOptions o;
    o.endpoint = endpoint_;
    o.group = g;
    o.self = {nodes_[i]->server->address(), nodes_[i]->server->address()};
    o.ttl_seconds = 2;
    o.poll = std::chrono::hours(1);  // the watch alone must carry every change
    o.watch_backoff_max = std::chrono::milliseconds(500);
    auto group = nodes_[i]->group;
    auto m = EtcdMembership::Join(o, [group](std::vector<Member> members) { group->SetMembers(std::move(members)); });
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    memberships_.push_back(std::move(*m));
  }

  std::string endpoint_;
  std::unique_ptr<testing::BackgroundProcess> etcd_;
  std::vector<std::unique_ptr<EtcdMembership>> memberships_;
};

TEST_F(GroupEtcdTest, MembersJoinSeeEachOtherAndADeadOneExpires) {
  PutObjects(2, 16ull << 20);
  StartNodes(3, "group-secret", std::chrono::seconds(10), /*static_members=*/false);
  for (int i = 0; i < 3; ++i) Join(i);
  ASSERT_TRUE(WaitFor(
      [&] {
        for (auto& n : nodes_)
          if (n->group->members().size() != 3) return false;
        return true;
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(nodes_[0]->group->members(), nodes_[2]->group->members());

  std::vector<std::thread> readers;
  for (auto& node : nodes_) readers.emplace_back([&, n = node.get()] { ReadAllThrough(*n); });
  for (auto& t : readers) t.join();
  for (auto& [k, c] : bucket_->Snapshot()) EXPECT_EQ(c, 1) << k.first << " at " << k.second;
  EXPECT_EQ(bucket_->Total(), 32);

  // Which blocks node 2 owned, before it dies without leaving (as SIGKILL would).
  const std::string dead = nodes_[2]->server->address();
  std::vector<std::pair<std::string, uint64_t>> owned_by_dead;
  for (auto& [key, data] : objects_) {
    for (uint64_t i = 0; i < data.size() / kBlock; ++i) {
      if (OwnerIndex(key, i) == 2) owned_by_dead.push_back({key, i});
    }
  }
  ASSERT_FALSE(owned_by_dead.empty());
  memberships_[2]->StopWithoutLeaving();
  nodes_[2]->server.reset();
  // Its key disappears when its 2 s lease expires, and the survivors see it.
  ASSERT_TRUE(
      WaitFor([&] { return nodes_[0]->group->members().size() == 2 && nodes_[1]->group->members().size() == 2; },
              std::chrono::seconds(10)));
  for (auto& m : nodes_[0]->group->members()) EXPECT_NE(m.id, dead);
  // Its blocks moved to the survivors, and only its blocks moved.
  for (auto& [key, index] : owned_by_dead) {
    int now = OwnerIndex(key, index);
    EXPECT_TRUE(now == 0 || now == 1) << key << " block " << index;
  }
  // Reads through the survivors stay byte-exact.
  ReadAllThrough(*nodes_[0]);
  ReadAllThrough(*nodes_[1]);
}

TEST_F(GroupEtcdTest, CleanLeaveIsSeenAtOnceAndGroupsAreSeparate) {
  StartNodes(3, "group-secret", std::chrono::seconds(10), /*static_members=*/false);
  Join(0, "a");
  Join(1, "a");
  Join(2, "b");
  ASSERT_TRUE(WaitFor([&] { return nodes_[0]->group->members().size() == 2; }, std::chrono::seconds(10)));
  EXPECT_EQ(nodes_[2]->group->members().size(), 1u);
  memberships_[1].reset();  // revokes its lease
  EXPECT_TRUE(WaitFor([&] { return nodes_[0]->group->members().size() == 1; }, std::chrono::milliseconds(1500)));
}

// A join and a clean leave reach the others through the watch, long before
// the (hour-long) poll; stopping a member with an idle stream is immediate.
TEST_F(GroupEtcdTest, WatchCarriesJoinsAndLeavesAndStopsPromptly) {
  using Clock = std::chrono::steady_clock;
  StartNodes(3, "group-secret", std::chrono::seconds(10), /*static_members=*/false);
  Join(0);
  Join(1);
  ASSERT_TRUE(WaitFor([&] { return nodes_[0]->group->members().size() == 2; }, std::chrono::seconds(5)));
  auto t0 = Clock::now();
  Join(2);
  ASSERT_TRUE(
      WaitFor([&] { return nodes_[0]->group->members().size() == 3 && nodes_[1]->group->members().size() == 3; },
              std::chrono::seconds(5)));
  auto join_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  t0 = Clock::now();
  memberships_[2].reset();  // revokes its lease: a DELETE event
  auto stop_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  ASSERT_TRUE(
      WaitFor([&] { return nodes_[0]->group->members().size() == 2 && nodes_[1]->group->members().size() == 2; },
              std::chrono::seconds(5)));
  auto leave_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  std::cout << "join seen after " << join_ms << " ms, leave after " << leave_ms << " ms, stop took " << stop_ms
            << " ms\n";
  // Through the one watch each opened, not through reads: Join's read is the only one.
  for (int i = 0; i < 2; ++i) {
    auto s = memberships_[i]->stats();
    EXPECT_EQ(s.reads, 1u) << i;
    EXPECT_EQ(s.watches, 1u) << i;
    EXPECT_GE(s.events, 2u) << i;  // node 2's put and delete (node 0 also sees node 1's put)
  }
  // The stream is idle while it stops: waiting on it would take the 5 min re-arm.
  EXPECT_LT(stop_ms, 3000);
  t0 = Clock::now();
  memberships_[0]->StopWithoutLeaving();
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(), 3000);
}

// etcd restarts with its data lost: the members' watches break, reconnect
// with backoff, the members register again under new leases, and a member
// joining afterwards is seen through the new watch (the poll is an hour).
TEST_F(GroupEtcdTest, WatchReconnectsAfterEtcdRestarts) {
  StartNodes(3, "group-secret", std::chrono::seconds(10), /*static_members=*/false);
  Join(0);
  Join(1);
  ASSERT_TRUE(WaitFor([&] { return nodes_[1]->group->members().size() == 2; }, std::chrono::seconds(5)));
  etcd_->Stop();
  etcd_.reset();
  // The same client port (the members' URL), a fresh data dir.
  const std::string peer = "http://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  auto etcd = testing::BackgroundProcess::Start(
      {"/usr/bin/etcd", "--name", "t", "--data-dir", (dir_ / "etcd2").string(), "--listen-client-urls", endpoint_,
       "--advertise-client-urls", endpoint_, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
       "--initial-cluster", "t=" + peer},
      (dir_ / "etcd2.log").string());
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  etcd_ = std::move(*etcd);
  ASSERT_TRUE(etcd_->WaitForLine("ready to serve client requests", std::chrono::seconds(30)).ok()) << etcd_->Log();
  Join(2);
  EXPECT_TRUE(WaitFor(
      [&] {
        for (auto& n : nodes_)
          if (n->group->members().size() != 3) return false;
        return true;
      },
      std::chrono::seconds(15)))
      << nodes_[0]->group->members().size() << " " << nodes_[1]->group->members().size();
}

}  // namespace
}  // namespace strata::group
