#include "io/fault_file_system.h"

#include <algorithm>
#include <utility>

namespace strata::io {
namespace {

std::string NormalizeDir(std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return std::string(dir);
}

Result<std::string> ReadAll(FileSystem& fs, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto file, fs.OpenForRead(path));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  std::string out(size, '\0');
  STRATA_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, size, out.data()));
  out.resize(got);
  return out;
}

Status WriteAll(FileSystem& fs, const std::string& path, uint64_t offset, std::string_view data) {
  STRATA_ASSIGN_OR_RETURN(auto file, fs.OpenForWrite(path, /*truncate=*/false));
  STRATA_RETURN_IF_ERROR(file->WriteAt(offset, data.data(), data.size()));
  return file->Close();
}

}  // namespace

class FaultRandomAccessFile : public RandomAccessFile {
 public:
  FaultRandomAccessFile(FaultFileSystem* fs, std::unique_ptr<RandomAccessFile> inner)
      : fs_(fs), inner_(std::move(inner)) {}

  Result<size_t> ReadAt(uint64_t offset, size_t n, void* dst) override {
    STRATA_RETURN_IF_ERROR(fs_->MaybeFail(kFaultRead, path(), "read"));
    fs_->PassReadGate();
    auto got = inner_->ReadAt(offset, n, dst);
    if (got.ok()) {
      std::lock_guard lock(fs_->mu_);
      fs_->counters_.reads++;
      fs_->counters_.bytes_read += *got;
    }
    return got;
  }
  Result<uint64_t> Size() override { return inner_->Size(); }
  Result<FileStat> Stat() override { return inner_->Stat(); }
  Result<std::string> GetXattr(const std::string& name) override { return inner_->GetXattr(name); }
  Status SetXattr(const std::string& name, std::string_view value) override { return inner_->SetXattr(name, value); }
  const std::string& path() const override { return inner_->path(); }

 private:
  FaultFileSystem* fs_;
  std::unique_ptr<RandomAccessFile> inner_;
};

class FaultWritableFile : public WritableFile {
 public:
  FaultWritableFile(FaultFileSystem* fs, std::unique_ptr<WritableFile> inner, uint64_t epoch)
      : fs_(fs), inner_(std::move(inner)), epoch_(epoch) {}
  using WritableFile::Append;
  using WritableFile::WriteAt;

  Status Append(const void* data, size_t n) override { return WriteAt(inner_->Size(), data, n); }

  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    uint64_t allowed = 0;
    STRATA_RETURN_IF_ERROR(fs_->BeforeWrite(path(), offset, n, epoch_, &allowed));
    if (allowed > 0) STRATA_RETURN_IF_ERROR(inner_->WriteAt(offset, data, allowed));
    fs_->AfterWrite(allowed);
    if (allowed < n) {
      return NoSpaceError("write " + path() + " (disk full: injected write budget exhausted)");
    }
    return Status::Ok();
  }

  Status SetXattr(const std::string& name, std::string_view value) override { return inner_->SetXattr(name, value); }

  Status Sync() override {
    if (fs_->Stale(epoch_)) return IOError("sync " + path() + ": file handle predates SimulateCrash()");
    STRATA_RETURN_IF_ERROR(fs_->MaybeFail(kFaultSync, path(), "sync"));
    STRATA_RETURN_IF_ERROR(inner_->Sync());
    fs_->AfterSync(path(), inner_->Size(), epoch_);
    return Status::Ok();
  }

  Status Close() override { return inner_->Close(); }
  uint64_t Size() const override { return inner_->Size(); }
  const std::string& path() const override { return inner_->path(); }

 private:
  FaultFileSystem* fs_;
  std::unique_ptr<WritableFile> inner_;
  uint64_t epoch_;
};

FaultFileSystem::FaultFileSystem(FileSystem& base) : base_(base) {}
FaultFileSystem::~FaultFileSystem() {
  OpenWriteGate();
  OpenReadGate();
}

void FaultFileSystem::CloseWriteGate() {
  std::lock_guard lock(gate_mu_);
  gate_closed_ = true;
}

void FaultFileSystem::OpenWriteGate() {
  std::lock_guard lock(gate_mu_);
  gate_closed_ = false;
  gate_cv_.notify_all();
}

