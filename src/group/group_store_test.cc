// JoinGroupStore: one member per (group, peer address) per process, shared by
// its stores; and a forked child (a DataLoader worker) reads as a client of
// the group through its parent's member instead of binding its address.
#include "group/group_store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "object/mem_store.h"
#include "object/store_wrapper.h"
#include "testing/background_process.h"
#include "testing/fork.h"

namespace strata::group {
namespace {

namespace fs = std::filesystem;
constexpr char kSecret[] = "group-store-test-secret-0123456789";

class CountingGets : public object::StoreWrapper {
 public:
  using object::StoreWrapper::Get;
  using object::StoreWrapper::StoreWrapper;
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& o) override {
    ++gets;
    return base_->Get(key, o);
  }
  std::atomic<int> gets{0};
};

GroupStoreOptions Options(const std::string& listen, const fs::path& cache) {
  GroupStoreOptions o;
  o.url = "static://" + listen;
  o.listen = listen;
  o.secret = kSecret;
  o.cache_dir = cache.string();
  o.deadline = std::chrono::seconds(20);
  return o;
}

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 13 + i / 4099) % 253);
  return s;
}

TEST(GroupStoreTest, StoresOfOneGroupShareOneMember) {
  const fs::path dir = fs::temp_directory_path() / ("strata-group-store-" + std::to_string(getpid()));
  const std::string listen = "127.0.0.1:" + std::to_string(strata::testing::FreeLoopbackPort());
  auto a = object::MakeMemStore("group-store-a"), b = object::MakeMemStore("group-store-b");
  auto sa = JoinGroupStore(a, Options(listen, dir / "cache"));
  ASSERT_TRUE(sa.ok()) << sa.status();
  auto sa2 = JoinGroupStore(a, Options(listen, dir / "cache"));  // the same address again: the same member
  ASSERT_TRUE(sa2.ok()) << sa2.status();
  EXPECT_EQ(sa->get(), sa2->get());
  auto sb = JoinGroupStore(b, Options(listen, dir / "cache"));
  ASSERT_TRUE(sb.ok()) << sb.status();
  EXPECT_NE(sa->get(), sb->get());
  EXPECT_EQ(&(*sa)->cache(), &(*sb)->cache());
  auto bad = JoinGroupStore(a, Options("127.0.0.1:0", dir / "other"));  // a static list needs a fixed port
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << bad.status();
  GroupStoreOptions no_secret = Options(listen, dir / "cache");
  no_secret.secret.clear();
  no_secret.secret_file = (dir / "missing-secret").string();
  EXPECT_FALSE(JoinGroupStore(a, no_secret).ok());
  object::DropMemStore("group-store-a");
  object::DropMemStore("group-store-b");
  fs::remove_all(dir);
}

TEST(GroupStoreTest, AForkedChildReadsThroughItsParentsMember) {
  const fs::path dir = fs::temp_directory_path() / ("strata-group-fork-" + std::to_string(getpid()));
  const std::string listen = "127.0.0.1:" + std::to_string(strata::testing::FreeLoopbackPort());
  auto bucket = std::make_shared<CountingGets>(object::MakeMemStore("group-store-fork"));
  const std::string data = Bytes(9 << 20);  // three 4 MiB blocks
  ASSERT_TRUE(bucket->Put("obj", Buffer::FromString(data)).ok());
  auto parent = JoinGroupStore(bucket, Options(listen, dir / "cache"));
  ASSERT_TRUE(parent.ok()) << parent.status();
  const int before = bucket->gets.load();
  pid_t pid = strata::testing::ForkForTest();  // the member's threads run: see testing/fork.h
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child's copy of the bucket counts the child's GETs only: it must make none.
    auto child = JoinGroupStore(bucket, Options(listen, dir / "cache"));
    if (!child.ok()) _exit(2);
    auto got = (*child)->Get("obj");
    if (!got.ok()) _exit(3);
    if (got->data.view() != data) _exit(4);
    _exit(bucket->gets.load() == before ? 0 : 5);
  }
  const auto waited = strata::testing::WaitForChild(pid);
  ASSERT_TRUE(waited.has_value()) << "the forked child did not exit within 60 s (killed)";
  const int status = *waited;
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no store, 3: read failed, 4: wrong bytes, 5: the child read the bucket";
  EXPECT_EQ(bucket->gets.load(), before + 9) << "the parent, the owner, fetched the blocks (1 MiB parts) once";
  parent->reset();
  object::DropMemStore("group-store-fork");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::group
