// `strata serve --cache-group`: three gateway processes share one cache over
// one Ceph RGW bucket. An nginx in front of RGW (testing::CloudProxy, no delay,
// no rate cap) logs every request the members make, so fetches are counted at
// the backend, not by the members themselves.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/buffer.h"
#include "net/http_client.h"
#include "object/store_url.h"
#include "testing/background_process.h"
#include "testing/s3_server.h"
#include "testing/subprocess.h"

namespace strata::group {
namespace {

namespace fs = std::filesystem;

constexpr char kSecret[] = "group-serve-test-secret-0123456789";
constexpr uint64_t kBlock = 4ull << 20;
constexpr int kObjects = 4;
constexpr uint64_t kObjectSize = 64ull << 20;  // 4 x 64 MiB = 256 MiB, 64 blocks
constexpr uint64_t kBlocksPerObject = kObjectSize / kBlock;
constexpr auto kPeerDeadline = std::chrono::seconds(2);  // GroupMember's default

Buffer Pattern(uint64_t seed, uint64_t size) {
  std::string s(size, '\0');
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (uint64_t i = 0; i + 8 <= size; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(s.data() + i, &x, 8);
  }
  return Buffer::FromString(std::move(s));
}

class GroupServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto backend = testing::StartProxiedRgw({.ttfb_ms = 0, .rate = "0", .access_log = true});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = new testing::ProxiedRgw(std::move(*backend));
    rgw_ = backend_->rgw.get();
    proxy_ = backend_->proxy.get();
    ASSERT_TRUE(backend_->ExportCredentials().ok());
    auto bucket = object::OpenStore(rgw_->StoreUrl());
    ASSERT_TRUE(bucket.ok()) << bucket.status();
    for (const char* set : {"all", "kill", "etcd", "warm"}) {
      for (int i = 0; i < kObjects; ++i) {
        std::string key = std::string(set) + "/obj-" + std::to_string(i);
        Buffer data = Pattern(std::hash<std::string>()(key), kObjectSize);
        ASSERT_TRUE((*bucket)->Put(key, data, {}).ok()) << key;
        data_[key] = data;
      }
    }
  }
  static void TearDownTestSuite() {
    delete backend_;  // the proxy first
    backend_ = nullptr, proxy_ = nullptr, rgw_ = nullptr;
  }

  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-grpserve-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "secret") << kSecret << "\n";
    fs::permissions(dir_ / "secret", fs::perms::owner_read | fs::perms::owner_write);  // a secret file must be private
  }
  void TearDown() override {
    for (auto& m : members_) {
      if (m.process && !m.process->Exited()) {
        EXPECT_EQ(m.process->Stop(), 0) << m.process->Log();
      }
    }
    members_.clear();
    fs::remove_all(dir_);
  }

  struct MemberProc {
    std::unique_ptr<testing::BackgroundProcess> process;
    std::string endpoint;  // the gateway
    std::string peer;      // the peer endpoint
  };

  // Starts n members over the proxied bucket in group `url` (nullopt: a static list of their peer ports).
  void StartMembers(int n, std::optional<std::string> url = std::nullopt) {
    const testing::StaticGroup ports = testing::MakeStaticGroup(n);
    const std::vector<std::string>& peers = ports.peers;
    const std::string group = url.value_or(ports.url);
    const std::string backend = backend_->StoreUrl();
    for (int i = 0; i < n; ++i) {
      const fs::path cache = dir_ / ("cache" + std::to_string(i));
      auto serve =
          testing::StartStrataServe({"--backend", backend, "--listen", "127.0.0.1:0", "--public-read", rgw_->bucket(),
                                     "--cache-ram", "64MiB", "--cache-dir", cache.string(), "--cache-group", group,
                                     "--peer-listen", peers[i], "--group-secret-file", (dir_ / "secret").string()},
                                    (dir_ / ("member" + std::to_string(i) + ".log")).string(), rgw_->ClientEnv());
      ASSERT_TRUE(serve.ok()) << serve.status();
      members_.push_back({std::move(serve->process), serve->endpoint, peers[i]});
    }
  }

  using Fetched = testing::CloudProxy::Fetched;
  // GETs and bytes of each key under `set`/ at the backend, counted by nginx.
  static std::map<std::string, Fetched> BackendGets(const std::string& set) {
    return proxy_->GetsFromAccessLog(rgw_->bucket(), set + "/");
  }

  // GET of [begin, begin+len) of `key` through a member; checks every byte.
  static Status ReadAndCheck(net::HttpClient& http, const std::string& endpoint, const std::string& key, uint64_t begin,
                             uint64_t len) {
    net::HttpRequest req;
    req.url = endpoint + "/" + rgw_->bucket() + "/" + key;
    req.headers.emplace_back("Range", "bytes=" + std::to_string(begin) + "-" + std::to_string(begin + len - 1));
    req.timeout = std::chrono::seconds(60);
    STRATA_ASSIGN_OR_RETURN(auto resp, http.Send(std::move(req)));
    if (resp.status != 206) return InternalError(key + ": HTTP " + std::to_string(resp.status));
    const Buffer& want = data_.at(key);
    if (resp.body.size() != len || std::memcmp(resp.body.data(), want.data() + begin, len) != 0) {
      return CorruptionError(key + " bytes " + std::to_string(begin) + "+" + std::to_string(len) + " differ");
    }
    return Status::Ok();
  }

  static uint64_t Metric(const std::string& endpoint, const std::string& name) {
    net::HttpClient http;
    net::HttpRequest req;
    req.url = endpoint + "/metrics";
    auto r = http.Send(std::move(req));
    if (!r.ok()) return 0;
    std::istringstream in(r->body.ToString());
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with(name + " ")) return std::stoull(line.substr(name.size() + 1));
    }
    return 0;
  }

  // Every member reads all of `set` concurrently (each from a different object first), in 8 MiB ranges.
  void ReadEverythingThroughEveryMember(const std::string& set) {
    std::vector<std::thread> readers;
    std::vector<Status> errors(members_.size());
    for (size_t m = 0; m < members_.size(); ++m) {
      readers.emplace_back([&, m] {
        net::HttpClient http;
        for (int j = 0; j < kObjects && errors[m].ok(); ++j) {
          std::string key = set + "/obj-" + std::to_string((j + m) % kObjects);
          for (uint64_t off = 0; off < kObjectSize && errors[m].ok(); off += 2 * kBlock) {
            errors[m] = ReadAndCheck(http, members_[m].endpoint, key, off, 2 * kBlock);
          }
        }
      });
    }
    for (auto& t : readers) t.join();
    for (size_t m = 0; m < members_.size(); ++m) EXPECT_TRUE(errors[m].ok()) << "member " << m << ": " << errors[m];
  }

  void ExpectEachBlockFetchedOnce(const std::string& set) {
    auto gets = BackendGets(set);
    uint64_t total = 0, bytes = 0;
    for (int i = 0; i < kObjects; ++i) {
      std::string key = set + "/obj-" + std::to_string(i);
      // A block is fetched in fetch_part_size (1 MiB) ranged GETs: each byte exactly once.
      EXPECT_EQ(gets[key].bytes, kObjectSize) << key << " bytes sent by the backend";
      EXPECT_EQ(gets[key].gets, static_cast<int>(kObjectSize >> 20)) << key << " GETs at the backend";
      total += gets[key].gets;
      bytes += gets[key].bytes;
    }
    uint64_t hits = 0, misses = 0;
    for (auto& m : members_) {
      hits += Metric(m.endpoint, "strata_group_peer_hits_total");
      misses += Metric(m.endpoint, "strata_group_peer_misses_total");
    }
    // Each member reads every block once: 2 of 3 reads of a block come from its owner.
    EXPECT_EQ(misses, 0u);
    EXPECT_EQ(hits, (members_.size() - 1) * kObjects * kBlocksPerObject);
    std::cout << "[figures] " << set << ": " << members_.size() << " members read " << kObjects * kObjectSize / 1048576
              << " MiB each; at the backend " << total << " GETs, " << bytes / 1048576 << " MiB (blocks "
              << kObjects * kBlocksPerObject << "), peer hits " << hits << ", peer misses " << misses << std::endl;
  }

  static testing::ProxiedRgw* backend_;
  static testing::S3TestServer* rgw_;  // backend_'s parts
  static testing::CloudProxy* proxy_;
  static std::map<std::string, Buffer> data_;
  fs::path dir_;
  std::vector<MemberProc> members_;
};

