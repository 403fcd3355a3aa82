#include "cache/meta_journal.h"

#include <chrono>

#include "base/coding.h"
#include "base/executor.h"
#include "base/hash.h"
#include "base/log.h"
#include "io/durable.h"
#include "object/metadata.h"

namespace strata::cache {
namespace {

constexpr uint8_t kEntry = 1, kForgetKey = 2, kForgetStore = 3;
constexpr uint8_t kListedFlag = 1;
constexpr size_t kFrameSize = 12;         // u32 length + u64 checksum
constexpr uint64_t kCompactSlack = 4096;  // records tolerated past twice the live ones
constexpr auto kFlushInterval = std::chrono::milliseconds(200);
constexpr size_t kFlushNowBytes = 1 << 20;             // pending bytes that are written at once
constexpr uint64_t kMaxJournalFileBytes = 1ull << 34;  // refuse to read a journal past 16 GiB

void PutStr16(std::string* out, std::string_view s) {
  PutFixed16(out, static_cast<uint16_t>(s.size()));
  out->append(s);
}
void PutStr32(std::string* out, std::string_view s) {
  PutFixed32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}
bool GetBytes(std::string_view* in, size_t n, std::string* out) {
  if (in->size() < n) return false;
  out->assign(in->data(), n);
  in->remove_prefix(n);
  return true;
}
bool GetStr16(std::string_view* in, std::string* out) {
  uint16_t n = 0;
  return GetFixed16(in, &n) && GetBytes(in, n, out);
}
bool GetStr32(std::string_view* in, size_t max, std::string* out) {
  uint32_t n = 0;
  return GetFixed32(in, &n) && n <= max && GetBytes(in, n, out);
}
std::string LiveKey(std::string_view store, std::string_view key) {
  std::string k(store);
  k += '\0';
  k += key;
  return k;
}
// The payload bytes after kind and validated_ms: equal when a record only refreshes validated_ms.
constexpr size_t kValidatedEnd = 9;

int64_t ValidatedMs(std::string_view payload) {
  return payload.size() >= kValidatedEnd ? static_cast<int64_t>(DecodeFixed64(payload.data() + 1)) : 0;
}

}  // namespace

std::string EncodeJournalRecord(const JournalRecord& r) {
  std::string out;
  out.push_back(static_cast<char>(r.kind));
  PutFixed64(&out, static_cast<uint64_t>(r.entry.validated_ms));
  PutStr16(&out, r.store);
  PutStr16(&out, r.entry.info.key);
  if (r.kind != kEntry) return out;
  const object::ObjectInfo& info = r.entry.info;
  out.push_back(static_cast<char>(r.entry.listed ? kListedFlag : 0));
  PutStr16(&out, info.etag);
  PutFixed64(&out, info.size);
  PutFixed64(&out, static_cast<uint64_t>(
                       std::chrono::duration_cast<std::chrono::nanoseconds>(info.mtime.time_since_epoch()).count()));
  PutStr32(&out, info.metadata.empty() ? std::string() : object::EncodeMetadata(info.metadata));
  PutStr32(&out, object::EncodePartSizes(info.part_sizes));
  return out;
}

Result<JournalRecord> DecodeJournalRecord(std::string_view in) {
  auto bad = [](std::string_view what) { return CorruptionError("metadata journal record: " + std::string(what)); };
  JournalRecord r;
  if (in.empty()) return bad("empty");
  r.kind = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  if (r.kind != kEntry && r.kind != kForgetKey && r.kind != kForgetStore) return bad("unknown kind");
  uint64_t validated = 0;
  if (!GetFixed64(&in, &validated)) return bad("truncated");
  r.entry.validated_ms = static_cast<int64_t>(validated);
  if (!GetStr16(&in, &r.store) || !GetStr16(&in, &r.entry.info.key)) return bad("truncated name");
  if (r.store.empty()) return bad("no store");
  if (r.kind != kEntry) return in.empty() ? Result<JournalRecord>(std::move(r)) : bad("trailing bytes");
  if (r.entry.info.key.empty()) return bad("no key");
  if (in.empty()) return bad("truncated");
  const auto flags = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  if (flags & ~kListedFlag) return bad("unknown flags");
  r.entry.listed = flags & kListedFlag;
  object::ObjectInfo& info = r.entry.info;
  uint64_t mtime_ns = 0;
  std::string meta, parts;
  if (!GetStr16(&in, &info.etag) || !GetFixed64(&in, &info.size) || !GetFixed64(&in, &mtime_ns) ||
      !GetStr32(&in, object::kMaxEncodedMetadataBytes, &meta) || !GetStr32(&in, kMaxJournalRecordBytes, &parts)) {
    return bad("truncated entry");
  }
  if (!in.empty()) return bad("trailing bytes");
  info.mtime = WallTime(
      std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(static_cast<int64_t>(mtime_ns))));
  if (!meta.empty()) {
    STRATA_ASSIGN_OR_RETURN(info.metadata, object::DecodeMetadata(meta));
  }
  if (!parts.empty()) {
    STRATA_ASSIGN_OR_RETURN(info.part_sizes, object::DecodePartSizes(parts));
  }
  return r;
}

