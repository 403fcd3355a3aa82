#include "ckpt/location.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "base/executor.h"
#include "base/mutex.h"
#include "ckpt/format.h"
#include "io/durable.h"
#include "object/store_url.h"
#include "object/transfer.h"

namespace strata::ckpt {
namespace {

// Local streamed writes: parts read at once (from a store: ranged GETs in flight).
constexpr uint64_t kLocalPart = 8ull << 20;
constexpr size_t kLocalConcurrency = 4;

bool IsCommitName(std::string_view name) {
  return name == kCommitFile || (name.size() > 10 && name.substr(name.size() - 10) == ".COMMITTED");
}

class LocalLocation : public Location {
 public:
  LocalLocation(io::FileSystem& fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}
  std::string Describe() const override { return dir_; }
  bool is_local() const override { return true; }

  Result<std::vector<int64_t>> ListSteps() override {
    STRATA_ASSIGN_OR_RETURN(auto entries, fs_.ListDir(dir_));
    std::vector<int64_t> steps;
    for (const auto& e : entries) {
      auto s = ParseStepDirName(e.name);
      if (s && e.is_dir) steps.push_back(*s);
    }
    std::sort(steps.begin(), steps.end());
    return steps;
  }
  Result<std::vector<FileEntry>> ListFiles(int64_t step) override {
    STRATA_ASSIGN_OR_RETURN(auto entries, fs_.ListDir(StepDir(step)));
    std::vector<FileEntry> files;
    for (const auto& e : entries) {
      if (!e.is_dir) files.push_back({e.name, e.size});
    }
    return files;
  }
  Result<uint64_t> FileSize(int64_t step, std::string_view name) override {
    STRATA_ASSIGN_OR_RETURN(io::FileStat st, fs_.Stat(PathOf(step, name)));
    return st.size;
  }
  Result<std::string> ReadSmall(int64_t step, std::string_view name, uint64_t max_size) override {
    return io::ReadFileToString(fs_, PathOf(step, name), max_size);
  }
  Status ReadAt(int64_t step, std::string_view name, uint64_t offset, uint64_t n, void* dst) override {
    const std::string path = PathOf(step, name);
    STRATA_ASSIGN_OR_RETURN(auto file, fs_.OpenForRead(path));
    auto* out = static_cast<uint8_t*>(dst);
    while (n > 0) {
      STRATA_ASSIGN_OR_RETURN(size_t got, file->ReadAt(offset, n, out));
      if (got == 0) return CorruptionError(path + ": file ends before offset " + std::to_string(offset + n));
      offset += got;
      out += got;
      n -= got;
    }
    return Status::Ok();
  }
  Status WriteFile(int64_t step, std::string_view name, const Buffer& data) override {
    STRATA_RETURN_IF_ERROR(fs_.CreateDirs(StepDir(step)));
    return io::WriteFileAtomic(fs_, PathOf(step, name), data);
  }
  Result<std::string> WriteFileFrom(int64_t step, std::string_view name, uint64_t size,
                                    const object::PartSource& source, const object::StreamPutHooks& hooks) override {
    STRATA_RETURN_IF_ERROR(fs_.CreateDirs(StepDir(step)));
    // Removes its temp file unless committed: a failure leaves nothing new.
    STRATA_ASSIGN_OR_RETURN(auto out, io::AtomicFileWriter::Create(fs_, PathOf(step, name)));
    const uint64_t parts = (size + kLocalPart - 1) / kLocalPart;
    Sequencer order;
    std::mutex mu;
    Status first;
    auto fail = [&](Status st) {
      std::lock_guard lock(mu);
      if (first.ok()) first = std::move(st);
      order.Cancel();
    };
    ParallelFor(parts, kLocalConcurrency, [&](size_t i) {
      const uint64_t offset = i * kLocalPart, n = std::min(kLocalPart, size - offset);
      auto part = source(offset, n);
      if (part.ok() && part->size() != n) part = InternalError(std::string(name) + ": short part from the source");
      if (!part.ok()) return fail(part.status());
      Status st;
      if (hooks.in_order && !order.RunInOrder(i, [&] { st = hooks.in_order(offset, *part); })) return;
      if (st.ok()) st = out->WriteAt(offset, part->data(), n);
      if (!st.ok()) fail(st);
    });
    STRATA_RETURN_IF_ERROR(first);
    if (hooks.before_commit) STRATA_RETURN_IF_ERROR(hooks.before_commit());
    STRATA_RETURN_IF_ERROR(out->Commit());
    return std::string();
  }
  Status Remove(int64_t step, std::string_view name) override {
    Status st = fs_.Remove(PathOf(step, name));
    return st.code() == Code::kNotFound ? Status::Ok() : st;
  }
  Status RemoveStep(int64_t step) override {
    auto files = ListFiles(step);
    if (!files.ok()) return files.status().code() == Code::kNotFound ? Status::Ok() : files.status();
    bool removed_marker = false;
    for (const auto& f : *files) {
      if (!IsCommitName(f.name)) continue;
      STRATA_RETURN_IF_ERROR(Remove(step, f.name));
      removed_marker = true;
    }
    if (removed_marker) STRATA_RETURN_IF_ERROR(fs_.SyncDir(StepDir(step)));
    STRATA_RETURN_IF_ERROR(io::RemoveAll(fs_, StepDir(step)));
    return fs_.SyncDir(dir_);
  }

