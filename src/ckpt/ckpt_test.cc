// Writer + reader end to end on temp directories and mem:// stores.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "ckpt/commit.h"
#include "ckpt/reader.h"
#include "ckpt/test_fixture.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "io/durable.h"
#include "io/fault_file_system.h"
#include "object/mem_store.h"

namespace strata::ckpt {
namespace {

using testing::Compare;
using testing::FlipByte;
using testing::MakeState;
using testing::OwnedState;
using testing::TempDirTest;

// Forwards to a Location and records the largest single read: streaming
// copies must read in parts, never a whole (multi-GB) shard at once.
class ProbedLocation : public Location {
 public:
  explicit ProbedLocation(std::unique_ptr<Location> inner) : inner_(std::move(inner)) {}
  uint64_t largest_read() const { return largest_.load(); }
  std::string Describe() const override { return inner_->Describe(); }
  bool is_local() const override { return inner_->is_local(); }
  Result<std::vector<int64_t>> ListSteps() override { return inner_->ListSteps(); }
  Result<std::vector<FileEntry>> ListFiles(int64_t step) override { return inner_->ListFiles(step); }
  Result<uint64_t> FileSize(int64_t step, std::string_view name) override { return inner_->FileSize(step, name); }
  Result<std::string> ReadSmall(int64_t step, std::string_view name, uint64_t max_size) override {
    return inner_->ReadSmall(step, name, max_size);
  }
  Status ReadAt(int64_t step, std::string_view name, uint64_t offset, uint64_t n, void* dst) override {
    uint64_t seen = largest_.load();
    while (n > seen && !largest_.compare_exchange_weak(seen, n)) {
    }
    return inner_->ReadAt(step, name, offset, n, dst);
  }
  Status WriteFile(int64_t step, std::string_view name, const Buffer& data) override {
    return inner_->WriteFile(step, name, data);
  }
  Result<std::string> WriteFileFrom(int64_t step, std::string_view name, uint64_t size,
                                    const object::PartSource& source, const object::StreamPutHooks& hooks) override {
    return inner_->WriteFileFrom(step, name, size, source, hooks);
  }
  Status Remove(int64_t step, std::string_view name) override { return inner_->Remove(step, name); }
  Status RemoveStep(int64_t step) override { return inner_->RemoveStep(step); }

 private:
  std::unique_ptr<Location> inner_;
  std::atomic<uint64_t> largest_{0};
};

class CkptTest : public TempDirTest<> {
 protected:
  WriterOptions Options(std::string sub = "local") {
    WriterOptions o;
    o.dir = io::JoinPath(dir_, sub);
    o.shard_bytes = 1 << 20;  // several shards even for small states
    return o;
  }
  std::unique_ptr<Location> Local(std::string sub = "local") {
    return std::move(OpenLocalLocation(io::DefaultFileSystem(), io::JoinPath(dir_, sub))).value();
  }
  std::string ShardPath(int64_t step, int shard, std::string sub = "local") {
    return io::JoinPath(io::JoinPath(io::JoinPath(dir_, sub), StepDirName(step)), ShardFileName(0, shard));
  }
  // The first tensor stored in shard `shard` of the local checkpoint `step`.
  TensorEntry FirstTensorOf(int64_t step, uint32_t shard) {
    auto info = OpenCheckpoint(*Local(), step);
    EXPECT_TRUE(info.ok()) << info.status();
    for (const auto& t : info->ranks[0].tensors) {
      if (t.shard == shard && t.size > 64) return t;
    }
    ADD_FAILURE() << "no tensor in shard " << shard;
    return {};
  }
  void Save(CheckpointWriter& w, int64_t step, const OwnedState& s) {
    auto h = w.Save(step, s.views, R"({"step":)" + std::to_string(step) + "}");
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(h->Wait().ok()) << h->Wait();
  }
};

TEST_F(CkptTest, SaveCopiesThenPersistsAndLoadsByteExact) {
  auto w = CheckpointWriter::Open(Options());
  ASSERT_TRUE(w.ok()) << w.status();
  OwnedState s = MakeState(5);
  OwnedState expected = MakeState(5);
  auto h = (*w)->Save(5, s.views, R"({"lr":0.5})");
  ASSERT_TRUE(h.ok()) << h.status();
  // The caller may reuse its memory as soon as Save returns.
  for (auto& b : s.bytes) std::fill(b.begin(), b.end(), 0xEE);
  ASSERT_TRUE(h->Wait().ok()) << h->Wait();
  EXPECT_TRUE(h->Done());
  EXPECT_GT(h->stats().shards, 1u);

  auto loc = Local();
  auto latest = Latest(*loc);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 5);
  EXPECT_EQ(latest->manifest.metadata, R"({"lr":0.5})");
  auto loaded = Load(*loc, 5);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Compare(*loaded, expected), "");
  EXPECT_TRUE(Verify(*loc, 5, VerifyLevel::kFull).ok());

