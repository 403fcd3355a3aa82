#include "object/completed_uploads.h"

#include <gtest/gtest.h>

namespace strata::object {
namespace {

CompletedUpload Done(const std::string& key, const std::vector<CompletedPart>& parts) {
  ObjectInfo info;
  info.key = key;
  info.size = 42;
  info.etag = "0123456789abcdef0123456789abcdef-2";
  info.mtime = WallTime(std::chrono::seconds(1700000000) + std::chrono::nanoseconds(123));
  info.metadata.checksum_algorithm = "CRC32";
  info.metadata.checksum_type = "COMPOSITE";
  info.metadata.checksum = "AAAAAA==-2";
  info.metadata.content_type = "text/plain";  // not kept
  info.part_sizes = {40, 2};                  // not kept
  return CompletedWith(parts, info);
}

TEST(CompletedUploads, PartListHashIgnoresQuotesNotOrderOrNumbers) {
  std::vector<CompletedPart> parts{{1, "aa"}, {2, "bb"}};
  EXPECT_EQ(PartListHash(parts), PartListHash({{1, "\"aa\""}, {2, "\"bb\""}}));
  EXPECT_NE(PartListHash(parts), PartListHash({{2, "bb"}, {1, "aa"}}));
  EXPECT_NE(PartListHash(parts), PartListHash({{1, "aa"}, {3, "bb"}}));
  EXPECT_NE(PartListHash(parts), PartListHash({{1, "aa"}}));
}

TEST(CompletedUploads, AnswersTheSamePartsOnlyForTheSameKey) {
  std::vector<CompletedPart> parts{{1, "aa"}, {2, "bb"}};
  CompletedUpload done = Done("k", parts);
  EXPECT_TRUE(done.info.metadata.content_type.empty());
  EXPECT_TRUE(done.info.part_sizes.empty());
  auto same = AnswerCompleted(done, "k", "id", parts);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->etag, done.info.etag);
  EXPECT_EQ(same->metadata.checksum, "AAAAAA==-2");
  for (auto r : {AnswerCompleted(done, "other", "id", parts), AnswerCompleted(done, "k", "id", {{1, "aa"}})}) {
    EXPECT_EQ(r.status().code(), Code::kNotFound);
    EXPECT_NE(r.status().message().find("(NoSuchUpload)"), std::string::npos) << r.status();
  }
}

TEST(CompletedUploads, KeepsTheMostRecent) {
  CompletedUploads kept(2);
  for (const char* id : {"u1", "u2", "u3"}) kept.Record(id, Done(id, {{1, "aa"}}));
  EXPECT_FALSE(kept.Find("u1"));
  ASSERT_TRUE(kept.Find("u2"));
  EXPECT_EQ(kept.Find("u3")->info.key, "u3");
  kept.Record("u3", Done("again", {{1, "aa"}}));  // recorded again: still one entry
  kept.Record("u4", Done("u4", {{1, "aa"}}));
  EXPECT_FALSE(kept.Find("u2"));
  EXPECT_EQ(kept.Find("u3")->info.key, "again");
}

TEST(CompletedUploads, RecordTextRoundTripsAndRejectsDamage) {
  CompletedUpload done = Done("a key\nwith a newline", {{1, "aa"}});
  std::string text = EncodeCompletedUpload(done);
  auto back = DecodeCompletedUpload(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->info.key, done.info.key);
  EXPECT_EQ(back->info.etag, done.info.etag);
  EXPECT_EQ(back->info.size, 42u);
  EXPECT_EQ(back->info.mtime, done.info.mtime);
  EXPECT_EQ(back->parts_hash, done.parts_hash);
  EXPECT_EQ(back->info.metadata.checksum_type, "COMPOSITE");
  EXPECT_EQ(EncodeCompletedUpload(*back), text);
  const std::string bad[] = {"",
                             "strata-completed-upload 1",
                             text.substr(0, text.size() - done.info.key.size()),
                             "strata-completed-upload 2" + text.substr(text.find('\n')),
                             text.substr(0, text.find('\n')) + "\n\n" + text.substr(text.find('\n', 26) + 1),
                             std::string(kMaxCompletedRecordBytes + 1, 'x')};
  for (const std::string& b : bad) EXPECT_EQ(DecodeCompletedUpload(b).status().code(), Code::kCorruption) << b;
  std::string not_a_size = text;
  not_a_size.replace(not_a_size.find("\n42\n"), 4, "\n4x\n");
  EXPECT_EQ(DecodeCompletedUpload(not_a_size).status().code(), Code::kCorruption);
}

}  // namespace
}  // namespace strata::object