 private:
  std::string StepDir(int64_t step) const { return io::JoinPath(dir_, StepDirName(step)); }
  std::string PathOf(int64_t step, std::string_view name) const { return io::JoinPath(StepDir(step), name); }

  io::FileSystem& fs_;
  std::string dir_;
};

class StoreLocationImpl : public Location {
 public:
  StoreLocationImpl(object::ObjectStorePtr store, uint64_t part_size, int concurrency)
      : store_(std::move(store)), part_size_(part_size), concurrency_(concurrency) {}
  std::string Describe() const override { return store_->Url(); }
  bool is_local() const override { return false; }

  Result<std::vector<int64_t>> ListSteps() override {
    std::vector<int64_t> steps;
    std::vector<std::string> dirs;
    STRATA_RETURN_IF_ERROR(object::ListAll(*store_, "step-", "/", &dirs).status());
    for (const auto& p : dirs) {
      std::string_view name(p);
      name.remove_suffix(1);  // the delimiter
      if (auto s = ParseStepDirName(name)) steps.push_back(*s);
    }
    std::sort(steps.begin(), steps.end());
    return steps;
  }
  Result<std::vector<FileEntry>> ListFiles(int64_t step) override {
    const std::string prefix = StepDirName(step) + "/";
    STRATA_ASSIGN_OR_RETURN(auto objects, ListStep(step));
    std::vector<FileEntry> files;
    for (const auto& o : objects) {
      std::string name = o.key.substr(prefix.size());
      if (!name.empty() && name.find('/') == std::string::npos) files.push_back({name, o.size});
    }
    if (files.empty()) return NotFoundError("no checkpoint step " + std::to_string(step) + " in " + Describe());
    return files;
  }
  Result<uint64_t> FileSize(int64_t step, std::string_view name) override {
    STRATA_ASSIGN_OR_RETURN(object::ObjectInfo info, store_->Head(KeyOf(step, name)));
    return info.size;
  }
  Result<std::string> ReadSmall(int64_t step, std::string_view name, uint64_t max_size) override {
    object::GetOptions opts;
    opts.range = object::ByteRange::Of(0, max_size + 1);
    STRATA_ASSIGN_OR_RETURN(object::GetResult got, store_->Get(KeyOf(step, name), opts));
    STRATA_RETURN_IF_ERROR(CheckVersion(step, KeyOf(step, name), got.info.etag));
    if (got.info.size > max_size) {
      return InvalidArgumentError(KeyOf(step, name) + " is larger than " + std::to_string(max_size) + " bytes");
    }
    return got.data.ToString();
  }
  Status ReadAt(int64_t step, std::string_view name, uint64_t offset, uint64_t n, void* dst) override {
    if (n == 0) return Status::Ok();
    const std::string key = KeyOf(step, name);
    const uint64_t parts = (n + part_size_ - 1) / part_size_;
    std::mutex mu;
    Status first;
    ParallelFor(parts, std::max<size_t>(1, std::min<size_t>(parts, concurrency_)), [&](size_t i) {
      const uint64_t off = i * part_size_, len = std::min(part_size_, n - off);
      object::GetOptions opts;
      opts.range = object::ByteRange::Of(offset + off, len);
      auto got = store_->Get(key, opts);
      Status st = got.status();
      if (st.ok()) st = CheckVersion(step, key, got->info.etag);
      if (st.ok() && got->data.size() != len) st = CorruptionError(key + ": object ends before the expected size");
      if (st.code() == Code::kOutOfRange) st = CorruptionError(key + ": object shorter than expected");
      if (st.ok()) std::memcpy(static_cast<uint8_t*>(dst) + off, got->data.data(), len);
      std::lock_guard lock(mu);
      if (!st.ok() && first.ok()) first = st;
    });
    return first;
  }
  Status WriteFile(int64_t step, std::string_view name, const Buffer& data) override {
    Forget(step);
    return object::ParallelPut(*store_, KeyOf(step, name), data, std::max(part_size_, store_->MinPartSize()),
                               concurrency_)
        .status();
  }
  Result<std::string> WriteFileFrom(int64_t step, std::string_view name, uint64_t size,
                                    const object::PartSource& source, const object::StreamPutHooks& hooks) override {
    Forget(step);
    STRATA_ASSIGN_OR_RETURN(object::ObjectInfo info, object::ParallelPutFrom(*store_, KeyOf(step, name), size,
                                                                             part_size_, concurrency_, source, hooks));
    return info.etag;
  }
  Status Remove(int64_t step, std::string_view name) override {
    Forget(step);
    return store_->Delete(KeyOf(step, name));
  }
  Status RemoveStep(int64_t step) override {
    auto files = ListFiles(step);
    if (!files.ok()) return files.status().code() == Code::kNotFound ? Status::Ok() : files.status();
    // Markers first, so the step stops counting at once, then the rest; each
    // group at once (a deletion on a store is a round trip, not work).
    for (bool markers : {true, false}) {
      std::vector<std::string> names;
      for (const auto& f : *files) {
        if (IsCommitName(f.name) == markers) names.push_back(f.name);
      }
      std::vector<Status> results(names.size());
      ParallelFor(names.size(), std::max(1, concurrency_), [&](size_t i) { results[i] = Remove(step, names[i]); });
      for (const auto& st : results) STRATA_RETURN_IF_ERROR(st);
    }
    return Status::Ok();
  }

