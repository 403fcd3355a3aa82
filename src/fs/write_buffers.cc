#include "fs/write_buffers.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <random>

#include "base/log.h"

namespace strata::fs {

namespace {
constexpr std::string_view kBufferDirPrefix = "strata-mount-";
constexpr std::string_view kLockName = "lock";

// A key as one file name: '%' and '/' escaped, long keys cut (with a hash so
// two long keys stay apart).
std::string EscapeKey(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '%')
      out += "%25";
    else if (c == '/')
      out += "%2F";
    else
      out += c;
  }
  if (out.size() > 200) out = out.substr(0, 180) + "-" + std::to_string(std::hash<std::string_view>()(key));
  return out;
}

std::string Timestamp(WallTime t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}
}  // namespace

WriteBuffers::WriteBuffers(const FsOptions& options, io::FileSystem& local, Clock& clock)
    : options_(options), local_(local), clock_(clock) {}

std::string WriteBuffers::LostFoundDir() const {
  return options_.lost_found_dir.empty() ? options_.write_dir + "/lost+found" : options_.lost_found_dir;
}

void WriteBuffers::KeepLost(const std::string& buffer, const std::string& key) {
  const std::string dir = LostFoundDir();
  std::string to = dir + "/" + Timestamp(clock_.WallNow()) + "-" + EscapeKey(key);
  Status st = local_.CreateDirs(dir);
  for (int i = 1; st.ok() && local_.Exists(to).value_or(true); ++i) {
    if (i > 1000) st = AlreadyExistsError("no free name in " + dir);
    to = dir + "/" + Timestamp(clock_.WallNow()) + "-" + std::to_string(i) + "-" + EscapeKey(key);
  }
  if (st.ok()) st = local_.Rename(buffer, to);
  if (st.ok()) {
    STRATA_LOG_WARN("mount: /{} was not uploaded; its bytes are kept in {}", key, to);
  } else {  // never deleted: left where it is, and said so
    STRATA_LOG_WARN("mount: /{} was not uploaded; its bytes stay in {} (could not move them to {}: {})", key, buffer,
                    dir, st.ToString());
  }
}

void WriteBuffers::SweepStale() {
  if (options_.read_only) return;
  auto entries = local_.ListDir(options_.write_dir);
  if (!entries.ok()) return;  // a missing dir holds nothing; mount setup reports real problems
  for (const auto& e : *entries) {
    if (!e.is_dir || !e.name.starts_with(kBufferDirPrefix)) continue;
    const std::string dir = options_.write_dir + "/" + e.name;
    // A live mount holds its lock: only the directories of dead mounts are ours to sweep.
    auto lock = local_.LockFile(dir + "/" + std::string(kLockName));
    if (!lock.ok()) continue;
    auto files = local_.ListDir(dir);
    if (!files.ok()) continue;
    size_t removed = 0, kept = 0;
    for (const auto& f : *files) {
      if (f.is_dir || f.name == kLockName) continue;
      const std::string path = dir + "/" + f.name;
      if (f.size == 0) {
        if (local_.Remove(path).ok()) ++removed;
        continue;
      }
      // Its key is not known (it may even be uploaded): kept, under the mount's name.
      KeepLost(path, e.name + "/" + f.name);
      ++kept;
    }
    local_.Remove(dir + "/" + std::string(kLockName)).IgnoreError();
    lock->reset();
    local_.RemoveDir(dir).IgnoreError();  // fails while a buffer could not be moved: kept
    STRATA_LOG_INFO("mount: swept {} of a mount that died: {} empty buffers removed, {} kept in {}", dir, removed, kept,
                    LostFoundDir());
  }
}

Result<std::string> WriteBuffers::Dir() {
  MutexLock lock(mu_);
  if (!dir_.empty()) return dir_;
  std::random_device rd;
  const uint64_t r = (uint64_t{rd()} << 32) | rd();
  char rnd[17];
  std::snprintf(rnd, sizeof rnd, "%016llx", static_cast<unsigned long long>(r));
  const std::string dir =
      options_.write_dir + "/" + std::string(kBufferDirPrefix) + std::to_string(getpid()) + "-" + rnd;
  STRATA_RETURN_IF_ERROR(local_.CreateDirs(dir));
  auto held = local_.LockFile(dir + "/" + std::string(kLockName));
  if (!held.ok()) return held.status().WithContext("locking write buffer directory " + dir);
  lock_ = std::move(held).value();
  dir_ = dir;
  return dir_;
}

Result<std::shared_ptr<Writer>> WriteBuffers::NewWriter(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string dir, Dir());
  auto w = std::make_shared<Writer>();
  // O_EXCL: never opens a file that exists (someone else's, or a stale one).
  Result<std::unique_ptr<io::WritableFile>> out = InternalError("not created");
  for (int attempt = 0; attempt < 8; ++attempt) {
    w->temp_path = dir + "/w-" + std::to_string(next_temp_++);
    out = local_.CreateExclusive(w->temp_path);
    if (out.ok() || out.status().code() != Code::kAlreadyExists) break;
  }
  if (!out.ok()) return out.status().WithContext("buffering /" + path);
  {
    MutexLock wl(w->mu);  // not shared yet: for the analysis
    w->out = std::move(out).value();
  }
  auto in = local_.OpenForRead(w->temp_path);
  if (!in.ok()) {
    local_.Remove(w->temp_path).IgnoreError();
    return in.status().WithContext("buffering /" + path);
  }
  w->in = std::move(in).value();
  return w;
}

Status WriteBuffers::Truncate(Writer& w, uint64_t size) {
  STRATA_RETURN_IF_ERROR(local_.Truncate(w.temp_path, size));
  w.size = size;
  w.dirty = true;
  return Status::Ok();
}

Result<Buffer> WriteBuffers::Read(Writer& w, uint64_t offset, size_t size) {
  const uint64_t end = w.size;
  if (offset >= end) return Buffer();
  size_t n = static_cast<size_t>(std::min<uint64_t>(size, end - offset));
  MutableBuffer buf(n);
  STRATA_ASSIGN_OR_RETURN(size_t got, w.in->ReadAt(offset, n, buf.data()));
  // The buffer file always spans the size (writes and truncation extend it):
  // less means it was cut underneath, and the bytes are not there to serve.
  if (got < n) return ShortBuffer(w, offset + got, offset + n);
  return std::move(buf).Freeze();
}

Result<Buffer> WriteBuffers::ShortBuffer(const Writer& w, uint64_t got_to, uint64_t want_to) {
  STRATA_LOG_ERROR("mount: write buffer {} ends at byte {}, {} expected: it was cut underneath", w.temp_path, got_to,
                   want_to);
  return IOError("write buffer " + w.temp_path + " is shorter than what was written (" + std::to_string(got_to) +
                 " of " + std::to_string(want_to) + " bytes)");
}

void WriteBuffers::Remove(const Writer& w) { local_.Remove(w.temp_path).IgnoreError(); }

void WriteBuffers::Close() {
  MutexLock lock(mu_);
  if (!lock_) return;
  local_.Remove(dir_ + "/" + std::string(kLockName)).IgnoreError();
  lock_.reset();
  local_.RemoveDir(dir_).IgnoreError();  // not empty: a buffer that could not be moved stays
  dir_.clear();
}

}  // namespace strata::fs
