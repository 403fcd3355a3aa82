// Loader bindings (loader/streaming_dataset.h) used by strata/streaming.py.
// A sample becomes {"__key__", "__index__", field: value}: raw fields as
// bytes, .npy fields as read-only numpy arrays viewing the sample's Buffer
// (zero-copy; the array's base keeps the bytes alive), JSON and TFRecord
// Examples parsed with json.loads. Batches become dicts of columns: fixed-size
// numeric columns are one [B, ...] array over the collated buffer, ragged
// .npy columns a list of arrays viewing it (each row's dtype and shape). Every
// fetch from the C++ pipeline runs with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <map>
#include <memory>

#include "base/units.h"
#include "bindings.h"
#include "loader/streaming_dataset.h"

namespace strata::python {
namespace {

namespace ld = strata::loader;

ld::Decode ParseDecode(const std::string& s) {
  if (s == "auto") return ld::Decode::kAuto;
  if (s == "raw" || s == "bytes") return ld::Decode::kRaw;
  if (s == "json") return ld::Decode::kJson;
  if (s == "npy" || s == "numpy") return ld::Decode::kNpy;
  if (s == "example" || s == "tfrecord") return ld::Decode::kExample;
  ThrowStatus(InvalidArgumentError("unknown decode '" + s + "' (expected auto, raw, json, npy or example)"));
}

ld::Shuffle ParseShuffle(const std::string& s) {
  if (s == "none") return ld::Shuffle::kNone;
  if (s == "shards") return ld::Shuffle::kShards;
  if (s == "window") return ld::Shuffle::kWindow;
  ThrowStatus(InvalidArgumentError("unknown shuffle '" + s + "' (expected none, shards or window)"));
}

struct PyDataset {
  std::shared_ptr<ld::StreamingDataset> ds;
};

// Options arrive as a dict of keyword arguments (streaming.py validates types).
ld::StreamingOptions ParseOptions(const py::dict& kw) {
  ld::StreamingOptions o;
  auto get = [&](const char* name, auto& field) {
    if (kw.contains(name) && !kw[name].is_none()) field = kw[name].cast<std::decay_t<decltype(field)>>();
  };
  get("cache_dir", o.cache_dir);
  get("index_cache_dir", o.index_cache_dir);
  get("cache_limit", o.cache_limit_bytes);
  get("ram_cache", o.ram_cache_bytes);
  if (kw.contains("cache_free_space") && !kw["cache_free_space"].is_none()) {
    auto floor = ParseSpaceFloor(kw["cache_free_space"].cast<std::string>());
    if (!floor.ok()) ThrowStatus(floor.status().WithContext("cache_free_space"));
    o.cache_min_free = *floor;
  }
  if (kw.contains("shuffle")) o.shuffle = ParseShuffle(kw["shuffle"].cast<std::string>());
  get("seed", o.seed);
  get("shuffle_window", o.shuffle_window);
  get("world_size", o.world_size);
  get("rank", o.rank);
  get("num_workers", o.num_workers);
  get("batch_size", o.batch_size);
  get("drop_last", o.drop_last);
  get("even_batches", o.even_batches);
  get("prefetch", o.prefetch_shards);
  get("prefetch_batches", o.prefetch_batches);
  get("prefetch_bytes", o.prefetch_bytes);
  get("max_connections", o.max_connections);
  get("decode_threads", o.decode_threads);
  get("prefetch_next_epoch", o.prefetch_next_epoch);
  get("batch_views", o.batch_views);
  get("fetch_concurrency", o.fetch_concurrency);
  get("retries", o.retries);
  get("skip_corrupt", o.skip_corrupt);
  if (kw.contains("verify") && !kw["verify"].is_none())
    o.verify = Unwrap(ld::ParseShardVerify(kw["verify"].cast<std::string>()));
  if (kw.contains("fetch_timeout") && !kw["fetch_timeout"].is_none()) {  // seconds
    o.fetch_timeout = std::chrono::milliseconds(static_cast<int64_t>(kw["fetch_timeout"].cast<double>() * 1000));
  }
  get("cache_group", o.cache_group);
  get("peer_listen", o.peer_listen);
  get("group_secret_file", o.group_secret_file);
  get("cache_encryption_key_file", o.cache_encryption_key_file);
  if (kw.contains("same_index_as") && !kw["same_index_as"].is_none()) {
    o.same_index_as = kw["same_index_as"].cast<const PyDataset&>().ds;
  }
  if (kw.contains("decode") && !kw["decode"].is_none()) {
    for (auto [k, v] : kw["decode"].cast<py::dict>())
      o.decode[k.cast<std::string>()] = ParseDecode(v.cast<std::string>());
  }
  return o;
}

py::object JsonLoads(const std::string& text) {
  static py::object* loads = new py::object(py::module_::import("json").attr("loads"));  // leaked with the interpreter
  return (*loads)(py::str(text));
}

py::object ValueToPy(ld::Value& v) {
  switch (v.kind) {
    case ld::Decode::kNpy: return NumpyView(std::move(v.bytes), v.dtype, v.shape, v.fortran_order);
    case ld::Decode::kJson:
    case ld::Decode::kExample: return JsonLoads(v.json);
    default: return py::bytes(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size());
  }
}

py::dict SampleToPy(ld::DecodedSample& s) {
  py::dict d;
  d["__key__"] = s.key;
  d["__index__"] = s.index;
  for (auto& [name, value] : s.fields) d[py::str(name)] = ValueToPy(value);
  return d;
}

py::object ColumnToPy(ld::Column& c, size_t rows) {
  if (c.offsets.empty()) {  // fixed-size items: one [rows, ...] array
    if (c.kind == ld::Decode::kNpy && !c.dtype.empty()) {
      std::vector<int64_t> shape{static_cast<int64_t>(rows)};
      shape.insert(shape.end(), c.shape.begin(), c.shape.end());
      return NumpyView(std::move(c.data), c.dtype, shape);
    }
    if (c.kind == ld::Decode::kRaw) {
      int64_t item = rows ? static_cast<int64_t>(c.data.size() / rows) : 0;
      return NumpyView(std::move(c.data), "|u1", {static_cast<int64_t>(rows), item});
    }
  }
  // Variable-size items (or JSON): one Python value per row.
  py::list out;
  for (size_t i = 0; i < rows; ++i) {
    size_t begin = c.offsets.empty() ? i * (c.data.size() / (rows ? rows : 1)) : c.offsets[i];
    size_t end = c.offsets.empty() ? (i + 1) * (c.data.size() / (rows ? rows : 1)) : c.offsets[i + 1];
    Buffer item = c.data.Slice(begin, end - begin);
    if (c.kind == ld::Decode::kJson || c.kind == ld::Decode::kExample) {
      out.append(JsonLoads(item.ToString()));
    } else if (c.kind == ld::Decode::kNpy && i < c.rows.size()) {  // ragged: each row its own array
      const ld::ArrayMeta& m = c.rows[i];
      out.append(NumpyView(std::move(item), m.dtype, m.shape, m.fortran_order));
    } else if (c.kind == ld::Decode::kNpy && !c.dtype.empty()) {
      py::dtype dt(c.dtype);
      out.append(NumpyView(item, c.dtype, {static_cast<int64_t>(item.size() / dt.itemsize())}));
    } else {
      out.append(MemoryView(std::move(item)));
    }
  }
  return out;
}

// A raw column as one buffer and its row bounds: ("raw", uint8 [nbytes] view, uint64 [rows + 1]
// offsets). StreamingDataLoader's workers move it to the main process as one shared-memory
// tensor, not as one pickled bytes object per sample.
py::object PackedRawToPy(ld::Column& c, size_t rows) {
  if (!c.views.empty()) {  // batch_views: ("rows", one memoryview per row, offsets), copied once, by the caller
    py::list out;
    std::vector<uint64_t> offsets{0};
    for (Buffer& v : c.views) {
      offsets.push_back(offsets.back() + v.size());
      out.append(MemoryView(std::move(v)));
    }
    return py::make_tuple("rows", out, py::array_t<uint64_t>(offsets.size(), offsets.data()));
  }
  std::vector<uint64_t> offsets(c.offsets);
  if (offsets.empty()) {  // fixed-size items
    const uint64_t item = rows ? c.data.size() / rows : 0;
    offsets.resize(rows + 1);
    for (size_t i = 0; i <= rows; ++i) offsets[i] = i * item;
  }
  if (offsets.size() != rows + 1 || offsets.back() > c.data.size()) {
    ThrowStatus(CorruptionError("raw column of " + std::to_string(rows) + " rows has " +
                                std::to_string(offsets.size()) + " offsets over " + std::to_string(c.data.size()) +
                                " bytes"));
  }
  const auto size = static_cast<int64_t>(c.data.size());
  return py::make_tuple("raw", NumpyView(std::move(c.data), "|u1", {size}),
                        py::array_t<uint64_t>(offsets.size(), offsets.data()));
}

py::dict BatchToPy(ld::Batch& b, bool packed = false) {
  py::dict d;
  d["__key__"] = b.keys;
  d["__index__"] = py::array_t<uint64_t>(b.indices.size(), b.indices.data());
  d["__epoch__"] = b.epoch;
  d["__position__"] = b.first_position;
  for (auto& [name, col] : b.columns) {
    const bool raw = col.kind == ld::Decode::kRaw || col.kind == ld::Decode::kAuto;
    if (!col.views.empty() && !(packed && raw)) {  // batch_views: only packed raw columns take rows as they are
      col.data = Concat(col.views);
      col.views.clear();
    }
    d[py::str(name)] = packed && raw ? PackedRawToPy(col, b.indices.size()) : ColumnToPy(col, b.indices.size());
  }
  return d;
}

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

py::dict StatsToPy(const ld::Stats& s) {
  py::dict d;
  d["samples"] = s.samples;
  d["bytes"] = s.bytes;
  d["batches"] = s.batches;
  d["shards_fetched"] = s.shards_fetched;
  d["shard_fetch_retries"] = s.shard_fetch_retries;
  d["shards_skipped"] = s.shards_skipped;
  d["shards_from_cache"] = s.shards_from_cache;
  d["shards_parsed"] = s.shards_parsed;
  d["shards_from_previous_epoch"] = s.shards_from_previous_epoch;
  d["samples_skipped"] = s.samples_skipped;
  d["cache_not_admitted_busy"] = s.cache_not_admitted_busy;
  d["cache_not_admitted_no_reuse"] = s.cache_not_admitted_no_reuse;
  d["cache_not_admitted_low_space"] = s.cache_not_admitted_low_space;
  d["cache_disk_hits_resident"] = s.cache_disk_hits_resident;
  d["cache_store_instead_of_disk"] = s.cache_store_instead_of_disk;
  d["queue_depth"] = s.queue_depth;
  d["consumer_wait_s"] = Seconds(s.consumer_wait);
  d["elapsed_s"] = Seconds(s.elapsed);
  d["samples_per_second"] = s.samples_per_second();
  d["bytes_per_second"] = s.bytes_per_second();
  return d;
}

struct PyIterator {
  std::unique_ptr<ld::Iterator> it;
};

// `url`: one URL (a prefix, or a brace pattern of shards) or a list of shard URLs.
PyDataset Open(const py::object& url, const py::dict& kw) {
  ld::StreamingOptions o = ParseOptions(kw);
  if (py::isinstance<py::str>(url)) {
    std::string one = url.cast<std::string>();
    py::gil_scoped_release release;
    return PyDataset{Unwrap(ld::StreamingDataset::Open(one, std::move(o)))};
  }
  auto urls = url.cast<std::vector<std::string>>();
  py::gil_scoped_release release;
  return PyDataset{Unwrap(ld::StreamingDataset::Open(urls, std::move(o)))};
}

}  // namespace

void BindLoader(py::module_& m) {
  py::class_<PyIterator>(m, "_Iterator")
      .def("next_sample",
           [](PyIterator& p) -> py::object {
             std::optional<ld::DecodedSample> s;
             {
               py::gil_scoped_release release;
               s = Unwrap(p.it->NextSample());
             }
             if (!s) return py::none();
             return SampleToPy(*s);
           })
      .def(
          "next_batch",
          [](PyIterator& p, bool packed) -> py::object {
            std::optional<ld::Batch> b;
            {
              py::gil_scoped_release release;
              b = Unwrap(p.it->NextBatch());
            }
            if (!b) return py::none();
            return BatchToPy(*b, packed);
          },
          py::arg("packed") = false)
      .def("stats", [](PyIterator& p) { return StatsToPy(p.it->stats()); })
      .def("close", [](PyIterator& p) {
        py::gil_scoped_release release;  // stops the pipeline threads
        p.it.reset();
      });

  py::class_<PyDataset>(m, "_Dataset")
      .def_property_readonly("size", [](const PyDataset& d) { return d.ds->size(); })
      .def_property_readonly("fingerprint", [](const PyDataset& d) { return d.ds->fingerprint(); })
      .def_property_readonly("fields", [](const PyDataset& d) { return d.ds->index().fields; })
      .def_property_readonly("classes", [](const PyDataset& d) { return d.ds->index().classes; })
      .def_property_readonly("num_shards", [](const PyDataset& d) { return d.ds->index().shards.size(); })
      .def("rank_size", [](const PyDataset& d, size_t rank) { return d.ds->RankSize(rank); })
      .def(
          "epoch_order",
          [](const PyDataset& d, uint64_t epoch, uint64_t streams) {
            if (streams < 1 || streams > ld::kMaxStreams) {
              throw py::value_error("streams must be in [1, " + std::to_string(ld::kMaxStreams) + "]");
            }
            std::vector<uint64_t> order;
            {
              py::gil_scoped_release release;
              order = d.ds->EpochOrder(epoch, streams);
            }
            return py::array_t<uint64_t>(order.size(), order.data());
          },
          py::arg("epoch"), py::arg("streams") = 1)
      .def(
          "iterate",
          [](PyDataset& d, size_t worker, uint64_t epoch, uint64_t consumed, const std::string& fingerprint,
             uint64_t streams) {
            ld::State st;
            st.epoch = epoch;
            st.samples_consumed = consumed;
            st.fingerprint = fingerprint.empty() ? d.ds->fingerprint() : fingerprint;
            st.streams = streams;
            py::gil_scoped_release release;
            return PyIterator{Unwrap(d.ds->Iterate(worker, st))};
          },
          py::arg("worker"), py::arg("epoch"), py::arg("samples_consumed"), py::arg("fingerprint") = "",
          py::arg("streams") = 1)
      .def("flush_cache_writes",
           [](PyDataset& d) {
             py::gil_scoped_release release;
             d.ds->FlushCacheWrites();
           })
      .def("get", [](PyDataset& d, uint64_t index) {
        ld::DecodedSample s;
        {
          py::gil_scoped_release release;
          s = Unwrap(d.ds->Get(index));
        }
        return SampleToPy(s);
      });
  m.def("_open_dataset", &Open, py::arg("url"), py::arg("options"));
  // The prefetch memory budget those options give one iterator (ld::PrefetchBudgetBytes).
  m.def(
      "_prefetch_budget", [](const py::dict& options) { return ld::PrefetchBudgetBytes(ParseOptions(options)); },
      py::arg("options"));
}

}  // namespace strata::python