  // Shards are plain safetensors files.
  auto bytes = io::ReadFileToString(io::DefaultFileSystem(), ShardPath(5, 0), 64 << 20);
  ASSERT_TRUE(bytes.ok());
  auto header = ParseSafetensorsHeader(*bytes, bytes->size());
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->tensors.front().name, "model.embed.weight");

  // Caller-provided destinations.
  std::vector<uint8_t> dst(expected.views[1].size);
  ASSERT_TRUE(LoadInto(*loc, 5, {{expected.views[1].name, {dst.data(), dst.size()}}}).ok());
  EXPECT_EQ(0, std::memcmp(dst.data(), expected.views[1].data, dst.size()));
  EXPECT_EQ(LoadInto(*loc, 5, {{"nope", {dst.data(), 1}}}).code(), Code::kNotFound);
  EXPECT_EQ(LoadInto(*loc, 5, {{expected.views[1].name, {dst.data(), 1}}}).code(), Code::kInvalidArgument);
}

TEST_F(CkptTest, StagingIsPrefaultedAtOpenAndReused) {
  const OwnedState s1 = MakeState(1), s2 = MakeState(2);
  // Without staging_bytes the first save maps its region; the next reuses it.
  {
    auto w = std::move(CheckpointWriter::Open(Options("cold"))).value();
    EXPECT_TRUE(w->WaitStagingReady().ok());
    auto h1 = w->Save(1, s1.views);
    ASSERT_TRUE(h1.ok() && h1->Wait().ok());
    EXPECT_TRUE(h1->stats().cold_staging);
    auto h2 = w->Save(2, s2.views);
    ASSERT_TRUE(h2.ok() && h2->Wait().ok());
    EXPECT_FALSE(h2->stats().cold_staging);
    EXPECT_LE(h2->stats().copy, h2->stats().stall);
  }
  // With it, the region is ready before the first save, which then reuses it.
  WriterOptions o = Options("warm");
  o.staging_bytes = 64 << 20;
  auto w = std::move(CheckpointWriter::Open(o)).value();
  ASSERT_TRUE(w->WaitStagingReady().ok());
  auto h = w->Save(1, s1.views);
  ASSERT_TRUE(h.ok() && h->Wait().ok());
  EXPECT_FALSE(h->stats().cold_staging);
  auto loaded = Load(*Local("warm"), 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Compare(*loaded, s1), "");
  // Every shard records a whole-file xxh3 for the fast verified load.
  for (const auto& shard : loaded->info.ranks[0].shards) EXPECT_TRUE(shard.xxh3.has_value()) << shard.file;
}

TEST_F(CkptTest, RejectsBadSaves) {
  auto w = std::move(CheckpointWriter::Open(Options())).value();
  OwnedState s = MakeState(1);
  auto dup = s.views;
  dup.push_back(dup[0]);
  EXPECT_EQ(w->Save(1, dup).status().code(), Code::kInvalidArgument);
  auto bad = s.views;
  bad[0].size -= 1;
  EXPECT_EQ(w->Save(1, bad).status().code(), Code::kInvalidArgument);
  Save(*w, 1, s);
  EXPECT_EQ(w->Save(1, s.views).status().code(), Code::kInvalidArgument);  // not newer
  auto w2 = std::move(CheckpointWriter::Open(Options())).value();
  EXPECT_EQ(w2->Save(1, s.views).status().code(), Code::kAlreadyExists);
}

