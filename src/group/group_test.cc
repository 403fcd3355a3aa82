// Cache group integration tests: three members in one process, each with its
// own cache directory and its own peer endpoint on a 127.0.0.1 ephemeral
// port, over one in-memory bucket that counts every ranged GET it answers.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "group/group_test_util.h"

namespace strata::group {
namespace {

TEST_F(GroupTest, EachBlockLeavesTheBucketOnce) {
  PutObjects(4, 16ull << 20);  // 64 MiB, 64 blocks
  StartNodes(3);
  std::vector<std::thread> readers;
  for (auto& node : nodes_) readers.emplace_back([&, n = node.get()] { ReadAllThrough(*n); });
  for (auto& t : readers) t.join();
  auto counts = bucket_->Snapshot();
  EXPECT_EQ(counts.size(), 64u);
  for (auto& [k, c] : counts) EXPECT_EQ(c, 1) << k.first << " at " << k.second << " fetched " << c << " times";
  uint64_t hits = 0, avoided = 0, misses = 0;
  for (auto& node : nodes_) {
    node->cache->Flush();  // disk writes go behind the reads
    hits += node->group->stats().peer_hits;
    misses += node->group->stats().peer_misses;
    avoided += node->service->stats().bucket_fetches_avoided;
    // A member keeps on disk only the blocks it owns.
    EXPECT_LE(node->cache->Stats().disk_blocks, 64u * 2 / 3);
  }
  EXPECT_EQ(misses, 0u);
  EXPECT_GE(hits, 64u * 2 - 64u / 2);  // about 2/3 of 3 x 64 reads come from an owner
  EXPECT_GT(avoided, 0u);
  uint64_t disk_total = 0;
  for (auto& node : nodes_) disk_total += node->cache->Stats().disk_blocks;
  EXPECT_EQ(disk_total, 64u);  // the group holds each block once on disk
  // Read again through everyone: nothing more from the bucket.
  for (auto& node : nodes_) ReadAllThrough(*node);
  EXPECT_EQ(bucket_->Total(), 64);
}

TEST_F(GroupTest, CorruptedPeerBlockIsDetectedAndReadFromTheBucket) {
  PutObjects(1, 16ull << 20);
  StartNodes(3);
  // The liar is the other member owning more of the 16 blocks (ownership follows the ephemeral
  // ports: one member owns none of them about once in 650 runs).
  int owned[3] = {0, 0, 0};
  for (uint64_t i = 0; i < 16; ++i) {
    const int owner = OwnerIndex("data/shard-0", i);
    ASSERT_GE(owner, 0);
    ++owned[owner];
  }
  const size_t liar = owned[0] >= owned[2] ? 0 : 2;
  ASSERT_GT(owned[liar], 0);
  nodes_[liar]->corrupt = true;
  ReadAllThrough(*nodes_[1]);  // byte-exact despite the lying owner
  auto s = nodes_[1]->group->stats();
  EXPECT_GE(s.bad_checksums, 1u);
  EXPECT_TRUE(nodes_[1]->group->IsSuspect(nodes_[liar]->server->address()));
  // The corrupt block was never cached by the reader: a fresh read is still exact.
  nodes_[liar]->corrupt = false;
  ReadAllThrough(*nodes_[1]);
}

TEST_F(GroupTest, WrongSecretIsRefused) {
  PutObjects(1, 4ull << 20);
  StartNodes(1);
  const std::string etag = bucket_->Head("data/shard-0")->etag;
  const std::string target =
      FormatBlockTarget(BlockRequest{bucket_->Url(), "data/shard-0", etag, kBlock, 0, 4ull << 20});
  net::HttpClient http;
  std::string body;
  auto send = [&](const std::string& secret, int64_t t) {
    net::HttpRequest req;
    req.url = "http://" + nodes_[0]->server->address() + target;
    req.headers.emplace_back(std::string(kPeerTimeHeader), std::to_string(t));
    req.headers.emplace_back(std::string(kPeerAuthHeader), SignPeerRequest(secret, "GET", target, t));
    auto r = http.Send(std::move(req));
    EXPECT_TRUE(r.ok());
    body = r.ok() ? r->body.ToString() : "";
    return r.ok() ? r->status : 0;
  };
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(RealClock().WallNow().time_since_epoch()).count();
  EXPECT_EQ(send("not-the-secret", now), 403);
  const std::string wrong_secret_body = body;
  EXPECT_EQ(send(kGroupSecret, now - 600), 403);  // stale: a replay
  // The same words for both: a stranger learns neither which check failed nor this member's clock.
  EXPECT_EQ(body, wrong_secret_body);
  EXPECT_EQ(body.find("600"), std::string::npos) << body;
  EXPECT_EQ(bucket_->Total(), 0);  // refused before anything was read
  EXPECT_EQ(send(kGroupSecret, now), 200);
  EXPECT_EQ(nodes_[0]->service->stats().refused, 2u);

  // A member configured with another secret gets nothing from the group, and still reads correctly.
  GroupOptions go;
  go.self = "stranger";
  go.secret = "wrong";
  auto stranger = std::make_shared<CacheGroup>(go);
  stranger->SetMembers(Members());
  cache::BlockId id{bucket_->Url(), "data/shard-0", etag, kBlock, 0};
  auto r = stranger->FetchRemote(id, kBlock, 4ull << 20);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(stranger->stats().peer_misses, 1u);
}

TEST_F(GroupTest, StoppedMemberIsBypassedWithinTheDeadline) {
  PutObjects(2, 16ull << 20);
  StartNodes(3, kGroupSecret, std::chrono::milliseconds(1000));
  const std::string gone = nodes_[2]->server->address();
  nodes_[2]->server.reset();  // stopped: its address refuses connections
  auto start = std::chrono::steady_clock::now();
  ReadAllThrough(*nodes_[0]);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_TRUE(nodes_[0]->group->IsSuspect(gone));
  // Later blocks do not even try. New objects, read once the member is known
  // suspect: the first read's blocks may all have been in flight together.
  const std::string late(16ull << 20, 'z');
  ASSERT_TRUE(bucket_->Put("data/late", Buffer::Copy(late)).ok());
  auto r = nodes_[0]->store->Get("data/late");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->data.view() == late);
  EXPECT_GE(nodes_[0]->group->stats().suspect_skips, 1u);
}

TEST_F(GroupTest, HungMemberCostsOneDeadline) {
  PutObjects(2, 16ull << 20);
  StartNodes(2, kGroupSecret, std::chrono::milliseconds(500));
  // A member that accepts connections (the kernel's backlog) but never answers.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 64), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string hung = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto members = Members();
  members.push_back({hung, hung});
  nodes_[0]->group->SetMembers(members);
  auto start = std::chrono::steady_clock::now();
  ReadAllThrough(*nodes_[0]);
  auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  // Blocks of one read are fetched in parallel: the first asks each wait one
  // deadline, then the member is suspect and skipped.
  EXPECT_LT(took, std::chrono::milliseconds(4000));
  EXPECT_TRUE(nodes_[0]->group->IsSuspect(hung));
}

// Listens and never answers (accepting nothing): a hung member's address.
int ListenWithoutAnswering(std::string* address) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) return -1;
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  return fd;
}