bool FaultFileSystem::WaitHeldWrites(int n, std::chrono::milliseconds deadline) {
  std::unique_lock lock(gate_mu_);
  return gate_cv_.wait_for(lock, deadline, [&] { return gate_held_ >= n; });
}

void FaultFileSystem::PassWriteGate() {
  std::unique_lock lock(gate_mu_);
  if (!gate_closed_) return;
  ++gate_held_;
  gate_cv_.notify_all();
  gate_cv_.wait(lock, [&] { return !gate_closed_; });
  --gate_held_;
}

void FaultFileSystem::CloseReadGate() {
  std::lock_guard lock(gate_mu_);
  read_gate_closed_ = true;
}

void FaultFileSystem::OpenReadGate() {
  std::lock_guard lock(gate_mu_);
  read_gate_closed_ = false;
  gate_cv_.notify_all();
}

bool FaultFileSystem::WaitHeldReads(int n, std::chrono::milliseconds deadline) {
  std::unique_lock lock(gate_mu_);
  return gate_cv_.wait_for(lock, deadline, [&] { return read_gate_held_ >= n; });
}

void FaultFileSystem::PassReadGate() {
  std::unique_lock lock(gate_mu_);
  if (!read_gate_closed_) return;
  ++read_gate_held_;
  gate_cv_.notify_all();
  gate_cv_.wait(lock, [&] { return !read_gate_closed_; });
  --read_gate_held_;
}

void FaultFileSystem::SetWriteBudget(uint64_t bytes) {
  std::lock_guard lock(mu_);
  budget_ = bytes;
}

void FaultFileSystem::ClearWriteBudget() {
  std::lock_guard lock(mu_);
  budget_.reset();
}

void FaultFileSystem::InjectErrors(FaultSpec spec) {
  std::lock_guard lock(mu_);
  rng_.seed(spec.seed);
  fault_ = std::move(spec);
}

void FaultFileSystem::ClearErrors() {
  std::lock_guard lock(mu_);
  fault_.reset();
}

FaultCounters FaultFileSystem::Counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

Status FaultFileSystem::MaybeFail(uint32_t op, const std::string& path, std::string_view what) {
  std::lock_guard lock(mu_);
  return MaybeFailLocked(op, path, what);
}

Status FaultFileSystem::MaybeFailLocked(uint32_t op, const std::string& path, std::string_view what) {
  if (!fault_ || !(fault_->ops & op)) return Status::Ok();
  if (path.find(fault_->path_substring) == std::string::npos) return Status::Ok();
  double draw = static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  if (draw >= fault_->probability) return Status::Ok();
  counters_.injected_errors++;
  return IOError("injected fault: " + std::string(what) + " " + path, "FaultFileSystem");
}

bool FaultFileSystem::Stale(uint64_t epoch) const {
  std::lock_guard lock(mu_);
  return epoch != epoch_;
}

Status FaultFileSystem::BeforeWrite(const std::string& path, uint64_t offset, size_t n, uint64_t epoch,
                                    uint64_t* allowed) {
  PassWriteGate();
  std::lock_guard lock(mu_);
  if (epoch != epoch_) return IOError("write " + path + ": file handle predates SimulateCrash()");
  STRATA_RETURN_IF_ERROR(MaybeFailLocked(kFaultWrite, path, "write"));
  uint64_t fits = n;
  if (budget_) {
    fits = std::min<uint64_t>(n, *budget_);
    *budget_ -= fits;
    if (fits < n) counters_.no_space_errors++;
  }
  *allowed = fits;
  // Keep the bytes this write replaces inside the synced prefix, so a crash can restore them.
  auto it = files_.find(path);
  if (it != files_.end() && fits > 0 && offset < it->second.synced_size) {
    uint64_t end = std::min(offset + fits, it->second.synced_size);
    STRATA_ASSIGN_OR_RETURN(auto reader, base_.OpenForRead(path));
    std::string old(end - offset, '\0');
    STRATA_ASSIGN_OR_RETURN(size_t got, reader->ReadAt(offset, old.size(), old.data()));
    old.resize(got);
    it->second.undo.emplace_back(offset, std::move(old));
  }
  return Status::Ok();
}