TEST_F(CkptTest, QueuedAndWaitingSavesNeverCorruptEachOther) {
  for (auto policy : {InflightPolicy::kQueue, InflightPolicy::kWait}) {
    WriterOptions o = Options(policy == InflightPolicy::kQueue ? "q" : "w");
    o.policy = policy;
    o.max_queued = 2;
    auto w = std::move(CheckpointWriter::Open(o)).value();
    std::vector<SaveHandle> handles;
    for (int step = 1; step <= 4; ++step) {
      OwnedState s = MakeState(step);
      auto h = w->Save(step, s.views);
      ASSERT_TRUE(h.ok()) << h.status();
      handles.push_back(*h);
    }
    ASSERT_TRUE(w->Flush().ok());
    auto loc = Local(policy == InflightPolicy::kQueue ? "q" : "w");
    for (int step = 1; step <= 4; ++step) {
      ASSERT_TRUE(handles[step - 1].Done());
      auto loaded = Load(*loc, step);
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      EXPECT_EQ(Compare(*loaded, MakeState(step)), "") << step;
    }
  }
}

TEST_F(CkptTest, CorruptionIsNamedAndSkipped) {
  auto w = std::move(CheckpointWriter::Open(Options())).value();
  Save(*w, 1, MakeState(1));
  Save(*w, 2, MakeState(2));
  auto loc = Local();
  TensorEntry t = FirstTensorOf(2, 0);

  // Flip one byte inside a tensor: full verify names shard and tensor.
  auto file = io::DefaultFileSystem().OpenForWrite(ShardPath(2, 0), /*truncate=*/false);
  ASSERT_TRUE(file.ok());
  auto raf = std::move(io::DefaultFileSystem().OpenForRead(ShardPath(2, 0))).value();
  uint8_t byte = 0;
  ASSERT_TRUE(raf->ReadAt(t.offset + 17, 1, &byte).ok());
  byte ^= 0x40;
  ASSERT_TRUE((*file)->WriteAt(t.offset + 17, &byte, 1).ok());
  ASSERT_TRUE((*file)->Close().ok());
  VerifyReport r = Verify(*loc, 2, VerifyLevel::kFull);
  EXPECT_FALSE(r.ok());
  bool named = false;
  for (const auto& p : r.problems) named |= p.file == ShardFileName(0, 0) && p.tensor == t.name;
  EXPECT_TRUE(named) << r.ToString();
  EXPECT_EQ(Load(*loc, 2).status().code(), Code::kCorruption);
  EXPECT_NE(Load(*loc, 2).status().message().find(t.name), std::string::npos);
  // The SHA-256 path (manifests without a shard xxh3) names it too.
  auto sha = Load(*loc, 2, {.verify_sha256 = true}).status();
  EXPECT_EQ(sha.code(), Code::kCorruption);
  EXPECT_NE(sha.message().find("SHA-256"), std::string::npos) << sha;
  EXPECT_NE(sha.message().find(t.name), std::string::npos) << sha;
  auto latest = Latest(*loc, VerifyLevel::kFull);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->step, 1);

  // Zero a range.
  byte ^= 0x40;  // restore, then zero 4 KiB inside the tensor
  file = io::DefaultFileSystem().OpenForWrite(ShardPath(2, 0), false);
  ASSERT_TRUE((*file)->WriteAt(t.offset + 17, &byte, 1).ok());
  std::string zeros(std::min<uint64_t>(4096, t.size - 1), '\0');
  ASSERT_TRUE((*file)->WriteAt(t.offset + 1, zeros.data(), zeros.size()).ok());
  ASSERT_TRUE((*file)->Close().ok());
  r = Verify(*loc, 2, VerifyLevel::kFull);
  named = false;
  for (const auto& p : r.problems) named |= p.tensor == t.name;
  EXPECT_TRUE(named) << r.ToString();

  // Truncate: even the quick check names the shard and the tensors cut off.
  ASSERT_TRUE(io::DefaultFileSystem().Truncate(ShardPath(2, 0), t.offset + 10).ok());
  r = Verify(*loc, 2, VerifyLevel::kQuick);
  named = false;
  bool shard_named = false;
  for (const auto& p : r.problems) {
    named |= p.tensor == t.name;
    shard_named |= p.file == ShardFileName(0, 0) && p.tensor.empty();
  }
  EXPECT_TRUE(named && shard_named) << r.ToString();
  latest = Latest(*loc);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->step, 1);

  // A torn commit marker or a missing one: skipped too.
  ASSERT_TRUE(io::WriteFileAtomic(io::DefaultFileSystem(),
                                  io::JoinPath(io::JoinPath(dir_, "local/" + StepDirName(1)), "COMMITTED"),
                                  std::string_view("strata-ckpt v1 sha256=00"))
                  .ok());
  EXPECT_EQ(Latest(*loc).status().code(), Code::kNotFound);
  EXPECT_EQ(Verify(*loc, 1, VerifyLevel::kQuick).ToStatus().code(), Code::kNotFound);
}