// One timeout cannot tell a busy owner from a hung one: it is suspect for
// 2 s, then 4 s after a second timeout in a row (a hung one is asked less and
// less often), while a member that refuses connections is suspect for 30 s.
TEST(GroupSuspicion, TimeoutsBackOffWhileRefusalsCountAtOnce) {
  FakeClock clock;
  GroupOptions o;
  o.self = "me";
  o.secret = kGroupSecret;
  o.deadline = std::chrono::milliseconds(200);
  o.clock = &clock;
  CacheGroup group(o);
  std::string hung;
  const int hung_fd = ListenWithoutAnswering(&hung);
  ASSERT_GE(hung_fd, 0);
  group.SetMembers({{hung, hung}});
  const cache::BlockId id{"mem://bucket", "key", "etag", 4096, 0};

  EXPECT_EQ(group.FetchRemote(id, 4096, 4096).status().code(), Code::kDeadlineExceeded);
  EXPECT_TRUE(group.IsSuspect(hung));
  clock.Advance(std::chrono::milliseconds(2100));
  EXPECT_FALSE(group.IsSuspect(hung)) << "a first timeout costs 2 s, not 30";
  EXPECT_EQ(group.FetchRemote(id, 4096, 4096).status().code(), Code::kDeadlineExceeded);
  clock.Advance(std::chrono::milliseconds(2100));
  EXPECT_TRUE(group.IsSuspect(hung)) << "a second timeout in a row doubles it";
  clock.Advance(std::chrono::milliseconds(2000));
  EXPECT_FALSE(group.IsSuspect(hung));
  ::close(hung_fd);

  std::string gone;
  const int gone_fd = ListenWithoutAnswering(&gone);
  ASSERT_GE(gone_fd, 0);
  ::close(gone_fd);  // the port now refuses connections
  group.SetMembers({{gone, gone}});
  auto refused = group.FetchRemote(id, 4096, 4096);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().code(), Code::kDeadlineExceeded) << refused.status();
  clock.Advance(std::chrono::seconds(29));
  EXPECT_TRUE(group.IsSuspect(gone));
  clock.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(group.IsSuspect(gone));
}