void FaultFileSystem::AfterWrite(size_t n) {
  std::lock_guard lock(mu_);
  counters_.writes++;
  counters_.bytes_written += n;
}

void FaultFileSystem::AfterSync(const std::string& path, uint64_t size, uint64_t epoch) {
  std::lock_guard lock(mu_);
  counters_.syncs++;
  if (epoch != epoch_) return;
  FileState& st = files_[path];
  st.synced_size = size;
  st.undo.clear();
}

Result<std::unique_ptr<RandomAccessFile>> FaultFileSystem::OpenForRead(const std::string& path) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultOpen, path, "open"));
  STRATA_ASSIGN_OR_RETURN(auto inner, base_.OpenForRead(path));
  {
    std::lock_guard lock(mu_);
    counters_.opens++;
  }
  return std::unique_ptr<RandomAccessFile>(std::make_unique<FaultRandomAccessFile>(this, std::move(inner)));
}

Result<std::unique_ptr<WritableFile>> FaultFileSystem::OpenWritable(const std::string& path, bool truncate,
                                                                    bool exclusive) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultOpen, path, "open"));
  STRATA_ASSIGN_OR_RETURN(bool existed, base_.Exists(path));
  auto opened = exclusive ? base_.CreateExclusive(path) : base_.OpenForWrite(path, truncate);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<WritableFile> inner = std::move(opened).value();
  std::lock_guard lock(mu_);
  counters_.opens++;
  if (!existed) {
    files_[path] = FileState{};
    dir_ops_.push_back(DirOp{DirOp::kCreate, NormalizeDir(ParentDir(path)), path, {}, {}});
  } else if (truncate) {
    files_[path] = FileState{};  // the truncation itself counts as durable; new bytes are not
  } else if (!files_.count(path)) {
    files_[path] = FileState{inner->Size(), {}};  // bytes already there are assumed durable
  }
  return std::unique_ptr<WritableFile>(std::make_unique<FaultWritableFile>(this, std::move(inner), epoch_));
}

Result<std::unique_ptr<WritableFile>> FaultFileSystem::OpenForWrite(const std::string& path, bool truncate) {
  return OpenWritable(path, truncate, /*exclusive=*/false);
}

Result<std::unique_ptr<WritableFile>> FaultFileSystem::CreateExclusive(const std::string& path) {
  return OpenWritable(path, /*truncate=*/true, /*exclusive=*/true);
}

Status FaultFileSystem::Rename(const std::string& from, const std::string& to) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultMetadata, from, "rename"));
  std::lock_guard lock(mu_);
  std::optional<std::string> replaced;
  if (from != to) {
    auto st = base_.Stat(to);
    if (st.ok() && !st->is_dir) {
      STRATA_ASSIGN_OR_RETURN(std::string old, ReadAll(base_, to));
      replaced = std::move(old);
    }
  }
  STRATA_RETURN_IF_ERROR(base_.Rename(from, to));
  counters_.renames++;
  if (from == to) return Status::Ok();
  files_.erase(to);
  if (auto node = files_.extract(from)) {
    node.key() = to;
    files_.insert(std::move(node));
  }
  dir_ops_.push_back(DirOp{DirOp::kRename, NormalizeDir(ParentDir(to)), from, to, std::move(replaced)});
  return Status::Ok();
}

Status FaultFileSystem::Remove(const std::string& path) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultMetadata, path, "remove"));
  STRATA_RETURN_IF_ERROR(base_.Remove(path));
  std::lock_guard lock(mu_);
  counters_.removes++;
  files_.erase(path);
  return Status::Ok();
}

Status FaultFileSystem::RemoveDir(const std::string& path) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultMetadata, path, "remove directory"));
  STRATA_RETURN_IF_ERROR(base_.RemoveDir(path));
  std::lock_guard lock(mu_);
  counters_.removes++;
  return Status::Ok();
}

Status FaultFileSystem::CreateDirs(const std::string& path) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultMetadata, path, "create directory"));
  return base_.CreateDirs(path);
}

