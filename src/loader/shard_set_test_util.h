// Test helpers: shard sets as users have them, written without strata's
// dataset writers where it matters (the TFRecord framing comes from a
// reference writer here with its own CRC32C).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "dataset/byte_source.h"
#include "dataset/tar.h"
#include "dataset/tfrecord.h"
#include "object/object_store.h"

namespace strata::loader::testing::shard_sets {

// Bitwise CRC32C (Castagnoli, reflected 0x82F63B78) and TFRecord's mask.
inline uint32_t RefCrc32c(std::string_view s) {
  uint32_t crc = ~0u;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}
inline uint32_t RefMask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline std::string Le(uint64_t v, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}
inline std::string RefTfRecord(const std::vector<std::string>& payloads) {
  std::string out;
  for (const auto& p : payloads) {
    std::string len = Le(p.size(), 8);
    out += len + Le(RefMask(RefCrc32c(len)), 4) + p + Le(RefMask(RefCrc32c(p)), 4);
  }
  return out;
}

inline std::string Payload(uint64_t i) { return "bytes of sample " + std::to_string(i) + std::string(i % 700, 'x'); }
inline std::string Key6(uint64_t i) {
  char b[32];
  snprintf(b, sizeof b, "%06llu", static_cast<unsigned long long>(i));
  return b;
}
// WebDataset key: some keys carry directories ("dir/k1/000003").
inline std::string Key(uint64_t i) { return (i % 3 == 0 ? "dir/k" + std::to_string(i % 2) + "/" : "") + Key6(i); }

// Tar shards as webdataset.ShardWriter writes them: members key.ext.
inline std::vector<uint64_t> WriteTarShards(object::ObjectStore& store, const std::string& prefix,
                                            const std::vector<uint64_t>& n) {
  uint64_t i = 0;
  for (size_t k = 0; k < n.size(); ++k) {
    dataset::BufferSink sink;
    dataset::TarWriter w(sink);
    for (uint64_t j = 0; j < n[k]; ++j, ++i) {
      EXPECT_TRUE(w.AddFile(Key(i) + ".bin", Buffer::FromString(Payload(i))).ok());
      EXPECT_TRUE(w.AddFile(Key(i) + ".meta.json", Buffer::FromString("{\"i\":" + std::to_string(i) + "}")).ok());
    }
    EXPECT_TRUE(w.Finish().ok());
    EXPECT_TRUE(store.Put(prefix + "train-" + Key6(k) + ".tar", sink.Take()).ok());
  }
  return n;
}

inline void WriteTfRecordShards(object::ObjectStore& store, const std::string& prefix, const std::vector<uint64_t>& n) {
  uint64_t i = 0;
  for (size_t k = 0; k < n.size(); ++k) {
    std::vector<std::string> payloads;
    for (uint64_t j = 0; j < n[k]; ++j, ++i) {
      dataset::Example ex;
      ex["__key__"] = dataset::Feature::Bytes({Buffer::FromString(Key6(i))});
      ex["bin"] = dataset::Feature::Bytes({Buffer::FromString(Payload(i))});
      payloads.push_back(dataset::EncodeExample(ex));
    }
    EXPECT_TRUE(store.Put(prefix + "part-" + Key6(k) + ".tfrecord", Buffer::FromString(RefTfRecord(payloads))).ok());
  }
}

}  // namespace strata::loader::testing::shard_sets
