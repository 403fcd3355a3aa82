#include "group/rendezvous.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace strata::group {
namespace {

constexpr char kSecret[] = "rendezvous-test-secret-0123456789abcdef";

uint64_t Block(int i, std::string_view secret = kSecret) {
  return BlockSeed(secret, cache::HashBlockId(cache::BlockId{"mem://b", "data/" + std::to_string(i / 16), "etag",
                                                             4 << 20, static_cast<uint64_t>(i % 16)}));
}

std::vector<Member> Members(int n) {
  std::vector<Member> m;
  for (int i = 0; i < n; ++i)
    m.push_back({"10.0.0." + std::to_string(i) + ":7070", "10.0.0." + std::to_string(i) + ":7070"});
  return m;
}

TEST(Rendezvous, EveryMemberAgreesWhateverTheOrder) {
  auto members = Members(5);
  auto shuffled = members;
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const Member* a = OwnerOf(members, Block(i));
    const Member* b = OwnerOf(shuffled, Block(i));
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->id, b->id) << "block " << i;
  }
}

TEST(Rendezvous, SpreadsBlocksEvenly) {
  auto members = Members(4);
  std::map<std::string, int> count;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++count[OwnerOf(members, Block(i))->id];
  ASSERT_EQ(count.size(), 4u);
  for (auto& [id, c] : count) EXPECT_NEAR(c, n / 4, n / 4 * 0.1) << id;
}

TEST(Rendezvous, RemovingAMemberMovesOnlyItsShare) {
  auto members = Members(5);
  auto without = members;
  const std::string gone = without[2].id;
  without.erase(without.begin() + 2);
  int moved = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::string before = OwnerOf(members, Block(i))->id, after = OwnerOf(without, Block(i))->id;
    if (before != gone) {
      ASSERT_EQ(before, after) << "block " << i << " moved though its owner stayed";
    } else {
      ++moved;
      EXPECT_NE(after, gone);
    }
  }
  EXPECT_NEAR(moved, n / 5, n / 5 * 0.1);  // about 1/N of the blocks, and only those
}

TEST(Rendezvous, AddingAMemberTakesBlocksOnlyForItself) {
  auto members = Members(4);
  auto with = Members(5);
  for (int i = 0; i < 5000; ++i) {
    std::string before = OwnerOf(members, Block(i))->id, after = OwnerOf(with, Block(i))->id;
    if (before != after) {
      ASSERT_EQ(after, with[4].id);
    }
  }
}

TEST(Rendezvous, EmptyAndCanonical) {
  EXPECT_EQ(OwnerOf({}, Block(1)), nullptr);
  auto c = Canonical({{"b", "x"}, {"a", "y"}, {"b", "z"}});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].id, "a");
  EXPECT_EQ(c[1].id, "b");
}

// Keyed by the secret: under another secret the same blocks have other
// owners (about 4 in 5 of them with 5 members), so the ownership one group
// computes says nothing about another's, and none can be computed without it.
TEST(Rendezvous, OwnershipDependsOnTheSecret) {
  auto members = Members(5);
  int moved = 0;
  for (int i = 0; i < 2000; ++i) moved += OwnerOf(members, Block(i))->id != OwnerOf(members, Block(i, "x"))->id;
  EXPECT_GT(moved, 2000 * 7 / 10);
  EXPECT_LT(moved, 2000 * 9 / 10);
  EXPECT_EQ(Block(1), Block(1));
  EXPECT_NE(Block(1), Block(1, "rendezvous-test-secret-0123456789abcdeF"));
}

}  // namespace
}  // namespace strata::group
