#include "io/durable.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <vector>

namespace strata::io {
namespace {

// Unique within the process (counter) and across processes (pid).
std::string TempNameFor(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

Status WriteAndCommit(FileSystem& fs, const std::string& tmp, const std::string& path,
                      const std::vector<std::string_view>& parts, bool streaming) {
  // (The temp name is unique to this call: the streaming open's O_TRUNC replaces nobody's file.)
  STRATA_ASSIGN_OR_RETURN(auto file, streaming ? fs.OpenForStreamingWrite(tmp) : fs.CreateExclusive(tmp));
  for (std::string_view part : parts) STRATA_RETURN_IF_ERROR(file->Append(part));
  STRATA_RETURN_IF_ERROR(file->Sync());
  STRATA_RETURN_IF_ERROR(file->Close());
  STRATA_RETURN_IF_ERROR(fs.Rename(tmp, path));
  return Status::Ok();
}

Status WriteAtomic(FileSystem& fs, const std::string& path, const std::vector<std::string_view>& parts,
                   bool streaming = false) {
  std::string tmp = TempNameFor(path);
  Status s = WriteAndCommit(fs, tmp, path, parts, streaming);
  if (!s.ok()) {
    // The rename did not happen (or failed): the temp file is garbage. Best effort.
    fs.Remove(tmp).IgnoreError();
    return s.WithContext("write " + path + " atomically");
  }
  // After the rename the new contents are visible; the directory fsync makes them survive a crash.
  return fs.SyncDir(ParentDir(path)).WithContext("write " + path + " atomically");
}

}  // namespace

Status WriteFileAtomic(FileSystem& fs, const std::string& path, std::string_view data) {
  return WriteAtomic(fs, path, {data});
}

Status WriteFileAtomic(FileSystem& fs, const std::string& path, const Buffer& data) {
  return WriteAtomic(fs, path, {data.view()});
}

Status WriteFileAtomic(FileSystem& fs, const std::string& path, const std::vector<Buffer>& parts) {
  std::vector<std::string_view> views;
  for (const Buffer& part : parts) views.push_back(part.view());
  return WriteAtomic(fs, path, views);
}

Status WriteFileAtomicStreaming(FileSystem& fs, const std::string& path, const std::vector<Buffer>& parts) {
  std::vector<std::string_view> views;
  for (const Buffer& part : parts) views.push_back(part.view());
  return WriteAtomic(fs, path, views, /*streaming=*/true);
}

Status WriteFileAtomicCreatingDirs(FileSystem& fs, const std::string& path, std::string_view data) {
  if (path.empty()) return InvalidArgumentError("write a file: empty path");
  STRATA_RETURN_IF_ERROR(fs.CreateDirs(ParentDir(path)).WithContext("write " + path));
  return WriteFileAtomic(fs, path, data);
}

AtomicFileWriter::AtomicFileWriter(FileSystem& fs, std::string path, std::string tmp,
                                   std::unique_ptr<WritableFile> file)
    : fs_(fs), path_(std::move(path)), tmp_(std::move(tmp)), file_(std::move(file)) {}

Result<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(FileSystem& fs, const std::string& path) {
  std::string tmp = TempNameFor(path);
  auto file = fs.CreateExclusive(tmp);
  if (!file.ok()) return file.status().WithContext("write " + path + " atomically");
  return std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(fs, path, std::move(tmp), std::move(*file)));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (committed_) return;
  if (file_) file_->Close().IgnoreError();
  fs_.Remove(tmp_).IgnoreError();  // best effort: an uncommitted temp file is garbage
}

Status AtomicFileWriter::WriteAt(uint64_t offset, const void* data, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return InternalError("write to " + path_ + " after Commit()");
  return file_->WriteAt(offset, data, n).WithContext("write " + path_ + " atomically");
}

Status AtomicFileWriter::Commit() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return InternalError("Commit() of " + path_ + " called twice, or after a failure");
  std::unique_ptr<WritableFile> file = std::move(file_);
  Status s = file->Sync();
  if (s.ok()) s = file->Close();
  if (s.ok()) s = fs_.Rename(tmp_, path_);
  if (!s.ok()) return s.WithContext("write " + path_ + " atomically");  // the destructor removes the temp file
  committed_ = true;
  return fs_.SyncDir(ParentDir(path_)).WithContext("write " + path_ + " atomically");
}

Result<std::string> ReadFileToString(FileSystem& fs, const std::string& path, uint64_t max_size) {
  STRATA_ASSIGN_OR_RETURN(auto file, fs.OpenForRead(path));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  auto too_big = [&] {
    return InvalidArgumentError("file " + path + " is larger than the " + std::to_string(max_size) +
                                " byte limit for reading it whole");
  };
  if (size > max_size) return too_big();
  // The size is only a hint (the file may grow): read in chunks until EOF, never past max_size + 1.
  constexpr size_t kChunk = 1 << 20;
  std::string out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(size, 64 * kChunk)));  // a lying size cannot make us over-allocate
  for (;;) {
    uint64_t left = max_size - out.size();  // out.size() <= max_size here
    // One byte past the limit tells a file that grew beyond it.
    size_t want = left >= kChunk ? kChunk : static_cast<size_t>(left) + 1;
    size_t old = out.size();
    out.resize(old + want);
    STRATA_ASSIGN_OR_RETURN(size_t got, file->ReadAt(old, want, out.data() + old));
    out.resize(old + got);
    if (out.size() > max_size) return too_big();
    if (got < want) break;  // end of file
  }
  return out;
}

Result<std::string> MakeTempDir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = JoinPath(base && *base ? base : "/tmp", std::string(prefix) + "XXXXXX");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) return ErrnoToStatus(errno, "create temp directory " + templ);
  return std::string(buf.data());
}

Status RemoveAll(FileSystem& fs, const std::string& path) {
  // Unlink first: removes files and symlinks (never following them into their target).
  Status removed = fs.Remove(path);
  if (removed.ok() || removed.code() == Code::kNotFound) return Status::Ok();
  auto entries = fs.ListDir(path);
  if (!entries.ok()) return removed;  // not a directory: the unlink error is the real one
  for (const auto& e : *entries) STRATA_RETURN_IF_ERROR(RemoveAll(fs, JoinPath(path, e.name)));
  return fs.RemoveDir(path);
}

}  // namespace strata::io
