#include "dataset/tar.h"

#include <algorithm>
#include <cstring>

namespace strata::dataset {
namespace {

constexpr uint64_t kBlock = 512;
constexpr uint64_t kMaxOctal11 = 077777777777ull;  // largest size a 12-byte octal field holds
constexpr uint64_t kMaxPaxBytes = 1 << 20;

uint64_t Padded(uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

const Buffer& Zeros() {
  static const Buffer zeros = [] {
    std::string z(kBlock, '\0');
    return Buffer::FromString(std::move(z));
  }();
  return zeros;
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool NeedsPaxName(std::string_view name) { return name.size() > 100 || !IsAscii(name); }

// "LEN key=value\n" where LEN counts the whole record including its own digits.
std::string PaxRecord(std::string_view key, std::string_view value) {
  size_t body = 1 + key.size() + 1 + value.size() + 1;  // ' ' key '=' value '\n'
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  return std::to_string(len) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

std::string PaxRecords(std::string_view name, uint64_t size) {
  std::string out;
  if (NeedsPaxName(name)) out += PaxRecord("path", name);
  if (size > kMaxOctal11) out += PaxRecord("size", std::to_string(size));
  return out;
}

void PutOctal(char* field, size_t width, uint64_t value) {
  // width-1 octal digits, zero-padded, then NUL.
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  field[width - 1] = '\0';
}

void Checksum(char* h) {
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < kBlock; ++i) sum += static_cast<unsigned char>(h[i]);
  PutOctal(h + 148, 7, sum);  // 6 digits + NUL, then the space already there
}

std::string Header(std::string_view name, uint64_t size, char type, const TarWriteOptions& o) {
  std::string block(kBlock, '\0');
  char* h = block.data();
  std::memcpy(h, name.data(), std::min<size_t>(name.size(), 100));
  PutOctal(h + 100, 8, o.mode);
  PutOctal(h + 108, 8, 0);
  PutOctal(h + 116, 8, 0);
  PutOctal(h + 124, 12, size > kMaxOctal11 ? 0 : size);
  PutOctal(h + 136, 12, static_cast<uint64_t>(std::max<int64_t>(o.mtime, 0)));
  h[156] = type;
  std::memcpy(h + 257,
              "ustar\0"
              "00",
              8);
  PutOctal(h + 329, 8, 0);
  PutOctal(h + 337, 8, 0);
  Checksum(h);
  return block;
}

std::string FieldString(const uint8_t* p, size_t width) {
  const char* c = reinterpret_cast<const char*>(p);
  return std::string(c, strnlen(c, width));
}

// Octal (NUL/space terminated, leading spaces allowed) or GNU base-256.
bool ParseNumber(const uint8_t* p, size_t width, uint64_t* out) {
  if (p[0] & 0x80) {
    if (p[0] & 0x40) return false;  // negative
    uint64_t v = p[0] & 0x3f;
    for (size_t i = 1; i < width; ++i) {
      if (v >> 55) return false;  // would overflow 63 bits
      v = (v << 8) | p[i];
    }
    *out = v;
    return true;
  }
  size_t i = 0;
  while (i < width && p[i] == ' ') ++i;
  uint64_t v = 0;
  bool digits = false;
  for (; i < width && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v >> 60) return false;
    v = v * 8 + (p[i] - '0');
    digits = true;
  }
  if (i < width && p[i] != '\0' && p[i] != ' ') return false;
  *out = digits ? v : 0;
  return true;
}

bool ChecksumMatches(const uint8_t* h, uint64_t stored) {
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    uint8_t b = (i >= 148 && i < 156) ? ' ' : h[i];
    unsigned_sum += b;
    signed_sum += static_cast<int8_t>(b);
  }
  return stored == unsigned_sum || static_cast<int64_t>(stored) == signed_sum;
}

}  // namespace

uint64_t TarMemberSize(std::string_view name, uint64_t size) {
  uint64_t total = kBlock + Padded(size);
  std::string pax = PaxRecords(name, size);
  if (!pax.empty()) total += kBlock + Padded(pax.size());
  return total;
}

Status TarWriter::AddFile(std::string_view name, const Buffer& data) {
  if (name.empty() || name.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("tar member name must be non-empty and without NUL: '" + std::string(name) + "'");
  }
  std::string pax = PaxRecords(name, data.size());
  std::string headers;
  if (!pax.empty()) {
    // Python's tarfile names pax headers this way; GNU tar reads it too.
    headers = Header("././@PaxHeader", pax.size(), 'x', options_);
    headers += pax;
    headers.resize(headers.size() + (Padded(pax.size()) - pax.size()), '\0');
  }
  headers += Header(name, data.size(), '0', options_);
  STRATA_RETURN_IF_ERROR(sink_.Append(Buffer::FromString(std::move(headers))));
  if (!data.empty()) STRATA_RETURN_IF_ERROR(sink_.Append(data));
  uint64_t pad = Padded(data.size()) - data.size();
  if (pad) STRATA_RETURN_IF_ERROR(sink_.Append(Zeros().Slice(0, pad)));
  return Status::Ok();
}

Status TarWriter::AddSample(const Sample& sample) {
  for (const Field& f : sample.fields) {
    STRATA_RETURN_IF_ERROR(AddFile(sample.key + "." + f.name, f.data));
  }
  return Status::Ok();
}

Status TarWriter::Finish() {
  STRATA_RETURN_IF_ERROR(sink_.Append(Zeros()));
  return sink_.Append(Zeros());
}

Status TarReader::Error(uint64_t offset, const std::string& what) const {
  return CorruptionError(src_.name() + ": tar offset " + std::to_string(offset) + ": " + what);
}

Status TarReader::ParsePax(const Buffer& data, uint64_t offset, bool global, std::string* path,
                           std::optional<uint64_t>* size) {
  std::string_view rest = data.view();
  while (!rest.empty()) {
    if (rest[0] == '\0') break;  // some writers pad records with NULs
    size_t space = rest.find(' ');
    if (space == std::string_view::npos || space == 0 || space > 20)
      return Error(offset, "malformed pax record length");
    uint64_t len = 0;
    for (size_t i = 0; i < space; ++i) {
      if (rest[i] < '0' || rest[i] > '9') return Error(offset, "malformed pax record length");
      len = len * 10 + (rest[i] - '0');
    }
    if (len <= space + 1 || len > rest.size() || rest[len - 1] != '\n') {
      return Error(offset, "pax record length " + std::to_string(len) + " does not fit its header");
    }
    std::string_view record = rest.substr(space + 1, len - space - 2);
    rest.remove_prefix(len);
    size_t eq = record.find('=');
    if (eq == std::string_view::npos) return Error(offset, "pax record without '='");
    std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
    if (global) continue;  // global defaults: nothing strata needs from them
    if (key == "path") {
      *path = std::string(value);
    } else if (key == "size") {
      uint64_t v = 0;
      if (value.empty() || value.size() > 19) return Error(offset, "bad pax size");
      for (char c : value) {
        if (c < '0' || c > '9') return Error(offset, "bad pax size");
        v = v * 10 + (c - '0');
      }
      *size = v;
    }
  }
  return Status::Ok();
}

Result<std::optional<TarMember>> TarReader::Next() {
  std::string long_name, pax_path;
  std::optional<uint64_t> pax_size;
  uint64_t first_header = 0;
  bool have_first = false;
  while (!done_) {
    uint64_t offset = src_.position();
    bool pending = !long_name.empty() || !pax_path.empty() || pax_size.has_value();
    if (src_.remaining() == 0) {
      done_ = true;
      if (pending) return Error(offset, "archive ends after an extended header");
      break;
    }
    if (src_.remaining() < kBlock) {
      return Error(offset, "truncated header: only " + std::to_string(src_.remaining()) + " bytes left");
    }
    STRATA_ASSIGN_OR_RETURN(Buffer block, src_.Read(kBlock));
    const uint8_t* h = block.data();
    if (std::all_of(h, h + kBlock, [](uint8_t b) { return b == 0; })) {
      done_ = true;
      if (pending) return Error(offset, "end-of-archive marker after an extended header");
      break;
    }
    uint64_t stored_sum = 0, size = 0;
    if (!ParseNumber(h + 148, 8, &stored_sum) || !ChecksumMatches(h, stored_sum)) {
      return Error(offset, "bad header checksum (not a tar file, or corrupted)");
    }
    bool posix = std::memcmp(h + 257, "ustar\0", 6) == 0;
    bool gnu = std::memcmp(h + 257, "ustar  \0", 8) == 0;
    bool v7 = std::all_of(h + 257, h + 263, [](uint8_t b) { return b == 0; });
    if (!posix && !gnu && !v7) return Error(offset, "unknown header magic");
    if (!ParseNumber(h + 124, 12, &size)) return Error(offset, "bad size field");
    char type = static_cast<char>(h[156]);
    bool regular = type == '0' || type == '\0' || type == '7';
    if (regular && pax_size) size = *pax_size;
    if (size > src_.remaining()) {
      return Error(offset, "member claims " + std::to_string(size) + " bytes but only " +
                               std::to_string(src_.remaining()) + " remain (truncated shard?)");
    }
    uint64_t pad = Padded(size) - size;
    if (!have_first) {
      first_header = offset;
      have_first = true;
    }
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
      uint64_t cap = type == 'L' || type == 'K' ? limits_.max_name_bytes : kMaxPaxBytes;
      if (size > cap) return Error(offset, "extended header of " + std::to_string(size) + " bytes is too large");
      STRATA_ASSIGN_OR_RETURN(Buffer data, src_.Read(size));
      STRATA_RETURN_IF_ERROR(src_.Skip(pad));
      if (type == 'L') {
        long_name = FieldString(data.data(), data.size());
        if (long_name.empty()) return Error(offset, "empty GNU long name");
      } else if (type != 'K') {
        STRATA_RETURN_IF_ERROR(ParsePax(data, offset, type == 'g', &pax_path, &pax_size));
      }
      continue;
    }
    if (type == 'S' || type == 'M') return Error(offset, std::string("unsupported member type '") + type + "'");
    if (!regular) {  // directory, link, device, fifo, volume label...
      STRATA_RETURN_IF_ERROR(src_.Skip(size + pad));
      long_name.clear();
      pax_path.clear();
      pax_size.reset();
      have_first = false;
      continue;
    }
    if (size > limits_.max_field_bytes) {
      return Error(offset, "member of " + std::to_string(size) + " bytes exceeds the limit of " +
                               std::to_string(limits_.max_field_bytes));
    }
    TarMember m;
    if (!pax_path.empty()) {
      m.name = std::move(pax_path);
    } else if (!long_name.empty()) {
      m.name = std::move(long_name);
    } else {
      m.name = FieldString(h, 100);
      std::string prefix = posix ? FieldString(h + 345, 155) : "";
      if (!prefix.empty()) m.name = prefix + "/" + m.name;
    }
    if (m.name.empty()) return Error(offset, "member with an empty name");
    m.header_offset = first_header;
    if (headers_only_) {
      STRATA_RETURN_IF_ERROR(src_.Skip(size + pad));
    } else {
      STRATA_ASSIGN_OR_RETURN(m.data, src_.Read(size));
      STRATA_RETURN_IF_ERROR(src_.Skip(pad));
    }
    m.end_offset = src_.position();
    return std::optional<TarMember>(std::move(m));
  }
  return std::optional<TarMember>();
}

