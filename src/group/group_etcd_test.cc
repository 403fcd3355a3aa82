// Cache group membership through a real etcd (Debian's etcd-server), started
// on 127.0.0.1 ports with its data dir in the test's temp dir and stopped by PID.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "group/etcd_membership.h"
#include "group/group_test_util.h"

extern char** environ;

namespace strata::group {
namespace {

// A port free now (etcd cannot report an ephemeral one back to us).
uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

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
    if (::access("/usr/bin/etcd", X_OK) != 0)
      GTEST_SKIP() << "etcd not installed (scripts/setup.sh installs etcd-server)";
    const std::string client = "http://127.0.0.1:" + std::to_string(FreePort());
    const std::string peer = "http://127.0.0.1:" + std::to_string(FreePort());
    endpoint_ = client;
    std::vector<std::string> args = {"etcd",
                                     "--name",
                                     "t",
                                     "--data-dir",
                                     (dir_ / "etcd").string(),
                                     "--listen-client-urls",
                                     client,
                                     "--advertise-client-urls",
                                     client,
                                     "--listen-peer-urls",
                                     peer,
                                     "--initial-advertise-peer-urls",
                                     peer,
                                     "--initial-cluster",
                                     "t=" + peer};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string log = (dir_ / "etcd.log").string();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = ::posix_spawn(&etcd_pid_, "/usr/bin/etcd", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ASSERT_EQ(rc, 0);
    net::HttpClient http;
    bool up = WaitFor(
        [&] {
          net::HttpRequest req;
          if (::waitpid(etcd_pid_, nullptr, WNOHANG) == etcd_pid_) {
            etcd_pid_ = 0;
            return true;  // exited: reported below
          }
          req.url = endpoint_ + "/health";
          auto r = http.Send(std::move(req));
          return r.ok() && r->status == 200;
        },
        std::chrono::seconds(30));
    ASSERT_TRUE(up && etcd_pid_ > 0) << "etcd did not start; see " << log;
  }
  void TearDown() override {
    memberships_.clear();
    if (etcd_pid_ > 0) {
      ::kill(etcd_pid_, SIGTERM);
      int status = 0;
      ::waitpid(etcd_pid_, &status, 0);
    }
    GroupTest::TearDown();
  }

  // Node i joins group `g` in etcd; its CacheGroup follows the member list.
  void Join(int i, const std::string& g = "train") {
    EtcdOptions o;
    o.endpoint = endpoint_;
    o.group = g;
    o.self = {nodes_[i]->server->address(), nodes_[i]->server->address()};
    o.ttl_seconds = 2;
    o.poll = std::chrono::milliseconds(200);
    auto group = nodes_[i]->group;
    auto m = EtcdMembership::Join(o, [group](std::vector<Member> members) { group->SetMembers(std::move(members)); });
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    memberships_.push_back(std::move(*m));
  }

  std::string endpoint_;
  pid_t etcd_pid_ = 0;
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

}  // namespace
}  // namespace strata::group
