// Deterministic checkpoint contents for tests: the same (step, seed) always
// gives the same tensors, so a loaded checkpoint can be checked byte-exact.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ckpt/format.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "io/file_system.h"

namespace strata::ckpt::testing {

struct OwnedState {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<TensorView> views;
};

// A writer under `dir`/local with a remote tier: 1 MiB shards and upload
// parts, small enough that a few steps make multipart uploads.
inline WriterOptions RemoteWriterOptions(const std::string& dir, object::ObjectStorePtr remote) {
  WriterOptions o;
  o.dir = io::JoinPath(dir, "local");
  o.shard_bytes = 1 << 20;
  o.remote = std::move(remote);
  o.upload_part_size = 1 << 20;
  return o;
}

inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Mixed sizes: a few large, many small, one empty, a scalar. `scale` multiplies the large ones.
inline OwnedState MakeState(int64_t step, int rank = 0, uint64_t scale = 1) {
  struct Spec {
    const char* name;
    const char* dtype;
    std::vector<int64_t> shape;
  };
  const int64_t big = 256 * static_cast<int64_t>(scale);
  std::vector<Spec> specs = {
      {"model.embed.weight", "F32", {big, 1024}},   // 1 MiB x scale
      {"model.layer0.attn.q", "BF16", {512, 512}},  // 512 KiB
      {"model.layer0.attn.k", "F16", {300, 77}},
      {"model.layer0.norm", "F32", {4096}},
      {"optim.step", "I64", {}},
      {"optim.empty", "F32", {0, 7}},
      {"model.layer1.mlp", "F32", {big, 768}},  // 768 KiB x scale
      {"rng.state", "U8", {5003}},
  };
  for (int i = 0; i < 12; ++i) specs.push_back({nullptr, "F32", {int64_t(97 + 13 * i)}});
  OwnedState s;
  s.bytes.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    uint64_t n = DTypeSize(specs[i].dtype);
    for (auto d : specs[i].shape) n *= d;
    std::vector<uint8_t> data(n);
    uint64_t seed = Mix(step * 1000003 + rank * 7919 + i);
    for (uint64_t k = 0; k < n; k += 8) {
      uint64_t w = Mix(seed + k);
      std::memcpy(data.data() + k, &w, std::min<uint64_t>(8, n - k));
    }
    s.bytes.push_back(std::move(data));
    std::string name = specs[i].name ? specs[i].name : "small." + std::to_string(i) + ".r" + std::to_string(rank);
    if (specs[i].name && rank > 0) name += ".r" + std::to_string(rank);
    s.views.push_back({name, specs[i].dtype, specs[i].shape, s.bytes.back().data(), n});
  }
  return s;
}

// Empty string when `loaded` holds exactly `expected`; else what differs.
inline std::string Compare(const LoadedCheckpoint& loaded, const OwnedState& expected) {
  for (const auto& v : expected.views) {
    const LoadedTensor* t = loaded.Find(v.name);
    if (!t) return "missing tensor " + v.name;
    if (t->dtype != v.dtype || t->shape != v.shape) return "dtype/shape differ for " + v.name;
    if (t->data.size() != v.size || (v.size && std::memcmp(t->data.data(), v.data, v.size) != 0)) {
      return "bytes differ for " + v.name;
    }
  }
  return "";
}

}  // namespace strata::ckpt::testing
