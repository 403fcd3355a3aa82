#include "dataset/sample.h"

namespace strata::dataset {

const Buffer* Sample::Find(std::string_view name) const {
  for (const Field& f : fields) {
    if (f.name == name) return &f.data;
  }
  return nullptr;
}

uint64_t Sample::PayloadBytes() const {
  uint64_t total = 0;
  for (const Field& f : fields) total += f.data.size();
  return total;
}

std::string_view FormatName(ShardFormat format) {
  switch (format) {
    case ShardFormat::kTar: return "tar";
    case ShardFormat::kTfRecord: return "tfrecord";
    case ShardFormat::kIndexed: return "indexed";
  }
  return "unknown";
}

std::string_view ShardExtension(ShardFormat format) {
  switch (format) {
    case ShardFormat::kTar: return ".tar";
    case ShardFormat::kTfRecord: return ".tfrecord";
    case ShardFormat::kIndexed: return ".sds";
  }
  return "";
}

Result<ShardFormat> ParseShardFormat(std::string_view name) {
  if (name == "tar" || name == "webdataset" || name == "wds") return ShardFormat::kTar;
  if (name == "tfrecord" || name == "tfrecords") return ShardFormat::kTfRecord;
  if (name == "indexed" || name == "sds") return ShardFormat::kIndexed;
  return InvalidArgumentError("unknown shard format '" + std::string(name) + "' (expected tar, tfrecord or indexed)");
}

bool SplitSampleName(std::string_view path, std::string_view* key, std::string_view* field) {
  size_t slash = path.rfind('/');
  size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  size_t dot = path.find('.', base);
  if (dot == std::string_view::npos || dot == base || dot + 1 == path.size()) return false;
  *key = path.substr(0, dot);
  *field = path.substr(dot + 1);
  return true;
}

}  // namespace strata::dataset
