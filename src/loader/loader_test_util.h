// Test helpers: small packed datasets written straight into a store.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "dataset/byte_source.h"
#include "dataset/manifest.h"
#include "dataset/shard.h"
#include "loader/streaming_dataset.h"
#include "object/object_store.h"
#include "object/store_wrapper.h"

namespace strata::loader::testing {

// Counts read requests (Get, Head, List: all the loader makes) on their way
// to the wrapped store. Tests derive from it to hold or alter Gets.
class CountingStore : public object::StoreWrapper {
 public:
  explicit CountingStore(object::ObjectStorePtr inner) : object::StoreWrapper(std::move(inner)) {}
  using object::StoreWrapper::Get;
  uint64_t gets() const { return requests_.load(); }
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    ++requests_;
    return object::StoreWrapper::Get(key, options);
  }
  Result<object::ObjectInfo> Head(std::string_view key) override {
    ++requests_;
    return object::StoreWrapper::Head(key);
  }
  Result<object::ListResult> List(const object::ListOptions& options) override {
    ++requests_;
    return object::StoreWrapper::List(options);
  }

 private:
  std::atomic<uint64_t> requests_{0};
};

// Shard k holds counts[k] samples; sample i (global) has key "s%06d" and
// fields from make_fields(i). Writes shards, sidecars and index.json under `prefix`.
template <typename MakeFields>
dataset::Manifest WriteDataset(object::ObjectStore& store, const std::string& prefix, dataset::ShardFormat format,
                               const std::vector<uint64_t>& counts, MakeFields make_fields) {
  dataset::Manifest m;
  m.format = format;
  uint64_t index = 0;
  std::vector<std::string> fields;
  for (size_t k = 0; k < counts.size(); ++k) {
    dataset::BufferSink sink;
    dataset::ShardWriteOptions wo;
    wo.format = format;
    auto writer = dataset::ShardWriter::Make(sink, wo);
    for (uint64_t j = 0; j < counts[k]; ++j, ++index) {
      char key[32];
      snprintf(key, sizeof key, "s%06llu", static_cast<unsigned long long>(index));
      dataset::Sample s{key, make_fields(index)};
      for (const auto& f : s.fields) fields.push_back(f.name);
      (void)writer->Add(s);
    }
    Buffer sidecar = *writer->Finish();
    char name[32];
    snprintf(name, sizeof name, "shard-%05zu%s", k, std::string(dataset::ShardExtension(format)).c_str());
    dataset::ShardEntry e{name, sink.bytes_written(), counts[k], "", "", ""};
    (void)store.Put(prefix + name, sink.Take());
    if (format != dataset::ShardFormat::kIndexed) {
      e.sidecar = dataset::SidecarName(name);
      (void)store.Put(prefix + e.sidecar, sidecar);
    }
    m.shards.push_back(e);
  }
  std::sort(fields.begin(), fields.end());
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  m.fields = fields;
  (void)store.Put(prefix + std::string(dataset::kIndexName), Buffer::FromString(dataset::EncodeIndex(m)));
  return m;
}

// A store name no other test in the binary uses ("<prefix>-<n>").
// Polls `cond` every millisecond until it holds (true) or `deadline` passes
// (false): tests wait on a condition, never on a sleep.
inline bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

inline std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "-" + std::to_string(n++);
}

// A .npy v1 file: header padded to 64 bytes, then `data`.
inline std::string Npy(const std::string& descr, const std::string& shape, const std::string& data,
                       bool fortran = false) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

// Reads samples until the epoch ends (OK) or the iterator fails (its error);
// *good counts the samples read before that.
inline Status NextUntilError(Iterator& it, uint64_t* good = nullptr) {
  for (;;) {
    auto s = it.NextSample();
    if (!s.ok()) return s.status();
    if (!*s) return Status::Ok();
    if (good) ++*good;
  }
}

inline std::vector<dataset::Field> TextFields(uint64_t i) {
  return {{"txt", Buffer::FromString("sample-" + std::to_string(i))}};
}

}  // namespace strata::loader::testing