 private:
  std::string KeyOf(int64_t step, std::string_view name) const { return StepDirName(step) + "/" + std::string(name); }

  // Checks that an answer for `key` is the version the store lists. A lagging
  // replica of an eventually consistent store answers whole from an older
  // version (another attempt's manifest or shard of a step saved again, or
  // an object deleted since): its bytes fail the hash chain, and taken as
  // damage (Corruption) they made a committed step look torn, so retention
  // could delete it and Latest() fell back to an older step. Such an answer
  // is Unavailable (retryable, proves nothing), never Corruption. The step's
  // listing is remembered, and listed again before concluding (the object
  // may have been replaced since).
  Status CheckVersion(int64_t step, const std::string& key, const std::string& etag) {
    if (etag.empty()) return Status::Ok();  // a store without ETags: nothing to compare
    {
      MutexLock lock(mu_);
      if (auto s = listed_.find(step); s != listed_.end()) {
        if (auto k = s->second.find(key); k != s->second.end() && k->second == etag) return Status::Ok();
      }
    }
    STRATA_ASSIGN_OR_RETURN(auto objects, ListStep(step));
    auto k = std::find_if(objects.begin(), objects.end(), [&](const auto& o) { return o.key == key; });
    const std::optional<std::string> listed = k == objects.end() ? std::nullopt : std::optional<std::string>(k->etag);
    if (listed == etag) return Status::Ok();
    return UnavailableError(key + " was answered with version " + etag +
                            (listed ? " while the store lists " + *listed : ", which the store no longer lists") +
                            ": an out-of-date replica answered; retry");
  }
  // Lists the step's objects and remembers their ETags for CheckVersion: the
  // readers' own ListFiles fills it, so checking answers costs no extra LIST.
  Result<std::vector<object::ObjectInfo>> ListStep(int64_t step) {
    STRATA_ASSIGN_OR_RETURN(auto objects, object::ListAll(*store_, StepDirName(step) + "/"));
    std::map<std::string, std::string> etags;
    for (const auto& o : objects) etags[o.key] = o.etag;
    MutexLock lock(mu_);
    listed_[step] = std::move(etags);
    if (listed_.size() > kListedSteps) listed_.erase(listed_.begin());  // the lowest step
    return objects;
  }
  void Forget(int64_t step) {
    MutexLock lock(mu_);
    listed_.erase(step);
  }

  static constexpr size_t kListedSteps = 64;
  object::ObjectStorePtr store_;
  uint64_t part_size_;
  int concurrency_;
  Mutex mu_;
  std::map<int64_t, std::map<std::string, std::string>> listed_ GUARDED_BY(mu_);  // step -> key -> ETag, as last listed
};

}  // namespace

Result<std::unique_ptr<Location>> OpenLocalLocation(io::FileSystem& fs, std::string dir) {
  if (dir.empty()) return InvalidArgumentError("checkpoint directory must not be empty");
  STRATA_RETURN_IF_ERROR(fs.CreateDirs(dir).WithContext("creating checkpoint directory " + dir));
  return std::unique_ptr<Location>(new LocalLocation(fs, std::move(dir)));
}

std::unique_ptr<Location> StoreLocation(object::ObjectStorePtr store, uint64_t part_size, int concurrency) {
  return std::make_unique<StoreLocationImpl>(std::move(store), std::max<uint64_t>(part_size, 1),
                                             std::max(concurrency, 1));
}

Result<std::unique_ptr<Location>> OpenLocation(std::string_view dir_or_url) {
  if (dir_or_url.find("://") != std::string_view::npos) {
    STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store, object::OpenStore(dir_or_url));
    return StoreLocation(std::move(store));
  }
  // Readers must not create directories as a side effect: a missing one
  // gives NotFound when listed; writes (pull) create what they need.
  if (dir_or_url.empty()) return InvalidArgumentError("checkpoint directory must not be empty");
  return std::unique_ptr<Location>(new LocalLocation(io::DefaultFileSystem(), std::string(dir_or_url)));
}

}  // namespace strata::ckpt