void AppendJournalFrame(std::string_view payload, std::string* out) {
  PutFixed32(out, static_cast<uint32_t>(payload.size()));
  PutFixed64(out, XxHash3(payload.data(), payload.size()));
  out->append(payload);
}

Result<std::vector<std::string_view>> SplitJournal(std::string_view file, uint64_t* valid_bytes) {
  *valid_bytes = 0;
  std::vector<std::string_view> out;
  if (file.empty()) return out;
  if (file.size() < kJournalHeaderSize || file.substr(0, kJournalMagic.size()) != kJournalMagic) {
    return CorruptionError("not a metadata journal");
  }
  if (DecodeFixed32(file.data() + kJournalMagic.size()) != kJournalVersion) {
    return CorruptionError("metadata journal of an unknown version");
  }
  size_t pos = kJournalHeaderSize;
  *valid_bytes = pos;
  while (file.size() - pos >= kFrameSize) {
    const uint32_t n = DecodeFixed32(file.data() + pos);
    const uint64_t sum = DecodeFixed64(file.data() + pos + 4);
    if (n > kMaxJournalRecordBytes || file.size() - pos - kFrameSize < n) break;
    std::string_view payload = file.substr(pos + kFrameSize, n);
    if (XxHash3(payload.data(), payload.size()) != sum) break;
    out.push_back(payload);
    pos += kFrameSize + n;
    *valid_bytes = pos;
  }
  return out;
}

// ---- MetaJournal ----

MetaJournal::MetaJournal(io::FileSystem& fs, std::string path, bool read_only)
    : fs_(fs), path_(std::move(path)), read_only_(read_only) {}

Result<std::unique_ptr<MetaJournal>> MetaJournal::Open(io::FileSystem& fs, const std::string& path, bool read_only) {
  std::unique_ptr<MetaJournal> j(new MetaJournal(fs, path, read_only));
  STRATA_RETURN_IF_ERROR(j->Load());
  if (!read_only) {
    j->thread_ = std::thread([p = j.get()] {
      Status st = RunGuarded("cache metadata journal", [p] { p->Run(); });
      if (!st.ok()) STRATA_LOG_ERROR("cache: metadata journal writer stopped: {}", st.ToString());
    });
  }
  return j;
}

MetaJournal::~MetaJournal() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    cv_.NotifyAll();
  }
  if (thread_.joinable()) thread_.join();
  if (!read_only_) {
    Status st = Flush();
    if (!st.ok()) STRATA_LOG_WARN("cache: metadata journal {} not written at close: {}", path_, st.ToString());
  }
}

Status MetaJournal::Load() {
  std::string bytes;
  auto exists = fs_.Exists(path_);
  if (exists.ok() && *exists) {
    auto read = io::ReadFileToString(fs_, path_, kMaxJournalFileBytes);
    if (read.ok()) {
      bytes = std::move(read).value();
    } else {
      STRATA_LOG_WARN("cache: metadata journal {} unreadable ({}); starting afresh", path_, read.status().ToString());
    }
  }
  uint64_t valid = 0;
  auto payloads = SplitJournal(bytes, &valid);
  bool rewrite = !payloads.ok() || valid != bytes.size();
  if (!payloads.ok()) {
    STRATA_LOG_WARN("cache: metadata journal {}: {}; starting afresh", path_, payloads.status().ToString());
  }
  uint64_t records = 0;
  {
    MutexLock lock(mu_);
    for (std::string_view p : payloads.ok() ? *payloads : std::vector<std::string_view>{}) {
      auto r = DecodeJournalRecord(p);
      if (!r.ok()) {  // framed and checksummed, yet not ours: the rest is not trusted either
        rewrite = true;
        break;
      }
      ++records;
      if (r->kind == kEntry) {
        live_[LiveKey(r->store, r->entry.info.key)] = std::string(p);
      } else if (r->kind == kForgetKey) {
        live_.erase(LiveKey(r->store, r->entry.info.key));
      } else {
        const std::string prefix = LiveKey(r->store, "");
        std::erase_if(live_, [&](const auto& kv) { return kv.first.starts_with(prefix); });
      }
    }
    file_records_ = records;
    rewrite = rewrite || records > 2 * live_.size() + kCompactSlack || bytes.empty();
  }
  if (read_only_) return Status::Ok();
  MutexLock w(write_mu_);
  if (rewrite) return Rewrite();
  STRATA_ASSIGN_OR_RETURN(file_, fs_.OpenForWrite(path_, /*truncate=*/false));
  return Status::Ok();
}

