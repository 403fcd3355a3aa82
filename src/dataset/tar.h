// WebDataset tar shards. The writer emits POSIX ustar members, with a pax
// ('x') extended header for names longer than 100 bytes or non-ASCII (GNU tar
// and Python's tarfile both read it); fixed mtime/uid/gid so the same input
// gives the same bytes. The reader accepts ustar, GNU (incl. 'L' long names,
// base-256 sizes), pax ('x', 'g') and v7 headers, checks every header checksum
// and bounds every length against the bytes that exist. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dataset/byte_source.h"
#include "dataset/sample.h"

namespace strata::dataset {

struct TarWriteOptions {
  int64_t mtime = 0;  // fixed for deterministic output
  uint32_t mode = 0644;
};

class TarWriter {
 public:
  explicit TarWriter(ByteSink& sink, TarWriteOptions options = {}) : sink_(sink), options_(options) {}
  // One regular-file member. InvalidArgument for empty names or names with NUL.
  Status AddFile(std::string_view name, const Buffer& data);
  // Members "<key>.<field>" for each field, in order.
  Status AddSample(const Sample& sample);
  // Writes the end-of-archive marker (two zero blocks).
  Status Finish();
  uint64_t bytes_written() const { return sink_.bytes_written(); }

 private:
  ByteSink& sink_;
  TarWriteOptions options_;
};

// Bytes a member of this name and size occupies (headers + padded data).
uint64_t TarMemberSize(std::string_view name, uint64_t size);
inline constexpr uint64_t kTarEndSize = 1024;

struct TarMember {
  std::string name;
  Buffer data;
  uint64_t header_offset = 0;  // of the first header of this member (pax/longname included)
  uint64_t end_offset = 0;     // just past the padded data
};

class TarReader {
 public:
  // `headers_only`: members' bodies are skipped, not read (their data is
  // empty), so a scan over ranged reads touches only the headers.
  explicit TarReader(ByteSource& source, ReadLimits limits = {}, bool headers_only = false)
      : src_(source), limits_(limits), headers_only_(headers_only) {}
  // The next regular file; directories, links and devices are skipped.
  // nullopt at the end-of-archive marker or a clean end of the data.
  Result<std::optional<TarMember>> Next();

 private:
  Status Error(uint64_t offset, const std::string& what) const;
  Status ParsePax(const Buffer& data, uint64_t offset, bool global, std::string* path, std::optional<uint64_t>* size);

  ByteSource& src_;
  ReadLimits limits_;
  bool headers_only_ = false;
  bool done_ = false;
};

// Groups consecutive members into samples by WebDataset's key rule. Members
// without a dot in their base name and "__*__" metadata are skipped, as
// WebDataset does; a field repeated within a sample is Corruption.
class TarSampleReader {
 public:
  explicit TarSampleReader(ByteSource& source, ReadLimits limits = {}, bool headers_only = false)
      : reader_(source, limits, headers_only), src_(source) {}
  Result<std::optional<Sample>> Next();
  // Byte range of the sample last returned by Next(): [begin, end).
  uint64_t sample_begin() const { return begin_; }
  uint64_t sample_end() const { return end_; }

 private:
  TarReader reader_;
  ByteSource& src_;
  std::optional<TarMember> pending_;
  bool eof_ = false;
  uint64_t begin_ = 0, end_ = 0;
};

}  // namespace strata::dataset