// Right size, intact markers, zeroed bytes: only reading the bytes tells.
// Latest() does that by default; kQuick is the opt-out and is fooled.
TEST_F(CkptTest, LatestSkipsAZeroedRangeByDefault) {
  auto w = std::move(CheckpointWriter::Open(Options())).value();
  Save(*w, 1, MakeState(1));
  Save(*w, 2, MakeState(2));
  const TensorEntry t = FirstTensorOf(2, 1);
  auto file = std::move(io::DefaultFileSystem().OpenForWrite(ShardPath(2, 1), /*truncate=*/false)).value();
  const std::string zeros(std::min<uint64_t>(4096, t.size), '\0');
  ASSERT_TRUE(file->WriteAt(t.offset, zeros.data(), zeros.size()).ok());
  ASSERT_TRUE(file->Close().ok());

  auto loc = Local();
  std::vector<VerifyReport> skipped;
  auto latest = Latest(*loc, VerifyLevel::kBytes, &skipped);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 1);
  ASSERT_EQ(skipped.size(), 1u);
  bool named = false;
  for (const auto& p : skipped[0].problems) named |= p.file == ShardFileName(0, 1) && p.tensor == t.name;
  EXPECT_TRUE(named) << skipped[0].ToString();
  EXPECT_EQ(Latest(*loc)->step, 1);                       // the default
  EXPECT_EQ(Latest(*loc, VerifyLevel::kQuick)->step, 2);  // sizes and markers look fine
}

TEST_F(CkptTest, FullDiskFailsCleanlyAndKeepsThePreviousCheckpoint) {
  io::FaultFileSystem fault(io::DefaultFileSystem());
  WriterOptions o = Options();
  o.fs = &fault;
  o.io_threads = 1;  // shards in order: the first fits in the budget, the second does not
  auto w = std::move(CheckpointWriter::Open(o)).value();
  Save(*w, 1, MakeState(1));
  fault.SetWriteBudget(1536 << 10);  // the next checkpoint needs ~2.4 MiB in three shards
  OwnedState s = MakeState(2);
  auto h = w->Save(2, s.views);
  ASSERT_TRUE(h.ok());
  Status st = h->Wait();
  EXPECT_EQ(st.code(), Code::kNoSpace) << st;
  EXPECT_NE(st.message().find("shard"), std::string::npos) << st;
  EXPECT_EQ(w->Flush().code(), Code::kNoSpace);
  fault.ClearWriteBudget();
  // Nothing of the failed step is left (its first shard had been renamed into place).
  EXPECT_GE(fault.Counters().renames, 1u);
  EXPECT_FALSE(std::filesystem::exists(io::JoinPath(io::JoinPath(dir_, "local"), StepDirName(2))));
  auto loc = Local();
  auto latest = Latest(*loc, VerifyLevel::kFull);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 1);
  EXPECT_EQ(Compare(*Load(*loc, 1), MakeState(1)), "");
  // Space is back: the same writer saves again.
  Save(*w, 3, MakeState(3));
  EXPECT_EQ(Latest(*loc)->step, 3);
}