testing::ProxiedRgw* GroupServeTest::backend_ = nullptr;
testing::S3TestServer* GroupServeTest::rgw_ = nullptr;
testing::CloudProxy* GroupServeTest::proxy_ = nullptr;
std::map<std::string, Buffer> GroupServeTest::data_;

TEST_F(GroupServeTest, StaticGroupFetchesEachBlockOnce) {
  ASSERT_NO_FATAL_FAILURE(StartMembers(3));
  ReadEverythingThroughEveryMember("all");
  ExpectEachBlockFetchedOnce("all");
  // A client nobody here wrote: the aws CLI reads an object through the last member (most of
  // its blocks owned by the others), byte-exact, and the bucket sees no new GET.
  const auto backend_before = BackendGets("all");
  const fs::path out = dir_ / "aws-copy";
  std::vector<std::string> aws = {"/usr/bin/aws",
                                  "--endpoint-url",
                                  members_.back().endpoint,
                                  "--no-sign-request",
                                  "s3",
                                  "cp",
                                  "s3://" + rgw_->bucket() + "/all/obj-0",
                                  out.string()};
  testing::EnvOverrides env = testing::WithoutCaBundles();
  env.push_back({"AWS_DEFAULT_REGION", "us-east-1"});
  env.push_back({"AWS_CONFIG_FILE", "/dev/null"});
  auto r = testing::RunCommand(aws, env);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << testing::DescribeRun(aws, *r);
  std::ifstream in(out, std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Buffer& want = data_.at("all/obj-0");
  EXPECT_TRUE(got.size() == want.size() && std::memcmp(got.data(), want.data(), got.size()) == 0)
      << "aws s3 cp through a member returned other bytes";
  const auto backend_after = BackendGets("all");
  EXPECT_EQ(backend_after.at("all/obj-0").gets, backend_before.at("all/obj-0").gets) << "the bucket was read again";
}

TEST_F(GroupServeTest, KilledMemberNeitherCorruptsNorStallsTheOthers) {
  ASSERT_NO_FATAL_FAILURE(StartMembers(3));
  std::mutex mu;
  std::condition_variable cv;
  uint64_t reads_done = 0;
  std::vector<Status> errors(2);
  std::vector<std::chrono::milliseconds> slowest(2, std::chrono::milliseconds(0));
  std::vector<std::thread> readers;
  for (int m = 0; m < 2; ++m) {
    readers.emplace_back([&, m] {
      net::HttpClient http;
      for (int pass = 0; pass < 2; ++pass) {
        for (int j = 0; j < kObjects && errors[m].ok(); ++j) {
          std::string key = "kill/obj-" + std::to_string((j + m) % kObjects);
          for (uint64_t off = 0; off < kObjectSize && errors[m].ok(); off += kBlock) {
            auto t0 = std::chrono::steady_clock::now();
            errors[m] = ReadAndCheck(http, members_[m].endpoint, key, off, kBlock);
            auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
            std::lock_guard lock(mu);
            slowest[m] = std::max(slowest[m], took);
            ++reads_done;
            cv.notify_all();
          }
        }
      }
    });
  }
  {
    // Kill the third member once a quarter of the reads are done: mid-read.
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(120), [&] { return reads_done >= kObjects * kBlocksPerObject; }));
  }
  ASSERT_EQ(::kill(members_[2].process->pid(), SIGKILL), 0);
  for (auto& t : readers) t.join();
  int code = 0;
  EXPECT_TRUE(members_[2].process->WaitExit(std::chrono::seconds(10), &code));
  for (int m = 0; m < 2; ++m) {
    EXPECT_TRUE(errors[m].ok()) << "member " << m << ": " << errors[m];
    // One 4 MiB block per request: at most one peer ask (bounded by the deadline) plus a bucket read.
    EXPECT_LT(slowest[m], kPeerDeadline + std::chrono::seconds(3)) << "member " << m;
  }
  uint64_t bytes = 0;
  for (auto& [key, f] : BackendGets("kill")) bytes += f.bytes;
  EXPECT_GE(bytes, kObjects * kObjectSize);  // every byte reached a reader from the bucket once at least
  std::cout << "[figures] kill: 2 survivors x 2 passes over " << kObjects * kObjectSize / 1048576
            << " MiB; slowest block read " << slowest[0].count() << " / " << slowest[1].count()
            << " ms; at the backend " << bytes / 1048576 << " MiB (the dead member's third is read directly)"
            << std::endl;
}

