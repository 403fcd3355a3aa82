// MetaJournal: what a cache knows of objects (ETag, size, mtime, metadata and
// when the store last confirmed that version), kept beside the disk tier so
// a restarted cache trusts it within the metadata TTL (a warm read makes no
// round trip) and revalidates what expired in bulk (CachedStore: one LIST per
// prefix, not a HEAD per object).
//
//   D/meta.journal  "STRATAMJ", u32 version, then records:
//                   u32 payload length, u64 xxh3(payload), payload
//   payload         u8 kind (1 entry, 2 forget a key, 3 forget a store),
//                   i64 validated (unix ms), u16+store, u16+key; an entry adds
//                   u8 flags (1: listed, metadata unknown), u16+etag, u64 size,
//                   i64 mtime (unix ns), u32+metadata (object::EncodeMetadata),
//                   u32+part sizes (object::EncodePartSizes)
//
// Records are appended by a background thread (every 200 ms, and at Flush and
// close), never fsynced: a crash loses at most the last moments, which costs
// a revalidation, never a wrong answer (block keys carry the ETag). A torn or
// corrupt record ends the journal at open; the file is then rewritten
// (temp + fsync + rename) from the live records, as it is whenever it holds
// more than twice as many records as live keys. Read-only opens write nothing.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "io/file_system.h"
#include "object/object_store.h"

namespace strata::cache {

struct JournalEntry {
  object::ObjectInfo info;   // key, size, etag, mtime, metadata, part_sizes
  bool listed = false;       // from a LIST: metadata unknown
  int64_t validated_ms = 0;  // unix ms when the store last answered with this version
};

// One decoded record (kind 1: entry set; 2: forget store/key; 3: forget store).
struct JournalRecord {
  uint8_t kind = 0;
  std::string store;
  JournalEntry entry;  // entry.info.key is set for kinds 1 and 2
};

inline constexpr std::string_view kJournalMagic = "STRATAMJ";
inline constexpr uint32_t kJournalVersion = 1;
inline constexpr size_t kJournalHeaderSize = 12;
inline constexpr size_t kMaxJournalRecordBytes = 128 * 1024;

// Encodes one record's payload (without its frame).
std::string EncodeJournalRecord(const JournalRecord& record);
// Decodes one payload; Corruption on any malformed input. Bounds-checked.
Result<JournalRecord> DecodeJournalRecord(std::string_view payload);
// Appends `payload` framed (length, checksum) to *out.
void AppendJournalFrame(std::string_view payload, std::string* out);
// Splits a journal file's bytes into payloads; stops at the first torn or
// corrupt frame (*valid_bytes is where). InvalidArgument-free: Corruption only
// for a wrong header.
Result<std::vector<std::string_view>> SplitJournal(std::string_view file, uint64_t* valid_bytes);

class MetaJournal {
 public:
  static Result<std::unique_ptr<MetaJournal>> Open(io::FileSystem& fs, const std::string& path, bool read_only);
  ~MetaJournal();  // writes what is pending

  // The entries of `store` (the newest record per key).
  std::vector<JournalEntry> Entries(const std::string& store) const;
  // Records an entry. A record that only moves validated_ms forward by less
  // than `min_refresh_ms` is not written (an entry revalidated every TTL
  // would otherwise rewrite the journal at the rate of the lookups).
  void Record(const std::string& store, const JournalEntry& entry, int64_t min_refresh_ms = 0);
  void Forget(const std::string& store, const std::string& key);
  void ForgetStore(const std::string& store);
  // Writes what is pending now (compacting the file when due).
  Status Flush();

  size_t live() const;
  uint64_t records_written() const;

 private:
  MetaJournal(io::FileSystem& fs, std::string path, bool read_only);
  Status Load();
  void Append(std::string payload) REQUIRES(mu_);
  Status Rewrite() REQUIRES(write_mu_);
  void Run();

  io::FileSystem& fs_;
  const std::string path_;
  const bool read_only_;
  Mutex write_mu_;  // taken before mu_; serialises file writes
  std::unique_ptr<io::WritableFile> file_ GUARDED_BY(write_mu_);
  mutable Mutex mu_;
  CondVar cv_;
  // store + '\0' + key -> the entry's payload as last recorded.
  std::unordered_map<std::string, std::string> live_ GUARDED_BY(mu_);
  std::string pending_ GUARDED_BY(mu_);  // framed records not yet written
  uint64_t file_records_ GUARDED_BY(mu_) = 0;
  uint64_t records_written_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace strata::cache