// Replaces the file with the live records only (temp + fsync + rename).
Status MetaJournal::Rewrite() {
  std::string data(kJournalMagic);
  PutFixed32(&data, kJournalVersion);
  {
    MutexLock lock(mu_);
    for (const auto& [k, payload] : live_) AppendJournalFrame(payload, &data);
    file_records_ = live_.size();
    pending_.clear();  // every record pending is in live_ (or forgot an entry no longer there)
  }
  file_.reset();
  STRATA_RETURN_IF_ERROR(io::WriteFileAtomic(fs_, path_, data).WithContext("metadata journal"));
  STRATA_ASSIGN_OR_RETURN(file_, fs_.OpenForWrite(path_, /*truncate=*/false));
  return Status::Ok();
}

std::vector<JournalEntry> MetaJournal::Entries(const std::string& store) const {
  std::vector<JournalEntry> out;
  const std::string prefix = LiveKey(store, "");
  MutexLock lock(mu_);
  for (const auto& [k, payload] : live_) {
    if (!k.starts_with(prefix)) continue;
    auto r = DecodeJournalRecord(payload);
    if (r.ok()) out.push_back(std::move(r->entry));
  }
  return out;
}

void MetaJournal::Append(std::string payload) {
  AppendJournalFrame(payload, &pending_);
  ++file_records_;
  ++records_written_;
  if (pending_.size() >= kFlushNowBytes) cv_.NotifyAll();
}

void MetaJournal::Record(const std::string& store, const JournalEntry& entry, int64_t min_refresh_ms) {
  if (read_only_ || store.empty() || entry.info.key.empty()) return;
  JournalRecord r;
  r.kind = kEntry;
  r.store = store;
  r.entry = entry;
  std::string payload = EncodeJournalRecord(r);
  if (payload.size() > kMaxJournalRecordBytes) return;
  MutexLock lock(mu_);
  std::string& live = live_[LiveKey(store, entry.info.key)];
  if (!live.empty() &&
      std::string_view(live).substr(kValidatedEnd) == std::string_view(payload).substr(kValidatedEnd) &&
      entry.validated_ms - ValidatedMs(live) < min_refresh_ms) {
    return;  // the same version, confirmed again recently: not worth a record
  }
  live = payload;
  Append(std::move(payload));
}

void MetaJournal::Forget(const std::string& store, const std::string& key) {
  if (read_only_) return;
  JournalRecord r;
  r.kind = kForgetKey;
  r.store = store;
  r.entry.info.key = key;
  MutexLock lock(mu_);
  if (live_.erase(LiveKey(store, key)) == 0) return;
  Append(EncodeJournalRecord(r));
}

void MetaJournal::ForgetStore(const std::string& store) {
  if (read_only_) return;
  JournalRecord r;
  r.kind = kForgetStore;
  r.store = store;
  const std::string prefix = LiveKey(store, "");
  MutexLock lock(mu_);
  if (std::erase_if(live_, [&](const auto& kv) { return kv.first.starts_with(prefix); }) == 0) return;
  Append(EncodeJournalRecord(r));
}

Status MetaJournal::Flush() {
  if (read_only_) return Status::Ok();
  MutexLock w(write_mu_);
  std::string data;
  bool compact = false;
  {
    MutexLock lock(mu_);
    compact = file_records_ > 2 * live_.size() + kCompactSlack;
    if (!compact) data.swap(pending_);
  }
  if (compact || !file_) return Rewrite();
  if (data.empty()) return Status::Ok();
  Status st = file_->Append(data.data(), data.size());
  if (!st.ok()) {
    // A partial append may have left a torn record: rewrite from the live set.
    STRATA_LOG_WARN("cache: metadata journal {} append failed ({}); rewriting it", path_, st.ToString());
    return Rewrite();
  }
  return Status::Ok();
}

void MetaJournal::Run() {
  MutexLock lock(mu_);
  while (true) {
    cv_.Wait(lock, [&]() REQUIRES(mu_) { return stop_ || !pending_.empty(); });
    if (stop_) return;  // the destructor writes what is left
    cv_.WaitFor(lock, kFlushInterval, [&]() REQUIRES(mu_) { return stop_ || pending_.size() >= kFlushNowBytes; });
    lock.Unlock();
    Status st = Flush();
    if (!st.ok()) STRATA_LOG_WARN("cache: metadata journal {} not written: {}", path_, st.ToString());
    lock.Lock();
  }
}

size_t MetaJournal::live() const {
  MutexLock lock(mu_);
  return live_.size();
}

uint64_t MetaJournal::records_written() const {
  MutexLock lock(mu_);
  return records_written_;
}

}  // namespace strata::cache
