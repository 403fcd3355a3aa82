// strata.Store (returned by strata.open): any ObjectStore, optionally behind a
// local block cache. Reads return read-only memoryviews over the fetched
// Buffer (no copy); writes copy the caller's bytes once. Thread-safe (the
// GIL is released during every request).
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>

#include "bindings.h"
#include "cache/block_cache.h"
#include "cache/block_sealer.h"
#include "cache/cached_store.h"
#include "object/store_url.h"

namespace strata::python {
namespace {

struct PyStore {
  object::ObjectStorePtr store;
};

py::dict InfoDict(const object::ObjectInfo& info) {
  py::dict d;
  d["key"] = info.key;
  d["size"] = info.size;
  d["etag"] = info.etag;
  d["mtime"] = std::chrono::duration<double>(info.mtime.time_since_epoch()).count();
  return d;
}

// Lazily pages through List: yields (key, size, etag).
class ListIterator {
 public:
  ListIterator(object::ObjectStorePtr store, std::string prefix, std::string delimiter) : store_(std::move(store)) {
    options_.prefix = std::move(prefix);
    options_.delimiter = std::move(delimiter);
  }
  py::object Next() {
    while (pos_ >= page_.size()) {
      if (done_) throw py::stop_iteration();
      object::ListResult result;
      {
        py::gil_scoped_release release;
        auto r = store_->List(options_);
        if (!r.ok()) ThrowStatus(r.status().WithContext("list '" + options_.prefix + "' in " + store_->Url()));
        result = std::move(r).value();
      }
      page_.clear();
      pos_ = 0;
      for (auto& o : result.objects) page_.push_back({o.key, o.size, o.etag});
      for (auto& p : result.common_prefixes) page_.push_back({p, 0, ""});  // "directories" (delimiter set)
      done_ = !result.truncated;
      options_.continuation_token = result.next_continuation_token;
    }
    const Entry& e = page_[pos_++];
    return py::make_tuple(e.key, e.size, e.etag);
  }

 private:
  struct Entry {
    std::string key;
    uint64_t size;
    std::string etag;
  };
  object::ObjectStorePtr store_;
  object::ListOptions options_;
  std::vector<Entry> page_;
  size_t pos_ = 0;
  bool done_ = false;
};

std::optional<object::ByteRange> MakeRange(std::optional<int64_t> start, std::optional<int64_t> end) {
  if (!start && !end) return std::nullopt;
  if (start && *start < 0) {
    if (end) ThrowStatus(InvalidArgumentError("a negative start (the last N bytes) takes no end"));
    return object::ByteRange::Last(static_cast<uint64_t>(-*start));
  }
  uint64_t s = start ? static_cast<uint64_t>(*start) : 0;
  if (!end) return object::ByteRange::From(s);
  if (*end < static_cast<int64_t>(s)) {
    ThrowStatus(InvalidArgumentError("range end " + std::to_string(*end) + " is before start " + std::to_string(s)));
  }
  return object::ByteRange::Of(s, static_cast<uint64_t>(*end) - s);
}

// One copy of any bytes-like object (non-contiguous views are gathered by Python first).
Buffer CopyBytes(const py::buffer& data) {
  py::buffer_info bi = data.request();
  bool contiguous = true;
  py::ssize_t expect = bi.itemsize;
  for (size_t i = bi.shape.size(); i-- > 0;) {
    if (bi.shape[i] > 1 && bi.strides[i] != expect) contiguous = false;
    expect *= bi.shape[i];
  }
  if (!contiguous) {
    std::string bytes = py::module_::import("builtins").attr("bytes")(data).cast<std::string>();
    return Buffer::FromString(std::move(bytes));
  }
  return Buffer::Copy(bi.ptr, static_cast<size_t>(bi.itemsize * bi.size));
}

PyStore Open(const std::string& url, std::optional<std::string> cache_dir, uint64_t cache_limit, uint64_t ram_cache,
             const std::string& cache_encryption_key_file) {
  py::gil_scoped_release release;
  object::ObjectStorePtr store = Unwrap(object::OpenStore(url));
  if (cache_dir || ram_cache > 0) {
    cache::CacheOptions co;
    co.dir = cache_dir.value_or("");
    co.disk_bytes = cache_limit;
    co.ram_bytes = ram_cache;
    if (!cache_encryption_key_file.empty())
      co.sealer = Unwrap(cache::BlockSealer::FromKeyFile(cache_encryption_key_file));
    auto cache = Unwrap(cache::BlockCache::Open(co));
    store = std::make_shared<cache::CachedStore>(store, std::move(cache));
  }
  return PyStore{std::move(store)};
}

}  // namespace

void BindStore(py::module_& m) {
  py::class_<ListIterator>(m, "_ListIterator")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &ListIterator::Next);

  py::class_<PyStore>(m, "Store", "An object store (file://, mem://, s3://), optionally cached locally.")
      .def_property_readonly("url", [](const PyStore& s) { return s.store->Url(); })
      .def(
          "get",
          [](PyStore& s, const std::string& key, std::optional<int64_t> start, std::optional<int64_t> end) {
            object::GetOptions opts;
            opts.range = MakeRange(start, end);
            Buffer data;
            {
              py::gil_scoped_release release;
              data = Unwrap(s.store->Get(key, opts)).data;
            }
            return MemoryView(std::move(data));
          },
          py::arg("key"), py::arg("start") = py::none(), py::arg("end") = py::none(),
          "Bytes [start, end) of `key` (a negative start: the last -start bytes) as a read-only memoryview.")
      .def(
          "head",
          [](PyStore& s, const std::string& key) {
            object::ObjectInfo info;
            {
              py::gil_scoped_release release;
              info = Unwrap(s.store->Head(key));
            }
            return InfoDict(info);
          },
          py::arg("key"), "{key, size, etag, mtime} of `key`; strata.NotFound if missing.")
      .def(
          "put",
          [](PyStore& s, const std::string& key, py::buffer data) {
            Buffer copy = CopyBytes(data);
            object::ObjectInfo info;
            {
              py::gil_scoped_release release;
              info = Unwrap(s.store->Put(key, std::move(copy)));
            }
            return InfoDict(info);
          },
          py::arg("key"), py::arg("data"), "Writes `data` (any bytes-like) atomically; returns its info.")
      .def(
          "delete",
          [](PyStore& s, const std::string& key) {
            py::gil_scoped_release release;
            Check(s.store->Delete(key));
          },
          py::arg("key"), "Deletes `key` (no error if missing).")
      .def(
          "copy",
          [](PyStore& s, const std::string& src, const std::string& dst) {
            object::ObjectInfo info;
            {
              py::gil_scoped_release release;
              info = Unwrap(s.store->Copy(src, dst));
            }
            return InfoDict(info);
          },
          py::arg("src"), py::arg("dst"))
      .def(
          "list",
          [](PyStore& s, const std::string& prefix, const std::string& delimiter) {
            return ListIterator(s.store, prefix, delimiter);
          },
          py::arg("prefix") = "", py::arg("delimiter") = "",
          "Iterates (key, size, etag) under `prefix`, in key order; with a delimiter, common prefixes "
          "follow each page's objects as (prefix, 0, '').")
      .def("__repr__", [](const PyStore& s) { return "<strata.Store " + s.store->Url() + ">"; });

  m.def("_open_store", &Open, py::arg("url"), py::arg("cache_dir") = py::none(), py::arg("cache_limit") = 10ull << 30,
        py::arg("ram_cache") = 0, py::arg("cache_encryption_key_file") = "");
}

}  // namespace strata::python