// keep=1 with a byte-corrupt newest: the only good checkpoint must stay.
TEST_F(CkptTest, RetentionNeverDeletesTheNewestVerifiedCheckpoint) {
  {
    auto w = std::move(CheckpointWriter::Open(Options())).value();
    Save(*w, 1, MakeState(1));
    Save(*w, 2, MakeState(2));
  }
  const TensorEntry t = FirstTensorOf(2, 0);
  FlipByte(ShardPath(2, 0), t.offset + 100);  // step 2 still looks valid to the quick check
  auto loc = Local();
  auto deleted = RetainNewest(*loc, 1);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_TRUE(deleted->empty());
  EXPECT_EQ(*loc->ListSteps(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Compare(*Load(*loc, 1), MakeState(1)), "");
  // Once a newer good one exists, the older ones go.
  {
    auto w = std::move(CheckpointWriter::Open(Options())).value();
    Save(*w, 3, MakeState(3));
  }
  deleted = RetainNewest(*loc, 1);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(*loc->ListSteps(), (std::vector<int64_t>{3}));
  // With nothing to delete, no byte is read (on a store, verifying downloads the checkpoint).
  int verifications = 0;
  auto count = [&](int64_t) { return ++verifications > 0; };
  deleted = RetainNewest(*loc, 1, {}, nullptr, count);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_TRUE(deleted->empty());
  EXPECT_EQ(verifications, 0);
}

// Issue 15: a step that cannot be read (EIO, EMFILE...) is not torn. Local
// retention (what the writer and `strata ckpt gc` run) keeps it; a step whose
// marker is really missing is still deleted; Latest() never falls back past it.
TEST_F(CkptTest, RetentionKeepsAStepItCannotReadAndDeletesOnlyProvenTornOnes) {
  {
    auto w = std::move(CheckpointWriter::Open(Options())).value();
    for (int64_t step = 1; step <= 4; ++step) Save(*w, step, MakeState(step));
  }
  ASSERT_TRUE(
      io::DefaultFileSystem()
          .Remove(io::JoinPath(io::JoinPath(io::JoinPath(dir_, "local"), StepDirName(3)), std::string(kCommitFile)))
          .ok());
  io::FaultFileSystem flaky(io::DefaultFileSystem());
  flaky.InjectErrors({.path_substring = StepDirName(2), .ops = io::kFaultRead | io::kFaultOpen});  // EIO on every read
  auto loc = std::move(OpenLocalLocation(flaky, io::JoinPath(dir_, "local"))).value();
  for (int pass = 0; pass < 3; ++pass) {  // the writer's and gc's passes alike
    auto deleted = RetainNewest(*loc, /*keep=*/3);
    ASSERT_TRUE(deleted.ok()) << deleted.status();
    EXPECT_EQ(*deleted, (pass == 0 ? std::vector<int64_t>{3} : std::vector<int64_t>{})) << "pass " << pass;
  }
  EXPECT_GT(flaky.Counters().injected_errors, 0u);
  EXPECT_EQ(*loc->ListSteps(), (std::vector<int64_t>{1, 2, 4}));
  // The newest unreadable: Latest() reports it instead of loading step 2 or 1.
  flaky.ClearErrors();
  flaky.InjectErrors({.path_substring = StepDirName(4), .ops = io::kFaultRead | io::kFaultOpen});
  auto latest = Latest(*loc);
  EXPECT_EQ(latest.status().code(), Code::kIOError) << latest.status();
  EXPECT_NE(latest.status().message().find("not falling back"), std::string::npos) << latest.status();
  auto newest = NewestCommitted(*loc);
  EXPECT_EQ(newest.status().code(), Code::kIOError) << newest.status();
  EXPECT_EQ(OpenCheckpoint(*loc, 4).status().code(), Code::kIOError);  // not NotFound: nothing is known
  EXPECT_TRUE(RetainNewest(*loc, 1).ok());  // step 4 unknown: 1 and 2 are the only valid ones
  EXPECT_EQ(*loc->ListSteps(), (std::vector<int64_t>{2, 4}));
  // Readable again: everything recovers by itself.
  flaky.ClearErrors();
  EXPECT_EQ(Latest(*loc)->step, 4);
  EXPECT_EQ(Compare(*Load(*loc, 4), MakeState(4)), "");
  EXPECT_EQ(*RetainNewest(*loc, 1), (std::vector<int64_t>{2}));
}

// Staging memory that cannot be had fails the save, and the step stays free.
TEST_F(CkptTest, StagingFailureLeavesTheStepFreeToSaveAgain) {
  std::string overcommit;
  if (auto text = io::ReadFileToString(io::DefaultFileSystem(), "/proc/sys/vm/overcommit_memory", 16); text.ok()) {
    overcommit = *text;
  }
  if (overcommit.empty() || overcommit[0] == '1') {
    GTEST_SKIP() << "the kernel may grant any mapping (vm.overcommit_memory=1): cannot make staging fail";
  }
  auto w = std::move(CheckpointWriter::Open(Options())).value();
  const uint64_t huge = uint64_t{1} << 44;  // 16 TiB: more than RAM + swap, so mmap refuses it
  std::vector<uint8_t> unused(64);          // never read: staging fails before the copy
  auto h = w->Save(7, {{"huge", "U8", {static_cast<int64_t>(huge)}, unused.data(), huge}});
  EXPECT_EQ(h.status().code(), Code::kNoSpace) << h.status();
  Save(*w, 7, MakeState(7));
  EXPECT_EQ(Compare(*Load(*Local(), 7), MakeState(7)), "");
}

TEST_F(CkptTest, TiersToTheStoreWithRetention) {
  auto store = object::MakeMemStore("", {.min_part_size = 1 << 20});
  WriterOptions o = Options();
  o.remote = store;
  o.upload_part_size = 1 << 20;
  o.keep_local = 2;
  o.keep_remote = 3;
  auto w = std::move(CheckpointWriter::Open(o)).value();
  for (int step = 1; step <= 5; ++step) {
    auto h = w->Save(step * 10, MakeState(step).views);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(h->WaitUploaded().ok()) << h->WaitUploaded();
  }
  ASSERT_TRUE(w->WaitForUploads().ok());
  w.reset();
  auto remote = StoreLocation(store);
  auto local = Local();
  EXPECT_EQ(*remote->ListSteps(), (std::vector<int64_t>{30, 40, 50}));
  EXPECT_EQ(*local->ListSteps(), (std::vector<int64_t>{40, 50}));
  auto latest = Latest(*remote, VerifyLevel::kFull);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 50);
  auto loaded = Load(*remote, 50);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Compare(*loaded, MakeState(5)), "");

  // Pull a remote one into a fresh directory.
  auto pulled = Local("pulled");
  ASSERT_TRUE(Pull(*remote, 30, *pulled).ok());
  EXPECT_EQ(Compare(*Load(*pulled, 30), MakeState(3)), "");
  EXPECT_EQ(Pull(*remote, 30, *pulled).code(), Code::kAlreadyExists);
}

