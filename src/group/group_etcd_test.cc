// Cache group membership through a real etcd (Debian's etcd-server), started
// on 127.0.0.1 ports with its data dir in the test's temp dir and stopped by PID.
// The members' safety-net poll is an hour here, so every change the tests wait
// for can only have come through the watch stream. Also: records written by
// someone without the group secret, a member started while etcd is down, and
// etcd over TLS with client certificates or etcd users (a throwaway CA made
// with openssl).

#include <poll.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "group/etcd_membership.h"
#include "group/group_test_util.h"
#include "group/member_record.h"
#include "testing/background_process.h"

namespace strata::group {
namespace {

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
    auto m = TryJoin(i, g, Endpoint());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    memberships_.push_back(std::move(*m));
  }
  EtcdEndpoint Endpoint() const {
    EtcdEndpoint e;
    e.url = endpoint_;
    return e;
  }
  Result<std::unique_ptr<EtcdMembership>> TryJoin(int i, const std::string& g, const EtcdEndpoint& endpoint) {
    EtcdOptions o;
    o.endpoint = endpoint;
    o.secret = kGroupSecret;
    o.group = g;
    o.self = {nodes_[i]->server->address(), nodes_[i]->server->address()};
    o.ttl_seconds = 2;
    o.poll = std::chrono::hours(1);  // the watch alone must carry every change
    o.watch_backoff_max = std::chrono::milliseconds(500);
    auto group = nodes_[i]->group;
    return EtcdMembership::Join(o, [group](std::vector<Member> members) { group->SetMembers(std::move(members)); });
  }
  bool AllSee(size_t n, std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    return WaitFor(
        [&] {
          for (auto& node : nodes_)
            if (node->group->members().size() != n) return false;
          return true;
        },
        deadline);
  }
  // POSTs a JSON body to etcd (test setup: puts, users, roles).
  Status EtcdPost(const std::string& path, const nlohmann::json& body, const net::HttpClientOptions& h = {},
                  const std::string& url = "") {
    net::HttpClient http(h);
    net::HttpRequest req;
    req.method = "POST";
    req.url = (url.empty() ? endpoint_ : url) + path;
    req.body = Buffer::Copy(body.dump());
    STRATA_ASSIGN_OR_RETURN(auto resp, http.Send(std::move(req)));
    if (resp.status != 200)
      return UnavailableError(path + ": HTTP " + std::to_string(resp.status), resp.body.ToString());
    return Status::Ok();
  }

  // Puts many keys, 100 per transaction (etcd takes up to 128 operations in one).
  Status PutMany(const std::vector<std::pair<std::string, std::string>>& kvs) {
    for (size_t at = 0; at < kvs.size(); at += 100) {
      nlohmann::json ops = nlohmann::json::array();
      for (size_t i = at; i < std::min(kvs.size(), at + 100); ++i) {
        const auto& [k, v] = kvs[i];
        ops.push_back({{"request_put",
                        {{"key", Base64Encode(k.data(), k.size())}, {"value", Base64Encode(v.data(), v.size())}}}});
      }
      STRATA_RETURN_IF_ERROR(EtcdPost("/v3/kv/txn", {{"success", ops}}));
    }
    return Status::Ok();
  }
  uint16_t Port() const { return static_cast<uint16_t>(std::stoi(endpoint_.substr(endpoint_.rfind(':') + 1))); }

  std::string endpoint_;
  std::unique_ptr<testing::BackgroundProcess> etcd_;
  std::vector<std::unique_ptr<EtcdMembership>> memberships_;
};

