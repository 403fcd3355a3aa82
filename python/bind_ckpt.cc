// Low-level checkpoint bindings (ckpt/writer.h, reader.h, location.h) used by
// strata/checkpoint.py, which maps PyTorch state_dicts onto them. Tensors are
// passed as (name, dtype, shape, address, nbytes): Save copies straight from
// those addresses into its staging buffers with the GIL released, and
// LoadInto reads shards straight into caller-allocated tensors. The caller
// (checkpoint.py) keeps the tensors alive for the duration of each call.
#include <pybind11/stl.h>

#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>
#include <tuple>

#include "base/metrics.h"
#include "bindings.h"
#include "ckpt/location.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "group/group_store.h"
#include "object/store_url.h"

namespace strata::python {
namespace {

using TensorSpec = std::tuple<std::string, std::string, std::vector<int64_t>, uintptr_t, uint64_t>;

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

py::dict StatsDict(const ckpt::SaveStats& s) {
  py::dict d;
  d["stall_s"] = Seconds(s.stall);
  d["persist_s"] = Seconds(s.persist);
  d["upload_s"] = Seconds(s.upload);
  d["bytes"] = s.bytes;
  d["shards"] = s.shards;
  d["wait_s"] = Seconds(s.wait);
  d["copy_s"] = Seconds(s.copy);
  d["cold_staging"] = s.cold_staging;
  d["backlog_wait_s"] = Seconds(s.backlog_wait);
  d["tiered"] = s.tiered;
  return d;
}

py::object StepOrNone(int64_t step) { return step < 0 ? py::none() : py::object(py::int_(step)); }

py::dict TierStatsDict(const ckpt::TierStats& t) {
  py::dict d;
  d["newest_local"] = StepOrNone(t.newest_local);
  d["newest_remote"] = StepOrNone(t.newest_remote);
  d["lag_steps"] = t.lag_steps;
  d["lag_checkpoints"] = t.lag_checkpoints;
  d["lag_s"] = Seconds(t.lag);
  d["pending_steps"] = t.pending_steps;
  d["pending_bytes"] = t.pending_bytes;
  d["uploading"] = StepOrNone(t.uploading);
  d["waiting_saves"] = t.waiting_saves;
  d["uploaded"] = t.uploaded;
  d["superseded"] = t.superseded;
  d["not_tiered"] = t.not_tiered;
  d["rejected"] = t.rejected;
  d["failed"] = t.failed;
  d["backlog_wait_s"] = Seconds(t.backlog_wait);
  return d;
}

// The strata_ckpt_* families of this process's metrics, in the Prometheus text format.
std::string CkptMetricsText() {
  std::istringstream in(MetricsRegistry::Global().RenderPrometheus());
  std::string out, line;
  while (std::getline(in, line)) {
    for (std::string_view prefix : {"strata_ckpt_", "# HELP strata_ckpt_", "# TYPE strata_ckpt_"}) {
      if (line.rfind(prefix, 0) == 0) {
        out += line + "\n";
        break;
      }
    }
  }
  return out;
}

struct PyWriter {
  std::unique_ptr<ckpt::CheckpointWriter> writer;
};

struct PyLocation {
  std::unique_ptr<ckpt::Location> loc;
};

// `policy`: what a save does when the upload backlog is full; `max_queued`:
// saves staged ahead of the one persisting (1: a save waits for the previous one).
PyWriter OpenWriter(const std::string& dir, const std::string& remote_url, int rank, int world_size, bool shared_dir,
                    const std::string& policy, int keep_local, int keep_remote, size_t io_threads, size_t stage_threads,
                    uint64_t shard_bytes, size_t max_queued, bool fsync, uint64_t staging_bytes,
                    const std::string& attempt, std::optional<size_t> max_pending_steps, uint64_t max_pending_bytes) {
  ckpt::WriterOptions o;
  o.dir = dir;
  o.remote_url = remote_url;
  o.rank = rank;
  o.world_size = world_size;
  o.shared_dir = shared_dir;
  if (policy == "wait") {
    o.backlog_policy = ckpt::BacklogPolicy::kWait;
  } else if (policy == "skip") {
    o.backlog_policy = ckpt::BacklogPolicy::kSkip;
  } else if (policy == "error") {
    o.backlog_policy = ckpt::BacklogPolicy::kError;
  } else {
    ThrowStatus(InvalidArgumentError("policy must be 'wait', 'skip' or 'error', not '" + policy + "'"));
  }
  o.policy = max_queued > 1 ? ckpt::InflightPolicy::kQueue : ckpt::InflightPolicy::kWait;
  o.backlog = {max_pending_steps, max_pending_bytes};
  o.keep_local = keep_local;
  o.keep_remote = keep_remote;
  o.io_threads = io_threads;
  o.stage_threads = stage_threads;
  o.shard_bytes = shard_bytes;
  o.max_queued = max_queued;
  o.fsync = fsync;
  o.staging_bytes = staging_bytes;
  o.attempt = attempt;
  py::gil_scoped_release release;
  return PyWriter{Unwrap(ckpt::CheckpointWriter::Open(std::move(o)))};
}

ckpt::SaveHandle Save(PyWriter& w, int64_t step, const std::vector<TensorSpec>& specs, std::string metadata) {
  std::vector<ckpt::TensorView> views;
  views.reserve(specs.size());
  for (const auto& [name, dtype, shape, addr, nbytes] : specs) {
    views.push_back({name, dtype, shape, reinterpret_cast<const void*>(addr), nbytes});
  }
  py::gil_scoped_release release;
  return Unwrap(w.writer->Save(step, views, std::move(metadata)));
}

py::dict ReportDict(const ckpt::VerifyReport& r) {
  py::dict d;
  d["step"] = r.step;
  d["ok"] = r.ok();
  d["committed"] = r.committed;
  py::list problems;
  for (const auto& p : r.problems) {
    py::dict pd;
    pd["file"] = p.file;
    pd["tensor"] = p.tensor;
    pd["what"] = p.what;
    problems.append(pd);
  }
  d["problems"] = problems;
  d["text"] = r.ToString();
  return d;
}

// {step, world_size, metadata (rank 0), ranks: [{rank, metadata, tensors: [(name, dtype, shape, size)]}]}
py::dict InfoDict(const ckpt::CheckpointInfo& info) {
  py::dict d;
  d["step"] = info.step;
  d["world_size"] = info.manifest.world_size;
  d["wall_time_ms"] = info.manifest.wall_time_ms;
  d["metadata"] = info.manifest.metadata;
  d["bytes"] = info.TotalBytes();
  py::list ranks;
  for (const auto& rm : info.ranks) {
    py::dict rd;
    rd["rank"] = rm.rank;
    rd["metadata"] = rm.metadata;
    py::list tensors;
    for (const auto& t : rm.tensors) tensors.append(py::make_tuple(t.name, t.dtype, t.shape, t.size));
    rd["tensors"] = tensors;
    ranks.append(rd);
  }
  d["ranks"] = ranks;
  return d;
}

// With `cache_group`, a store URL is read through this process's member of
// the group (group/group_store.h): each block leaves the bucket once for all members.
PyLocation OpenLoc(const std::string& dir_or_url, const std::string& cache_group, const std::string& peer_listen,
                   const std::string& group_secret_file, const std::string& cache_dir) {
  py::gil_scoped_release release;
  if (cache_group.empty()) return PyLocation{Unwrap(ckpt::OpenLocation(dir_or_url))};
  if (dir_or_url.find("://") == std::string::npos) {
    ThrowStatus(InvalidArgumentError("a cache group reads a store URL, not the local directory " + dir_or_url));
  }
  group::GroupStoreOptions go;
  go.url = cache_group;
  go.listen = peer_listen.empty() ? "127.0.0.1:0" : peer_listen;
  go.secret_file = group_secret_file;
  go.cache_dir = cache_dir;
  auto store = Unwrap(group::JoinGroupStore(Unwrap(object::OpenStore(dir_or_url)), go));
  return PyLocation{ckpt::StoreLocation(std::move(store))};
}

ckpt::VerifyLevel Level(bool full) { return full ? ckpt::VerifyLevel::kFull : ckpt::VerifyLevel::kQuick; }

ckpt::VerifyLevel LevelNamed(const std::string& level) {
  if (level == "quick") return ckpt::VerifyLevel::kQuick;
  if (level == "bytes") return ckpt::VerifyLevel::kBytes;
  if (level == "full") return ckpt::VerifyLevel::kFull;
  ThrowStatus(InvalidArgumentError("level must be 'quick', 'bytes' or 'full', not '" + level + "'"));
}

}  // namespace

void BindCkpt(py::module_& m) {
  py::class_<ckpt::SaveHandle>(m, "_SaveHandle")
      .def_property_readonly("step", &ckpt::SaveHandle::step)
      .def("done", &ckpt::SaveHandle::Done)
      .def("wait",
           [](const ckpt::SaveHandle& h) {
             Status st;
             {
               py::gil_scoped_release release;
               st = h.Wait();
             }
             Check(st);
           })
      .def("wait_uploaded",
           [](const ckpt::SaveHandle& h) {
             Status st;
             {
               py::gil_scoped_release release;
               st = h.WaitUploaded();
             }
             Check(st);
           })
      .def("stats", [](const ckpt::SaveHandle& h) { return StatsDict(h.stats()); });

  py::class_<PyWriter>(m, "_Writer")
      .def("save", &Save, py::arg("step"), py::arg("tensors"), py::arg("metadata") = "{}")
      .def("flush",
           [](PyWriter& w) {
             Status st;
             {
               py::gil_scoped_release release;
               st = w.writer->Flush();
             }
             Check(st);
           })
      .def("wait_for_uploads",
           [](PyWriter& w) {
             Status st;
             {
               py::gil_scoped_release release;
               st = w.writer->WaitForUploads();
             }
             Check(st);
           })
      .def("wait_staging_ready",
           [](PyWriter& w) {
             Status st;
             {
               py::gil_scoped_release release;
               st = w.writer->WaitStagingReady();
             }
             Check(st);
           })
      .def("tier_stats", [](PyWriter& w) { return TierStatsDict(w.writer->tier_stats()); })
      .def("close", [](PyWriter& w) {
        py::gil_scoped_release release;
        w.writer.reset();  // waits for staged saves to persist
      });
  m.def("_open_writer", &OpenWriter, py::arg("dir"), py::arg("remote_url") = "", py::arg("rank") = 0,
        py::arg("world_size") = 1, py::arg("shared_dir") = true, py::arg("policy") = "wait", py::arg("keep_local") = 0,
        py::arg("keep_remote") = 0, py::arg("io_threads") = 4, py::arg("stage_threads") = 2,
        py::arg("shard_bytes") = 256ull << 20, py::arg("max_queued") = 2, py::arg("fsync") = true,
        py::arg("staging_bytes") = 0, py::arg("attempt") = "", py::arg("max_pending_steps") = py::none(),
        py::arg("max_pending_bytes") = 0);
  m.def("_no_tier_stats", [] { return TierStatsDict(ckpt::TierStats{}); });
  m.def("_ckpt_metrics_text", &CkptMetricsText);

  py::class_<PyLocation>(m, "_Location")
      .def_property_readonly("description", [](const PyLocation& l) { return l.loc->Describe(); })
      .def("steps",
           [](PyLocation& l) {
             py::gil_scoped_release release;
             return Unwrap(l.loc->ListSteps());
           })
      .def(
          "latest",
          [](PyLocation& l, const std::string& level) -> py::object {
            const ckpt::VerifyLevel v = LevelNamed(level);
            Result<ckpt::CheckpointInfo> r = NotFoundError("");
            {
              py::gil_scoped_release release;
              r = ckpt::Latest(*l.loc, v);
            }
            if (!r.ok() && r.status().code() == Code::kNotFound) return py::none();
            return py::int_(Unwrap(std::move(r)).step);
          },
          py::arg("level") = "bytes")
      .def("info",
           [](PyLocation& l, int64_t step) {
             ckpt::CheckpointInfo info;
             {
               py::gil_scoped_release release;
               info = Unwrap(ckpt::OpenCheckpoint(*l.loc, step));
             }
             return InfoDict(info);
           })
      .def(
          "verify",
          [](PyLocation& l, int64_t step, bool full) {
            ckpt::VerifyReport r;
            {
              py::gil_scoped_release release;
              r = ckpt::Verify(*l.loc, step, Level(full));
            }
            return ReportDict(r);
          },
          py::arg("step"), py::arg("full") = true)
      .def(
          "load_into",
          [](PyLocation& l, int64_t step, const std::vector<std::tuple<std::string, uintptr_t, uint64_t>>& targets,
             bool verify, int parallelism, int rank) {
            std::map<std::string, ckpt::Target> t;
            for (const auto& [name, addr, size] : targets) t[name] = {reinterpret_cast<void*>(addr), size};
            ckpt::LoadOptions o;
            o.verify = verify;
            o.parallelism = parallelism;
            o.rank = rank;
            Status st;
            {
              py::gil_scoped_release release;
              st = ckpt::LoadInto(*l.loc, step, t, o);
            }
            Check(st);
          },
          py::arg("step"), py::arg("targets"), py::arg("verify") = true, py::arg("parallelism") = 4,
          py::arg("rank") = -1)
      .def(
          "pull_to",
          [](PyLocation& l, int64_t step, PyLocation& to, int parallelism) {
            py::gil_scoped_release release;
            Check(ckpt::Pull(*l.loc, step, *to.loc, parallelism));
          },
          py::arg("step"), py::arg("to"), py::arg("parallelism") = 4);
  m.def("_open_location", &OpenLoc, py::arg("dir_or_url"), py::arg("cache_group") = "", py::arg("peer_listen") = "",
        py::arg("group_secret_file") = "", py::arg("cache_dir") = "");
}

}  // namespace strata::python