// Pull checks every shard while copying, before anything is committed at
// the destination: a bad source leaves nothing there and a retry works.
TEST_F(CkptTest, PullVerifiesWhileCopyingAndARetryWorks) {
  auto w = std::move(CheckpointWriter::Open(Options())).value();
  const OwnedState state = MakeState(1, 0, 16);  // a 16 MiB tensor: its own shard, larger than a part
  Save(*w, 1, state);
  const TensorEntry t = FirstTensorOf(1, 0);
  ASSERT_GT(t.size, 8u << 20);
  FlipByte(ShardPath(1, 0), t.offset + t.size - 5);  // in the last part read

  ProbedLocation src(Local());
  auto dst = Local("pulled");
  Status st = Pull(src, 1, *dst);
  EXPECT_EQ(st.code(), Code::kCorruption) << st;
  EXPECT_NE(st.message().find(ShardFileName(0, 0)), std::string::npos) << st;
  EXPECT_NE(st.message().find(t.name), std::string::npos) << st;
  EXPECT_EQ(dst->ListSteps()->size(), 0u);  // no committed copy, and no leftovers either
  EXPECT_EQ(Latest(*dst).status().code(), Code::kNotFound);

  FlipByte(ShardPath(1, 0), t.offset + t.size - 5);  // repaired at the source
  st = Pull(src, 1, *dst);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(Compare(*Load(*dst, 1), state), "");
  EXPECT_TRUE(Verify(*dst, 1, VerifyLevel::kFull).ok());
  EXPECT_LE(src.largest_read(), 8u << 20) << "a whole shard was read into memory at once";
  EXPECT_EQ(Pull(src, 1, *dst).code(), Code::kAlreadyExists);

  // A committed copy that cannot be read right now may be intact: it is
  // neither withdrawn nor replaced, and the error says a retry may help.
  io::FaultFileSystem flaky(io::DefaultFileSystem());
  flaky.InjectErrors({.path_substring = ShardFileName(0, 0), .ops = io::kFaultRead});
  auto flaky_dst = std::move(OpenLocalLocation(flaky, io::JoinPath(dir_, "pulled"))).value();
  st = Pull(src, 1, *flaky_dst);
  EXPECT_EQ(st.code(), Code::kUnavailable) << st;
  EXPECT_TRUE(Verify(*dst, 1, VerifyLevel::kFull).ok());  // still committed, every byte intact

  // A damaged committed copy at the destination is replaced, not kept forever.
  FlipByte(ShardPath(1, 0, "pulled"), t.offset + 3);
  st = Pull(src, 1, *dst);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(Verify(*dst, 1, VerifyLevel::kFull).ok());
}

TEST_F(CkptTest, AttemptIdMustBeUtf8) {
  WriterOptions o = Options();
  o.attempt = "run-\xff";  // would not survive the JSON round trip of the manifests
  EXPECT_EQ(CheckpointWriter::Open(o).status().code(), Code::kInvalidArgument);
  o.attempt = "run-\xc3\xa9";  // é
  EXPECT_TRUE(CheckpointWriter::Open(o).ok());
}