Result<std::vector<DirEntry>> FaultFileSystem::ListDir(const std::string& path) { return base_.ListDir(path); }
Result<FileStat> FaultFileSystem::Stat(const std::string& path) { return base_.Stat(path); }
Result<bool> FaultFileSystem::Exists(const std::string& path) { return base_.Exists(path); }

Status FaultFileSystem::SyncDir(const std::string& path) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultSync, path, "sync directory"));
  STRATA_RETURN_IF_ERROR(base_.SyncDir(path));
  std::string dir = NormalizeDir(path);
  std::lock_guard lock(mu_);
  counters_.dir_syncs++;
  std::erase_if(dir_ops_, [&](const DirOp& op) { return op.dir == dir; });
  return Status::Ok();
}

Result<SpaceInfo> FaultFileSystem::Space(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(SpaceInfo space, base_.Space(path));
  std::lock_guard lock(mu_);
  if (budget_) space.available = std::min(space.available, *budget_);
  return space;
}

Result<std::unique_ptr<FileLock>> FaultFileSystem::LockFile(const std::string& path) { return base_.LockFile(path); }

Result<std::unique_ptr<FileLock>> FaultFileSystem::LockFileBlocking(const std::string& path,
                                                                    const LockWaitOptions& options) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultOpen, path, "lock"));
  return base_.LockFileBlocking(path, options);
}

Status FaultFileSystem::Truncate(const std::string& path, uint64_t size) {
  STRATA_RETURN_IF_ERROR(MaybeFail(kFaultMetadata, path, "truncate"));
  STRATA_RETURN_IF_ERROR(base_.Truncate(path, size));
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) {
    FileState& st = it->second;
    st.synced_size = std::min(st.synced_size, size);
    // Saved bytes beyond the new end no longer exist to restore.
    std::erase_if(st.undo, [&](const auto& u) { return u.first >= size; });
    for (auto& [offset, bytes] : st.undo) bytes.resize(std::min<uint64_t>(bytes.size(), size - offset));
  }
  return Status::Ok();
}

Status FaultFileSystem::RestoreFile(const std::string& path, const FileState& state) {
  auto st = base_.Stat(path);
  if (!st.ok()) return st.status().code() == Code::kNotFound ? Status::Ok() : st.status();
  for (auto it = state.undo.rbegin(); it != state.undo.rend(); ++it) {
    STRATA_RETURN_IF_ERROR(WriteAll(base_, path, it->first, it->second));
  }
  if (st->size > state.synced_size) STRATA_RETURN_IF_ERROR(base_.Truncate(path, state.synced_size));
  return Status::Ok();
}

Status FaultFileSystem::UndoDirOp(const DirOp& op) {
  if (op.kind == DirOp::kCreate) {
    Status s = base_.Remove(op.from);
    return s.code() == Code::kNotFound ? Status::Ok() : s;
  }
  STRATA_ASSIGN_OR_RETURN(bool present, base_.Exists(op.to));
  if (present) STRATA_RETURN_IF_ERROR(base_.Rename(op.to, op.from));
  if (op.replaced) {
    STRATA_ASSIGN_OR_RETURN(auto file, base_.OpenForWrite(op.to, /*truncate=*/true));
    STRATA_RETURN_IF_ERROR(file->Append(*op.replaced));
    STRATA_RETURN_IF_ERROR(file->Close());
  }
  return Status::Ok();
}

Status FaultFileSystem::SimulateCrash() {
  std::lock_guard lock(mu_);
  Status first_error;
  auto note = [&](Status s) {
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  };
  for (const auto& [path, state] : files_) note(RestoreFile(path, state));
  for (auto it = dir_ops_.rbegin(); it != dir_ops_.rend(); ++it) note(UndoDirOp(*it));
  files_.clear();
  dir_ops_.clear();
  ++epoch_;
  return first_error.ok() ? Status::Ok() : first_error.WithContext("SimulateCrash");
}

void FaultFileSystem::MarkAllDurable() {
  std::lock_guard lock(mu_);
  for (auto& [path, state] : files_) {
    auto st = base_.Stat(path);
    state.synced_size = st.ok() ? st->size : 0;
    state.undo.clear();
  }
  dir_ops_.clear();
}

}  // namespace strata::io
