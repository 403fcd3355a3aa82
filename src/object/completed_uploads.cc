#include "object/completed_uploads.h"

#include <algorithm>
#include <charconv>
#include <tuple>

#include "base/hash.h"
#include "io/durable.h"

namespace strata::object {
namespace {

std::string Unquoted(std::string_view etag) {
  std::string s(etag);
  s.erase(std::remove(s.begin(), s.end(), '"'), s.end());
  return s;
}

int64_t Nanos(WallTime t) { return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(); }

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

constexpr std::string_view kVersion = "strata-completed-upload 1";
constexpr int kValueLines = 8;  // the version, then etag .. checksum value; the key is the rest

}  // namespace

std::string PartListHash(const std::vector<CompletedPart>& parts) {
  std::string text;
  for (const CompletedPart& p : parts) text += std::to_string(p.part_number) + ":" + Unquoted(p.etag) + "\n";
  return ToHex(Md5(text));
}

CompletedUpload CompletedWith(const std::vector<CompletedPart>& parts, const ObjectInfo& object) {
  CompletedUpload done{PartListHash(parts), {}};
  ObjectInfo& i = done.info;
  i.key = object.key;
  i.size = object.size;
  i.etag = object.etag;
  i.mtime = object.mtime;
  i.metadata.checksum_algorithm = object.metadata.checksum_algorithm;
  i.metadata.checksum_type = object.metadata.checksum_type;
  i.metadata.checksum = object.metadata.checksum;
  return done;
}

Result<ObjectInfo> AnswerCompleted(const CompletedUpload& done, std::string_view key, std::string_view upload_id,
                                   const std::vector<CompletedPart>& parts) {
  if (done.info.key != key || done.parts_hash != PartListHash(parts)) {
    return NotFoundError("multipart upload '" + std::string(upload_id) + "' already completed with another " +
                         (done.info.key != key ? "key" : "part list") + " (NoSuchUpload)");
  }
  return done.info;
}

void CompletedUploads::Record(const std::string& upload_id, CompletedUpload done) {
  MutexLock lock(mu_);
  auto [it, fresh] = by_id_.insert_or_assign(upload_id, std::move(done));
  if (fresh) order_.push_back(upload_id);
  while (order_.size() > kept_) {
    by_id_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<CompletedUpload> CompletedUploads::Find(std::string_view upload_id) const {
  MutexLock lock(mu_);
  auto it = by_id_.find(upload_id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::string EncodeCompletedUpload(const CompletedUpload& done) {
  const ObjectInfo& i = done.info;
  const ObjectMetadata& m = i.metadata;
  std::string out(kVersion);
  for (const std::string& line : {i.etag, done.parts_hash, std::to_string(i.size), std::to_string(Nanos(i.mtime)),
                                  m.checksum_algorithm, m.checksum_type, m.checksum}) {
    out += "\n" + line;
  }
  return out + "\n" + i.key;
}

Result<CompletedUpload> DecodeCompletedUpload(std::string_view text) {
  auto bad = [](std::string why) { return CorruptionError("completed upload record: " + why); };
  if (text.size() > kMaxCompletedRecordBytes) return bad("too long");
  std::vector<std::string_view> lines;
  while (static_cast<int>(lines.size()) < kValueLines) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return bad("too few lines");
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  if (lines[0] != kVersion) return bad("unknown version");
  CompletedUpload done;
  ObjectInfo& i = done.info;
  int64_t nanos = 0;
  if (!ParseNumber(lines[3], &i.size) || !ParseNumber(lines[4], &nanos)) return bad("a size or time is not a number");
  if (lines[1].empty() || lines[2].empty() || text.empty()) return bad("an empty ETag, part hash or key");
  i.etag = lines[1];
  done.parts_hash = lines[2];
  i.mtime = WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(nanos)));
  i.metadata.checksum_algorithm = lines[5];
  i.metadata.checksum_type = lines[6];
  i.metadata.checksum = lines[7];
  i.key = text;
  return done;
}

Status WriteCompletedRecord(io::FileSystem& fs, const std::string& dir, const std::string& upload_id,
                            const CompletedUpload& done, size_t kept) {
  const ObjectInfo& i = done.info;
  for (const std::string* value :
       {&i.etag, &done.parts_hash, &i.metadata.checksum_algorithm, &i.metadata.checksum_type, &i.metadata.checksum}) {
    if (value->find('\n') != std::string::npos)
      return InvalidArgumentError("a completed upload's value holds a newline");
  }
  std::string text = EncodeCompletedUpload(done);
  if (text.size() > kMaxCompletedRecordBytes) return InvalidArgumentError("completed upload record too long");
  STRATA_RETURN_IF_ERROR(fs.CreateDirs(dir));
  STRATA_RETURN_IF_ERROR(io::WriteFileAtomic(fs, dir + "/" + upload_id, text));
  // Bounded: the oldest records go (a temp file of a write in flight has a '.' in its name).
  STRATA_ASSIGN_OR_RETURN(std::vector<io::DirEntry> entries, fs.ListDir(dir));
  std::erase_if(entries, [](const io::DirEntry& e) { return e.is_dir || e.name.find('.') != std::string::npos; });
  if (entries.size() <= kept) return Status::Ok();
  std::sort(entries.begin(), entries.end(), [](const io::DirEntry& a, const io::DirEntry& b) {
    return std::tie(a.mtime, a.name) < std::tie(b.mtime, b.name);
  });
  for (size_t i = 0; i + kept < entries.size(); ++i) fs.Remove(dir + "/" + entries[i].name).IgnoreError();
  return Status::Ok();
}

Result<std::optional<CompletedUpload>> ReadCompletedRecord(io::FileSystem& fs, const std::string& dir,
                                                           const std::string& upload_id) {
  auto text = io::ReadFileToString(fs, dir + "/" + upload_id, kMaxCompletedRecordBytes);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) return std::optional<CompletedUpload>();
    if (text.status().code() == Code::kInvalidArgument) return CorruptionError("completed upload record too long");
    return text.status();
  }
  STRATA_ASSIGN_OR_RETURN(CompletedUpload done, DecodeCompletedUpload(*text));
  return std::optional<CompletedUpload>(std::move(done));
}

}  // namespace strata::object
