#include "base/buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace strata {
namespace {

TEST(BufferTest, DefaultIsEmpty) {
  Buffer b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.view(), "");
  EXPECT_EQ(b.Slice(3, 4).size(), 0u);
}

TEST(BufferTest, CopyOwnsItsBytes) {
  std::string src = "hello world";
  Buffer b = Buffer::Copy(src);
  src[0] = 'J';  // the buffer must not see later changes to the source
  EXPECT_EQ(b.view(), "hello world");
  EXPECT_EQ(b.ToString(), "hello world");
  EXPECT_EQ(Buffer::Copy(nullptr, 0).size(), 0u);
}

TEST(BufferTest, FromStringAndVectorTakeOwnershipWithoutCopy) {
  std::string s(1000, 'x');
  const char* original = s.data();
  Buffer b = Buffer::FromString(std::move(s));
  EXPECT_EQ(reinterpret_cast<const char*>(b.data()), original);
  EXPECT_EQ(b.size(), 1000u);

  std::vector<uint8_t> v = {1, 2, 3};
  const uint8_t* vp = v.data();
  Buffer bv = Buffer::FromVector(std::move(v));
  EXPECT_EQ(bv.data(), vp);
  EXPECT_EQ(bv.size(), 3u);
  EXPECT_EQ(bv.data()[2], 3);
}

TEST(BufferTest, SliceSharesStorageAndClamps) {
  Buffer b = Buffer::Copy("0123456789");
  Buffer s = b.Slice(2, 3);
  EXPECT_EQ(s.view(), "234");
  EXPECT_EQ(s.data(), b.data() + 2);  // no copy
  EXPECT_EQ(b.Slice(8).view(), "89");
  EXPECT_EQ(b.Slice(8, 100).view(), "89");
  EXPECT_EQ(b.Slice(10).size(), 0u);
  EXPECT_EQ(b.Slice(50, 5).size(), 0u);
  EXPECT_EQ(s.Slice(1, 1).view(), "3");
}

TEST(BufferTest, SliceKeepsStorageAliveAfterParentDies) {
  Buffer slice;
  {
    Buffer b = Buffer::FromString(std::string(4096, 'q') + "tail");
    slice = b.Slice(4096);
  }
  EXPECT_EQ(slice.view(), "tail");
}

TEST(BufferTest, WrapKeepsOwnerAlive) {
  auto owner = std::make_shared<std::string>("wrapped bytes");
  std::weak_ptr<std::string> weak = owner;
  Buffer b = Buffer::Wrap(owner, reinterpret_cast<const uint8_t*>(owner->data()) + 8, 5);
  owner.reset();
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(b.view(), "bytes");
  b = Buffer();
  EXPECT_TRUE(weak.expired());
}

TEST(BufferTest, EqualityComparesBytes) {
  EXPECT_EQ(Buffer::Copy("abc"), Buffer::FromString("abc"));
  EXPECT_FALSE(Buffer::Copy("abc") == Buffer::Copy("abd"));
  EXPECT_EQ(Buffer(), Buffer::Copy(""));
}

TEST(MutableBufferTest, IsPageAlignedAndFreezes) {
  MutableBuffer m(10000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 4096, 0u);
  EXPECT_EQ(m.size(), 10000u);
  EXPECT_EQ(m.capacity(), 10000u);
  std::memset(m.data(), 'z', m.size());
  m.Resize(3);
  EXPECT_EQ(m.size(), 3u);
  const uint8_t* p = m.data();
  Buffer b = std::move(m).Freeze();
  EXPECT_EQ(b.view(), "zzz");
  EXPECT_EQ(b.data(), p);   // frozen without copying
  EXPECT_EQ(m.size(), 0u);  // NOLINT(bugprone-use-after-move): documented to be empty
  EXPECT_EQ(m.data(), nullptr);
}

TEST(MutableBufferTest, ResizeWithinCapacity) {
  MutableBuffer m(8);
  m.Resize(0);
  m.Resize(8);
  EXPECT_EQ(m.size(), 8u);
  MutableBuffer empty(0);
  EXPECT_EQ(std::move(empty).Freeze().size(), 0u);
}

TEST(ConcatTest, JoinsParts) {
  EXPECT_EQ(Concat({}).size(), 0u);
  Buffer one = Buffer::Copy("solo");
  EXPECT_EQ(Concat({one}).data(), one.data());  // single part: shared, not copied
  Buffer joined = Concat({Buffer::Copy("ab"), Buffer(), Buffer::Copy("cde").Slice(1)});
  EXPECT_EQ(joined.view(), "abde");
}

}  // namespace
}  // namespace strata