// Rank 1 withdraws its part (it restarted under another attempt) after the
// committer collected it: the re-read just before committing notices.
TEST_F(CkptTest, GlobalCommitRechecksEveryRankBeforeCommitting) {
  class WithdrawOnRecheck : public ProbedLocation {
   public:
    using ProbedLocation::ProbedLocation;
    Result<std::string> ReadSmall(int64_t step, std::string_view name, uint64_t max_size) override {
      if (name == RankCommitName(1) && ++reads_ == 2) (void)Remove(step, name);
      return ProbedLocation::ReadSmall(step, name, max_size);
    }

   private:
    int reads_ = 0;
  };
  WithdrawOnRecheck loc(Local());
  for (int r = 0; r < 2; ++r) {
    RankManifest m;
    m.step = 7, m.rank = r, m.world_size = 2, m.attempt = "A";
    ASSERT_TRUE(WriteRankCommit(loc, m).ok());
  }
  FakeClock clock(/*auto_advance=*/true);
  Status st = CommitGlobal(loc, 7, 2, "A", clock, clock.Now() + std::chrono::seconds(1), std::chrono::milliseconds(100),
                           nullptr);
  EXPECT_EQ(st.code(), Code::kDeadlineExceeded) << st;
  EXPECT_FALSE(loc.FileSize(7, kCommitFile).ok());  // never committed with a withdrawn part

  // Both parts present throughout: it commits.
  for (int r = 0; r < 2; ++r) {
    RankManifest m;
    m.step = 8, m.rank = r, m.world_size = 2, m.attempt = "A";
    ASSERT_TRUE(WriteRankCommit(loc, m).ok());
  }
  st = CommitGlobal(loc, 8, 2, "A", clock, clock.Now() + std::chrono::seconds(1), std::chrono::milliseconds(100),
                    nullptr);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_TRUE(loc.FileSize(8, kCommitFile).ok());
}

// The upload checks each shard against the manifest while streaming it: a
// locally damaged shard never reaches the store, nor does a remote commit.
TEST_F(CkptTest, UploadRefusesALocallyDamagedShard) {
  {
    auto w = std::move(CheckpointWriter::Open(Options())).value();
    Save(*w, 1, MakeState(1));
  }
  const TensorEntry t = FirstTensorOf(1, 1);
  FlipByte(ShardPath(1, 1), t.offset + 1);
  auto store = object::MakeMemStore("", {.min_part_size = 1 << 20});
  WriterOptions o = Options();
  o.remote = store;
  auto w = std::move(CheckpointWriter::Open(o)).value();  // resumes the upload of step 1
  Status st = w->WaitForUploads();
  EXPECT_EQ(st.code(), Code::kCorruption) << st;
  EXPECT_NE(st.message().find(ShardFileName(0, 1)), std::string::npos) << st;
  EXPECT_NE(st.message().find(t.name), std::string::npos) << st;
  EXPECT_EQ(store->Head(StepDirName(1) + "/" + ShardFileName(0, 1)).status().code(), Code::kNotFound);
  EXPECT_EQ(store->Head(StepDirName(1) + "/" + std::string(kCommitFile)).status().code(), Code::kNotFound);
}

// Ranks as threads with their own writers: shared directory, then node-local
// directories committing through the store.
TEST_F(CkptTest, DistributedRanksCommitTogether) {
  for (bool shared : {true, false}) {
    auto store = object::MakeMemStore("", {.min_part_size = 1 << 20});
    constexpr int kWorld = 3;
    std::vector<Status> results(kWorld);
    std::vector<std::thread> ranks;
    for (int r = 0; r < kWorld; ++r) {
      ranks.emplace_back([&, r] {
        WriterOptions o = Options(shared ? "shared" : "node" + std::to_string(r));
        o.rank = r;
        o.world_size = kWorld;
        o.attempt = "run-1";
        o.shared_dir = shared;
        o.remote = store;
        o.upload_part_size = 1 << 20;
        auto w = CheckpointWriter::Open(o);
        if (!w.ok()) {
          results[r] = w.status();
          return;
        }
        auto h = (*w)->Save(100, MakeState(100, r).views);
        results[r] = h.ok() ? h->WaitUploaded() : h.status();
      });
    }
    for (auto& t : ranks) t.join();
    for (const auto& st : results) ASSERT_TRUE(st.ok()) << st;
    auto remote = StoreLocation(store);
    auto info = Latest(*remote, VerifyLevel::kFull);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->manifest.world_size, kWorld);
    auto loaded = Load(*remote, 100);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    for (int r = 0; r < kWorld; ++r) EXPECT_EQ(Compare(*loaded, MakeState(100, r)), "") << r;
    if (shared) {
      auto local = Latest(*Local("shared"));
      ASSERT_TRUE(local.ok()) << local.status();
      EXPECT_EQ(local->step, 100);
    } else {
      EXPECT_EQ(Latest(*Local("node0")).status().code(), Code::kNotFound);  // rank commits only
    }
  }
}