TEST_F(GroupEtcdTest, MembersJoinSeeEachOtherAndADeadOneExpires) {
  PutObjects(2, 16ull << 20);
  StartNodes(3, kGroupSecret, std::chrono::seconds(10), /*static_members=*/false);
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
  StartNodes(3, kGroupSecret, std::chrono::seconds(10), /*static_members=*/false);
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
  // Milliseconds through the watch; the bounds leave a loaded machine room and stay far from the
  // hour-long poll and the stream's 5 min re-arm.
  constexpr auto kLongBeforeThePoll = std::chrono::seconds(30);
  StartNodes(3, kGroupSecret, std::chrono::seconds(10), /*static_members=*/false);
  Join(0);
  Join(1);
  ASSERT_TRUE(WaitFor([&] { return nodes_[0]->group->members().size() == 2; }, kLongBeforeThePoll));
  auto t0 = Clock::now();
  Join(2);
  ASSERT_TRUE(
      WaitFor([&] { return nodes_[0]->group->members().size() == 3 && nodes_[1]->group->members().size() == 3; },
              kLongBeforeThePoll));
  auto join_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  t0 = Clock::now();
  memberships_[2].reset();  // revokes its lease: a DELETE event
  auto stop_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  ASSERT_TRUE(
      WaitFor([&] { return nodes_[0]->group->members().size() == 2 && nodes_[1]->group->members().size() == 2; },
              kLongBeforeThePoll));
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
  EXPECT_LT(stop_ms, 30000);
  t0 = Clock::now();
  memberships_[0]->StopWithoutLeaving();
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(), 30000);
}

