// strata.pack: pack a tree of small files into shards (dataset/pack.h), the
// same as `strata pack`. Runs with the GIL released.
#include <pybind11/stl.h>

#include "bindings.h"
#include "dataset/pack.h"
#include "object/store_url.h"

namespace strata::python {
namespace {

py::dict PackUrls(const std::string& src_url, const std::string& dst_url, const std::string& format,
                  uint64_t shard_size, int parallel, bool zstd, const std::string& imagefolder,
                  const std::string& shard_prefix) {
  dataset::PackOptions o;
  o.format = Unwrap(dataset::ParseShardFormat(format));
  o.shard_size = shard_size;
  o.parallel = parallel;
  o.zstd = zstd;
  o.shard_prefix = shard_prefix;
  if (imagefolder == "auto") {
    o.imagefolder = dataset::ImageFolderMode::kAuto;
  } else if (imagefolder == "on") {
    o.imagefolder = dataset::ImageFolderMode::kOn;
  } else if (imagefolder == "off") {
    o.imagefolder = dataset::ImageFolderMode::kOff;
  } else {
    ThrowStatus(InvalidArgumentError("imagefolder must be auto, on or off, not '" + imagefolder + "'"));
  }
  dataset::PackResult r;
  {
    py::gil_scoped_release release;
    object::ObjectStorePtr src = Unwrap(object::OpenStore(src_url));
    object::ObjectStorePtr dst = Unwrap(object::OpenStore(dst_url));
    r = Unwrap(dataset::Pack(*src, "", *dst, "", o));
  }
  py::dict d;
  d["samples"] = r.manifest.total_samples();
  d["shards"] = r.manifest.shards.size();
  d["fields"] = r.manifest.fields;
  d["classes"] = r.manifest.classes;
  d["input_files"] = r.input_files;
  d["input_bytes"] = r.input_bytes;
  d["output_bytes"] = r.output_bytes;
  d["skipped"] = r.skipped;
  d["seconds"] = r.seconds;
  return d;
}

}  // namespace

void BindDataset(py::module_& m) {
  m.def("_pack", &PackUrls, py::arg("src"), py::arg("dst"), py::arg("format") = "tar",
        py::arg("shard_size") = 64ull << 20, py::arg("parallel") = 4, py::arg("zstd") = false,
        py::arg("imagefolder") = "auto", py::arg("shard_prefix") = "shard-");
}

}  // namespace strata::python
