// CrashingFileSystem: a FaultFileSystem that "dies" at a chosen durable-write
// step, for power-loss campaigns. Every mutating step (open for write,
// write, sync, rename, remove, mkdir, directory sync) after the first
// `crash_at` fails, as if the process had died there; SimulateCrash() then
// drops what the dead process had not synced. Counting steps on a run that
// never crashes tells a campaign how many crash points an operation has.
// Thread-safe (the step counter is atomic; steps on several threads count in
// the order they happen). Test-only, like FaultFileSystem.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "io/fault_file_system.h"

namespace strata::io {

class CrashingFileSystem : public FaultFileSystem {
 public:
  explicit CrashingFileSystem(FileSystem& base) : FaultFileSystem(base) {}
  // Steps counted from now; the step numbered `steps` (0-based) and every later one fail.
  void CrashAfter(int64_t steps) { steps_ = 0, crash_at_ = steps; }
  int64_t steps() const { return steps_; }
  bool crashed() const { return steps_ > crash_at_; }

  Status Step(const std::string& path) {
    return ++steps_ > crash_at_ ? IOError("crashed before this step: " + path) : Status::Ok();
  }
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path, bool truncate = true) override {
    STRATA_RETURN_IF_ERROR(Step(path));
    return Wrap(FaultFileSystem::OpenForWrite(path, truncate));
  }
  Result<std::unique_ptr<WritableFile>> CreateExclusive(const std::string& path) override {
    STRATA_RETURN_IF_ERROR(Step(path));
    return Wrap(FaultFileSystem::CreateExclusive(path));
  }
  Status Rename(const std::string& from, const std::string& to) override {
    STRATA_RETURN_IF_ERROR(Step(to));
    return FaultFileSystem::Rename(from, to);
  }
  Status Remove(const std::string& path) override {
    STRATA_RETURN_IF_ERROR(Step(path));
    return FaultFileSystem::Remove(path);
  }
  Status RemoveDir(const std::string& path) override {
    STRATA_RETURN_IF_ERROR(Step(path));
    return FaultFileSystem::RemoveDir(path);
  }
  Status CreateDirs(const std::string& path) override {
    STRATA_RETURN_IF_ERROR(Step(path));
    return FaultFileSystem::CreateDirs(path);
  }
  Status SyncDir(const std::string& path) override {
    STRATA_RETURN_IF_ERROR(Step(path));
    return FaultFileSystem::SyncDir(path);
  }
  Status Truncate(const std::string& path, uint64_t size) override {
    STRATA_RETURN_IF_ERROR(Step(path));
    return FaultFileSystem::Truncate(path, size);
  }

 private:
  class File : public WritableFile {
   public:
    File(CrashingFileSystem* fs, std::unique_ptr<WritableFile> inner) : fs_(fs), inner_(std::move(inner)) {}
    using WritableFile::Append;
    using WritableFile::WriteAt;
    Status Append(const void* data, size_t n) override {
      STRATA_RETURN_IF_ERROR(fs_->Step(path()));
      return inner_->Append(data, n);
    }
    Status WriteAt(uint64_t offset, const void* data, size_t n) override {
      STRATA_RETURN_IF_ERROR(fs_->Step(path()));
      return inner_->WriteAt(offset, data, n);
    }
    Status Sync() override {
      STRATA_RETURN_IF_ERROR(fs_->Step(path()));
      return inner_->Sync();
    }
    Status SetXattr(const std::string& name, std::string_view value) override {
      STRATA_RETURN_IF_ERROR(fs_->Step(path()));
      return inner_->SetXattr(name, value);
    }
    Status Close() override { return inner_->Close(); }
    uint64_t Size() const override { return inner_->Size(); }
    const std::string& path() const override { return inner_->path(); }

   private:
    CrashingFileSystem* fs_;
    std::unique_ptr<WritableFile> inner_;
  };
  Result<std::unique_ptr<WritableFile>> Wrap(Result<std::unique_ptr<WritableFile>> file) {
    if (!file.ok()) return file.status();
    return std::unique_ptr<WritableFile>(std::make_unique<File>(this, std::move(*file)));
  }

  std::atomic<int64_t> crash_at_{std::numeric_limits<int64_t>::max()};
  std::atomic<int64_t> steps_{0};
};

}  // namespace strata::io