std::string Strata() { return std::string(std::getenv("STRATA_BINARY_DIR")) + "/src/cli/strata"; }

// `strata warm --cache-group` on each of 3 members: each fetches only its share, so the
// dataset leaves the bucket once; then `strata cache group` sees the running members.
TEST_F(GroupServeTest, WarmSpreadsTheDatasetAndCacheGroupShowsTheMembers) {
  ASSERT_NE(std::getenv("STRATA_BINARY_DIR"), nullptr) << "run under ctest";
  const std::string backend = backend_->StoreUrl("warm/");
  const auto [peers, group] = testing::MakeStaticGroup(3);
  for (int i = 0; i < 3; ++i) {
    auto r = testing::RunCommand(
        {Strata(), "warm", backend, "--cache-dir", (dir_ / ("cache" + std::to_string(i))).string(), "--cache-group",
         group, "--peer-listen", peers[i], "--group-secret-file", (dir_ / "secret").string()},
        rgw_->ClientEnv());
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->exit_code, 0) << r->stderr_text;
  }
  uint64_t bytes = 0;
  for (auto& [key, f] : BackendGets("warm")) bytes += f.bytes;
  EXPECT_EQ(bytes, kObjects * kObjectSize);  // three warms, each block fetched by its owner only
  std::cout << "[figures] warm: 3 members warmed " << kObjects * kObjectSize / 1048576 << " MiB; at the backend "
            << bytes / 1048576 << " MiB" << std::endl;

  ASSERT_NO_FATAL_FAILURE(StartMembers(3));
  std::string members = "static://";
  for (size_t i = 0; i < members_.size(); ++i) members += (i ? "," : "") + members_[i].peer;
  auto shown = testing::RunCommand(
      {Strata(), "cache", "group", members, "--group-secret-file", (dir_ / "secret").string(), "--json"});
  ASSERT_TRUE(shown.ok()) << shown.status();
  ASSERT_EQ(shown->exit_code, 0) << shown->stderr_text;
  size_t alive = 0;
  for (size_t at = 0; (at = shown->stdout_text.find("\"alive\": true", at)) != std::string::npos; ++at) ++alive;
  EXPECT_EQ(alive, 3u) << shown->stdout_text;
  auto refused = testing::RunCommand({Strata(), "cache", "group", members, "--json"},
                                     {{"STRATA_GROUP_SECRET", "not-the-group-secret-at-all-though-as-long"}});
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->stdout_text.find("\"alive\": true"), std::string::npos) << refused->stdout_text;
  EXPECT_NE(refused->stdout_text.find("403"), std::string::npos) << refused->stdout_text;
}

TEST_F(GroupServeTest, EtcdGroupFetchesEachBlockOnce) {
  auto etcd = testing::StartEtcd(dir_.string());
  if (etcd.status().code() == Code::kNotFound) GTEST_SKIP() << etcd.status();
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  const std::string client = etcd->client_url;
  const std::string url = "etcd://" + client.substr(7) + "/serve-test";
  ASSERT_NO_FATAL_FAILURE(StartMembers(3, url));
  // Every member must see all three before reading (else each owns more than its share).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  net::HttpClient http;
  for (auto& m : members_) {
    while (Metric(m.endpoint, "strata_group_members") != 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a condition, with a deadline
    }
  }
  ReadEverythingThroughEveryMember("etcd");
  ExpectEachBlockFetchedOnce("etcd");
  for (auto& m : members_) EXPECT_EQ(m.process->Stop(), 0);
  members_.clear();
  etcd->process->Stop();
}

}  // namespace
}  // namespace strata::group