// etcd restarts with its data lost: the members' watches break, reconnect
// with backoff, the members register again under new leases, and a member
// joining afterwards is seen through the new watch (the poll is an hour).
TEST_F(GroupEtcdTest, WatchReconnectsAfterEtcdRestarts) {
  StartNodes(3, kGroupSecret, std::chrono::seconds(10), /*static_members=*/false);
  Join(0);
  Join(1);
  ASSERT_TRUE(WaitFor([&] { return nodes_[1]->group->members().size() == 2; }, std::chrono::seconds(5)));
  etcd_->Stop();
  etcd_.reset();
  // The same client port (the members' URL), a fresh data dir.
  auto etcd = testing::StartEtcd(dir_.string(), {.client_port = Port(), .name = "etcd2"});
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  etcd_ = std::move(etcd->process);
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

// Someone who can write the group's prefix in etcd but has not the secret:
// an old-style record, records signed with another secret, a real member's
// record copied under another key, and 3,000 fakes pointing at an address
// that never answers. None becomes a member: nobody asks the fakes, reads
// stay byte-exact and fast, and the rejections are counted.
TEST_F(GroupEtcdTest, RecordsWithoutTheSecretAddNoMember) {
  PutObjects(2, 16ull << 20);
  StartNodes(2, kGroupSecret, std::chrono::seconds(10), /*static_members=*/false);
  Join(0);
  Join(1);
  ASSERT_TRUE(AllSee(2));
  // The hostile address: it listens, and poll() tells whether anyone ever connected.
  int hostile_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(hostile_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(hostile_fd, 64), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(hostile_fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string hostile = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  const std::string prefix = EtcdMembership::Prefix("train");
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(RealClock().WallNow().time_since_epoch()).count();
  const std::string other_secret = "not-the-group-secret-0123456789abcdef";
  std::vector<std::pair<std::string, std::string>> kvs = {
      {prefix + hostile, hostile},  // the unsigned format members used to write
      {prefix + hostile + "x", FormatMemberRecord(other_secret, "train", {hostile + "x", hostile, now, now + 60})}};
  // A real member's record, copied under the hostile id: its MAC names the real id.
  const std::string real = nodes_[1]->server->address();
  kvs.push_back({prefix + hostile + "c", FormatMemberRecord(kGroupSecret, "train", {real, real, now, now + 60})});
  for (int i = 0; i < 3000; ++i) {
    const std::string id = "fake-" + std::to_string(i);
    kvs.push_back({prefix + id, FormatMemberRecord(other_secret, "train", {id, hostile, now, now + 60})});
  }
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(PutMany(kvs).ok());
  ASSERT_TRUE(WaitFor([&] { return memberships_[0]->stats().rejected >= kvs.size(); }, std::chrono::seconds(20)))
      << memberships_[0]->stats().rejected;
  std::cout << "3,003 hostile records rejected by a member within "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
            << " ms of the first put\n";
  EXPECT_EQ(nodes_[0]->group->members().size(), 2u);
  EXPECT_EQ(nodes_[1]->group->members().size(), 2u);
  // A fresh read of the prefix (as `strata warm` does) finds the two members only.
  EtcdOptions lo;
  lo.endpoint = Endpoint();
  lo.group = "train";
  lo.secret = kGroupSecret;
  auto listed = EtcdMembership::List(lo);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 2u);
  t0 = std::chrono::steady_clock::now();
  ReadAllThrough(*nodes_[0]);
  ReadAllThrough(*nodes_[1]);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  for (auto& [k, c] : bucket_->Snapshot()) EXPECT_EQ(c, 1) << k.first << " at " << k.second;
  pollfd p{hostile_fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "a member connected to the hostile address";
  ::close(hostile_fd);
}

// etcd is down when the members start: they serve alone (reads from the
// bucket), then join when it comes up, without a restart.
TEST_F(GroupEtcdTest, StartsAloneWhileEtcdIsDownAndJoinsWhenItAnswers) {
  PutObjects(1, 8ull << 20);
  StartNodes(2, kGroupSecret, std::chrono::seconds(10), /*static_members=*/false);
  const uint16_t port = Port();
  etcd_->Stop();
  etcd_.reset();
  auto t0 = std::chrono::steady_clock::now();
  Join(0);
  Join(1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "a start must not wait for etcd";
  EXPECT_FALSE(memberships_[0]->registered());
  EXPECT_TRUE(nodes_[0]->group->members().empty());
  ReadAllThrough(*nodes_[0]);  // alone: every block from the bucket
  EXPECT_EQ(nodes_[0]->group->stats().peer_hits + nodes_[0]->group->stats().peer_misses, 0u);
  auto etcd = testing::StartEtcd(dir_.string(), {.client_port = port, .name = "etcd-late"});
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  etcd_ = std::move(etcd->process);
  ASSERT_TRUE(AllSee(2, std::chrono::seconds(20)));
  EXPECT_TRUE(memberships_[0]->registered() && memberships_[1]->registered());
  ReadAllThrough(*nodes_[1]);  // now through the group
  EXPECT_GT(nodes_[1]->group->stats().peer_hits, 0u);
}

class GroupEtcdTlsTest : public GroupEtcdTest {
 protected:
  void SetUp() override {
    GroupTest::SetUp();  // no plain etcd: each test starts its own
    auto tls = testing::MakeTestTlsFiles(dir_.string());
    ASSERT_TRUE(tls.ok()) << tls.status();
    tls_ = *tls;
  }
  void StartTlsEtcd(bool client_certs) {
    testing::EtcdOptions eo;
    eo.cert_file = tls_.server_cert;
    eo.key_file = tls_.server_key;
    if (client_certs) eo.client_ca_file = tls_.ca;
    auto etcd = testing::StartEtcd(dir_.string(), eo);
    if (etcd.status().code() == Code::kNotFound) GTEST_SKIP() << etcd.status();
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    endpoint_ = etcd->client_url;
    etcd_ = std::move(etcd->process);
  }
  EtcdEndpoint TlsEndpoint() const {
    EtcdEndpoint e;
    e.url = endpoint_;
    e.ca_file = tls_.ca;
    return e;
  }
  testing::TlsFiles tls_;
};

TEST_F(GroupEtcdTlsTest, ClientCertificates) {
  ASSERT_NO_FATAL_FAILURE(StartTlsEtcd(/*client_certs=*/true));
  ASSERT_EQ(endpoint_.rfind("https://", 0), 0u);
  StartNodes(3, kGroupSecret, std::chrono::seconds(10), /*static_members=*/false);
  EtcdEndpoint e = TlsEndpoint();
  e.cert_file = tls_.client_cert;
  e.key_file = tls_.client_key;
  for (int i = 0; i < 2; ++i) {
    auto m = TryJoin(i, "train", e);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE((*m)->registered());
    memberships_.push_back(std::move(*m));
  }
  EXPECT_TRUE(WaitFor([&] { return nodes_[0]->group->members().size() == 2; }, std::chrono::seconds(10)));
  // Without the CA, etcd's certificate does not verify: a setting to fix, refused at once.
  EtcdEndpoint no_ca = e;
  no_ca.ca_file.clear();
  auto refused = TryJoin(2, "train", no_ca);
  ASSERT_FALSE(refused.ok());
  EXPECT_FALSE(refused.status().retryable()) << refused.status();
  // Without a client certificate etcd does not talk to it: it never registers.
  EtcdEndpoint no_cert = TlsEndpoint();
  auto anonymous = TryJoin(2, "train", no_cert);
  if (anonymous.ok()) {
    EXPECT_FALSE((*anonymous)->registered());
    memberships_.push_back(std::move(*anonymous));
  }
  EXPECT_FALSE(WaitFor([&] { return nodes_[0]->group->members().size() > 2; }, std::chrono::seconds(2)));
  // A client key others may read is refused before anything is sent.
  ASSERT_EQ(::chmod(tls_.client_key.c_str(), 0644), 0);
  EXPECT_EQ(TryJoin(2, "train", e).status().code(), Code::kPermissionDenied);
}

TEST_F(GroupEtcdTlsTest, EtcdUsers) {
  ASSERT_NO_FATAL_FAILURE(StartTlsEtcd(/*client_certs=*/false));
  net::HttpClientOptions h;
  h.ca_bundle = tls_.ca;
  // root (etcd needs it to enable auth), and a user whose role may touch the group's prefix only.
  const std::string prefix = EtcdMembership::Prefix("train");
  auto b64 = [](const std::string& s) { return Base64Encode(s.data(), s.size()); };
  ASSERT_TRUE(EtcdPost("/v3/auth/user/add", {{"name", "root"}, {"password", "root-password"}}, h).ok());
  ASSERT_TRUE(EtcdPost("/v3/auth/user/grant", {{"user", "root"}, {"role", "root"}}, h).ok());
  ASSERT_TRUE(EtcdPost("/v3/auth/role/add", {{"name", "strata-train"}}, h).ok());
  ASSERT_TRUE(EtcdPost("/v3/auth/role/grant",
                       {{"name", "strata-train"},
                        {"perm",
                         {{"permType", "READWRITE"},
                          {"key", b64(prefix)},
                          {"range_end", b64(prefix.substr(0, prefix.size() - 1) + "0")}}}},
                       h)
                  .ok());
  ASSERT_TRUE(EtcdPost("/v3/auth/user/add", {{"name", "member"}, {"password", "member-password"}}, h).ok());
  ASSERT_TRUE(EtcdPost("/v3/auth/user/grant", {{"user", "member"}, {"role", "strata-train"}}, h).ok());
  ASSERT_TRUE(EtcdPost("/v3/auth/enable", nlohmann::json::object(), h).ok());
  auto user_file = [&](const std::string& name, const std::string& text, mode_t mode) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text << "\n";
    EXPECT_EQ(::chmod(p.c_str(), mode), 0);
    EtcdEndpoint e = TlsEndpoint();
    e.user_file = p;
    return e;
  };
  StartNodes(3, kGroupSecret, std::chrono::seconds(10), /*static_members=*/false);
  const EtcdEndpoint good = user_file("user", "member:member-password", 0600);
  for (int i = 0; i < 2; ++i) {
    auto m = TryJoin(i, "train", good);
    ASSERT_TRUE(m.ok()) << m.status();
    memberships_.push_back(std::move(*m));
  }
  EXPECT_TRUE(WaitFor([&] { return nodes_[0]->group->members().size() == 2; }, std::chrono::seconds(10)));
  auto wrong = TryJoin(2, "train", user_file("wrong", "member:not-the-password", 0600));
  EXPECT_EQ(wrong.status().code(), Code::kPermissionDenied) << wrong.status();
  EXPECT_EQ(wrong.status().ToString().find("not-the-password"), std::string::npos);
  auto loose = TryJoin(2, "train", user_file("loose", "member:member-password", 0644));
  EXPECT_EQ(loose.status().code(), Code::kPermissionDenied) << loose.status();
  // The role covers this group only: another group's prefix is refused.
  auto other = TryJoin(2, "other", good);
  EXPECT_EQ(other.status().code(), Code::kPermissionDenied) << other.status();
}

}  // namespace
}  // namespace strata::group