// Opens a TCP connection to `address` ("127.0.0.1:port"); -1 on failure.
int Connect(const std::string& address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

// Whether the server closed `fd` (a read returns end of file) within `deadline`.
bool ClosedWithin(int fd, std::chrono::milliseconds deadline) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(deadline.count())) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

// Strangers holding connections open, or trickling a request's headers,
// keep no peer out of a member's endpoint: at the connection caps the
// longest-idle connection is closed for a newcomer, and headers must arrive
// within the header deadline.
TEST_F(GroupTest, IdleAndSlowConnectionsDoNotKeepPeersOut) {
  PutObjects(1, 4ull << 20);
  PeerServerOptions po;
  po.secret = kGroupSecret;
  po.max_connections = 64;
  po.max_connections_per_client = 48;
  po.header_timeout = std::chrono::milliseconds(500);
  PeerService service(po);
  cache::CacheOptions co;
  co.block_size = kBlock;
  co.ram_bytes = 64ull << 20;
  auto cache = cache::BlockCache::Open(co);
  ASSERT_TRUE(cache.ok());
  auto store = std::make_shared<cache::CachedStore>(bucket_, *cache);
  service.AddStore(store.get());
  auto server = PeerServer::Start(service);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();

  // A header sent a byte at a time is cut at the deadline (500 ms), not kept for the 30 s idle
  // time; the bound leaves a loaded machine room.
  int slow = Connect(address);
  ASSERT_GE(slow, 0);
  ASSERT_EQ(::send(slow, "G", 1, MSG_NOSIGNAL), 1);
  EXPECT_TRUE(ClosedWithin(slow, std::chrono::seconds(10)));
  ::close(slow);

  // 300 idle connections from one address: the per-client and listener caps evict the oldest.
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    int fd = Connect(address);
    ASSERT_GE(fd, 0) << i;
    idle.push_back(fd);
  }
  ASSERT_TRUE(WaitFor([&] { return (*server)->stats().evicted >= 300 - 48; }, std::chrono::seconds(10)))
      << (*server)->stats().evicted;
  EXPECT_LE((*server)->stats().connections, 48u);
  // A signed request still gets its block, at once.
  const std::string etag = bucket_->Head("data/shard-0")->etag;
  const std::string target =
      FormatBlockTarget(BlockRequest{bucket_->Url(), "data/shard-0", etag, kBlock, 0, 4ull << 20});
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(RealClock().WallNow().time_since_epoch()).count();
  net::HttpRequest req;
  req.url = "http://" + address + target;
  req.headers.emplace_back(std::string(kPeerTimeHeader), std::to_string(now));
  req.headers.emplace_back(std::string(kPeerAuthHeader), SignPeerRequest(kGroupSecret, "GET", target, now));
  const auto t0 = std::chrono::steady_clock::now();
  net::HttpClient http;
  auto r = http.Send(std::move(req));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.size(), kBlock);
  // Not queued behind the idle ones until their 30 s idle time (milliseconds here; room for load).
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  for (int fd : idle) ::close(fd);
}

}  // namespace
}  // namespace strata::group
