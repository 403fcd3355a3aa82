// Test fixture of the cache group's integration tests: members in one
// process over one counting in-memory bucket, each with its own cache
// directory and its own peer endpoint on a 127.0.0.1 ephemeral port.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "base/hash.h"
#include "base/random.h"
#include "cache/cached_store.h"
#include "group/cache_group.h"
#include "group/peer_server.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"

namespace strata::group {

namespace fs = std::filesystem;

// Reaches PeerService's test-only state.
class PeerServiceTestPeer {
 public:
  // Makes `service` a lying peer: `tamper` rewrites each block after its
  // checksum was computed. Call before the service serves.
  static void SetTamper(PeerService& service, std::function<Buffer(Buffer)> tamper) {
    service.tamper_ = std::move(tamper);
  }
};

constexpr uint64_t kBlock = 1 << 20;
constexpr char kGroupSecret[] = "group-test-secret-0123456789abcdef";

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition, with a deadline
  }
  return pred();
}

// Counts GETs per (key, range offset): "each block left the bucket once" is
// that every count is 1.
class CountingStore : public object::StoreWrapper {
 public:
  using object::StoreWrapper::Get;
  using object::StoreWrapper::StoreWrapper;
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& o) override {
    {
      std::lock_guard lock(mu);
      ++gets[{std::string(key), o.range ? o.range->offset : 0}];
    }
    return base_->Get(key, o);
  }
  std::map<std::pair<std::string, uint64_t>, int> Snapshot() {
    std::lock_guard lock(mu);
    return gets;
  }
  int Total() {
    int n = 0;
    for (auto& [k, c] : Snapshot()) n += c;
    return n;
  }
  std::mutex mu;
  std::map<std::pair<std::string, uint64_t>, int> gets;
};

struct Node {
  std::shared_ptr<cache::BlockCache> cache;
  std::shared_ptr<cache::CachedStore> store;
  std::unique_ptr<PeerService> service;
  std::unique_ptr<PeerServer> server;
  std::shared_ptr<CacheGroup> group;
  std::atomic<bool> corrupt{false};
};

class GroupTest : public ::testing::Test {
 public:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-group-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_name_ = "group-test-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    bucket_ = std::make_shared<CountingStore>(object::MakeMemStore(store_name_));
  }
  void TearDown() override {
    nodes_.clear();
    object::DropMemStore(store_name_);
    fs::remove_all(dir_);
  }

  // Puts `n` objects of `size` random bytes; returns their contents by key.
  void PutObjects(int n, uint64_t size) {
    Random rng(42);
    for (int i = 0; i < n; ++i) {
      std::string data(size, '\0');
      for (size_t j = 0; j + 8 <= data.size(); j += 8) {
        uint64_t v = rng.Next();
        std::memcpy(&data[j], &v, 8);
      }
      std::string key = "data/shard-" + std::to_string(i);
      ASSERT_TRUE(bucket_->Put(key, Buffer::Copy(data)).ok());
      objects_[key] = std::move(data);
    }
    bucket_->mu.lock();
    bucket_->gets.clear();
    bucket_->mu.unlock();
  }

  void StartNodes(int n, std::string secret = kGroupSecret,
                  std::chrono::milliseconds deadline = std::chrono::seconds(10), bool static_members = true) {
    for (int i = 0; i < n; ++i) {
      auto node = std::make_unique<Node>();
      cache::CacheOptions co;
      co.block_size = kBlock;
      co.ram_bytes = 256ull << 20;
      co.dir = (dir_ / ("node" + std::to_string(i))).string();
      auto cache = cache::BlockCache::Open(co);
      ASSERT_TRUE(cache.ok()) << cache.status().ToString();
      node->cache = *cache;
      cache::CachedStoreOptions so;
      so.fetch_part_size = 0;    // one GET per block: counts are per block
      so.readahead_threads = 0;  // only what is read is fetched
      node->store = std::make_shared<cache::CachedStore>(bucket_, node->cache, so);
      PeerServerOptions po;
      po.secret = secret;
      Node* raw = node.get();
      node->service = std::make_unique<PeerService>(po);
      PeerServiceTestPeer::SetTamper(*node->service, [raw](Buffer b) {
        if (!raw->corrupt || b.empty()) return b;
        std::string s = b.ToString();
        s[s.size() / 2] ^= 0x5a;
        return Buffer::FromString(std::move(s));
      });
      node->service->AddStore(node->store.get());
      auto server = PeerServer::Start(*node->service);
      ASSERT_TRUE(server.ok()) << server.status().ToString();
      node->server = std::move(*server);
      GroupOptions go;
      go.self = node->server->address();
      go.secret = secret;
      go.deadline = deadline;
      node->group = std::make_shared<CacheGroup>(go);
      node->store->SetBlockRouter(node->group);
      nodes_.push_back(std::move(node));
    }
    if (static_members) {
      for (auto& node : nodes_) node->group->SetMembers(Members());
    }
  }

  std::vector<Member> Members() {
    std::vector<Member> m;
    for (auto& node : nodes_) {
      if (node->server) m.push_back({node->server->address(), node->server->address()});
    }
    return m;
  }

  void ReadAllThrough(Node& node) {
    for (auto& [key, want] : objects_) {
      auto r = node.store->Get(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->data.size(), want.size());
      ASSERT_TRUE(r->data.view() == want) << key << " differs";
    }
  }

  // Index of the member owning block `index` of `key` (the ownership node 0 computes).
  int OwnerIndex(const std::string& key, uint64_t index) {
    cache::BlockId id{bucket_->Url(), key, "", kBlock, index};
    auto info = bucket_->Head(key);
    id.etag = info->etag;
    auto owner = nodes_[0]->group->OwnerOf(id);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i]->server && nodes_[i]->server->address() == owner->id) return static_cast<int>(i);
    }
    return -1;
  }

  fs::path dir_;
  std::string store_name_;
  std::shared_ptr<CountingStore> bucket_;
  std::map<std::string, std::string> objects_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace strata::group