Result<std::optional<Sample>> TarSampleReader::Next() {
  std::optional<Sample> sample;
  while (true) {
    if (!pending_ && !eof_) {
      STRATA_ASSIGN_OR_RETURN(pending_, reader_.Next());
      if (!pending_) eof_ = true;
    }
    if (!pending_) return sample;
    std::string_view key, field;
    std::string_view base = pending_->name;
    if (base.starts_with("./")) base.remove_prefix(2);  // "tar -C dir ." writes ./ names
    bool meta = base.find('/') == std::string_view::npos && base.starts_with("__") && base.ends_with("__");
    if (meta || !SplitSampleName(base, &key, &field)) {
      pending_.reset();
      continue;
    }
    if (sample && sample->key != key) return sample;
    if (!sample) {
      sample.emplace();
      sample->key = std::string(key);
      begin_ = pending_->header_offset;
    } else if (sample->Find(field)) {
      return CorruptionError(src_.name() + ": tar offset " + std::to_string(pending_->header_offset) +
                             ": duplicate field '" + std::string(field) + "' in sample '" + sample->key + "'");
    }
    sample->fields.push_back({std::string(field), std::move(pending_->data)});
    end_ = pending_->end_offset;
    pending_.reset();
  }
}

}  // namespace strata::dataset