// DDP: every rank saves the same tensor names with its own bytes; loading
// with a rank must give that rank's bytes, never the first rank's.
TEST_F(CkptTest, LoadIntoReadsTheRequestedRanksPart) {
  constexpr int kWorld = 2;
  std::vector<OwnedState> states;  // moved in, never copied: views point into the bytes
  states.reserve(kWorld);
  for (int r = 0; r < kWorld; ++r) states.push_back(MakeState(9, r));
  for (size_t i = 0; i < states[1].views.size(); ++i) states[1].views[i].name = states[0].views[i].name;
  const std::vector<uint8_t> extra(64, 7);
  states[0].views.push_back({"only.on.rank0", "U8", {64}, extra.data(), extra.size()});
  std::vector<Status> results(kWorld);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorld; ++r) {
    ranks.emplace_back([&, r] {
      WriterOptions o = Options();
      o.rank = r;
      o.world_size = kWorld;
      o.attempt = "run-1";
      auto w = CheckpointWriter::Open(o);
      auto h = w.ok() ? (*w)->Save(9, states[r].views) : Result<SaveHandle>(w.status());
      results[r] = h.ok() ? h->Wait() : h.status();
    });
  }
  for (auto& t : ranks) t.join();
  for (const auto& st : results) ASSERT_TRUE(st.ok()) << st;

  auto loc = Local();
  const TensorView& big = states[0].views[0];  // same name on both ranks
  ASSERT_NE(0, std::memcmp(big.data, states[1].views[0].data, big.size));
  for (int r = 0; r < kWorld; ++r) {
    std::vector<uint8_t> dst(big.size);
    Status st = LoadInto(*loc, 9, {{big.name, {dst.data(), dst.size()}}}, {.rank = r});
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(0, std::memcmp(dst.data(), states[r].views[0].data, dst.size())) << "rank " << r;
    auto loaded = Load(*loc, 9, {.rank = r});
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(Compare(*loaded, states[r]), "") << "rank " << r;
  }
  // A name rank 1 lacks is NotFound naming the rank and the step, with the
  // destination untouched; rank 0 and "any rank" (-1) find it.
  std::vector<uint8_t> dst(extra.size(), 0xAB);
  Status missing = LoadInto(*loc, 9, {{"only.on.rank0", {dst.data(), dst.size()}}}, {.rank = 1});
  EXPECT_EQ(missing.code(), Code::kNotFound) << missing;
  EXPECT_NE(missing.message().find("rank 1 of " + StepDirName(9)), std::string::npos) << missing;
  EXPECT_EQ(dst, std::vector<uint8_t>(extra.size(), 0xAB));
  for (int r : {0, -1}) {
    ASSERT_TRUE(LoadInto(*loc, 9, {{"only.on.rank0", {dst.data(), dst.size()}}}, {.rank = r}).ok()) << r;
    EXPECT_EQ(dst, extra);
  }
  // A rank outside the checkpoint's world is refused.
  EXPECT_EQ(LoadInto(*loc, 9, {{big.name, {dst.data(), big.size}}}, {.rank = 2}).code(), Code::kInvalidArgument);
}

TEST_F(CkptTest, CoordinatorGivesUpOnAMissingRank) {
  FakeClock clock(/*auto_advance=*/true);
  WriterOptions o = Options();
  o.world_size = 2;
  o.attempt = "run-1";
  o.clock = &clock;
  o.commit_timeout = std::chrono::seconds(30);
  auto w = std::move(CheckpointWriter::Open(o)).value();
  auto h = w->Save(1, MakeState(1).views);
  ASSERT_TRUE(h.ok());
  Status st = h->Wait();
  EXPECT_EQ(st.code(), Code::kDeadlineExceeded) << st;
  EXPECT_NE(st.message().find("ranks 1"), std::string::npos) << st;
  EXPECT_EQ(Latest(*Local()).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace strata::ckpt
