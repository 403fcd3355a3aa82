"""Async, sharded, verified checkpoints of PyTorch state_dicts (``strata.checkpoint``).

    ckpt = strata.checkpoint.Checkpointer("/ckpt", remote="s3://bucket/run1?endpoint=...", keep_local=2)
    fut = ckpt.save(step, {"model": model.state_dict(), "optim": opt.state_dict()}, async_save=True)
    ...                                  # training continues once the bytes are staged in RAM
    fut.result()                         # committed locally; fut.wait_uploaded(): committed remotely
    state = ckpt.load()                  # the newest checkpoint that verifies

Tensors (every torch dtype, any strides, 0-dim, empty) are stored in safetensors shards; the
rest of the structure (dicts incl. OrderedDict and their ``_metadata``, lists, tuples,
torch.Size, None, bool, int, float, complex, str, bytes, torch.dtype/device, numpy arrays) is
kept as JSON in the checkpoint's metadata. Nothing is pickled: other objects are refused with
TypeError naming where they are. A tensor object appearing twice is stored once and restored
shared; distinct views of one storage are stored separately.
"""

import base64
import collections
import concurrent.futures
import json
import operator
import os
import threading
import uuid

import numpy as np
import torch

from . import _strata
from ._distributed import rank_world
from .store import to_url

_FORMAT = "strata.checkpoint/1"

# torch dtype -> safetensors dtype; any other dtype is stored as its raw bytes ("U8", [nbytes]).
_SAFETENSORS = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
    torch.bool: "BOOL", torch.complex64: "C64",
}

# No torch.distributed.checkpoint (DCP) StorageWriter/StorageReader adapter is shipped, whatever
# PyTorch is installed: none could be exercised here (Debian's PyTorch 1.13 has no
# torch.distributed.checkpoint, and its predecessor torch.distributed._shard.checkpoint fails to
# import on Python 3.11 with a dataclass error), and untested adapter code is not shipped.
# HAVE_DCP only reports whether the installed PyTorch has those interfaces; nothing here uses it.
try:  # pragma: no cover - depends on the installed PyTorch
    import torch.distributed.checkpoint as _dcp  # noqa: F401
    HAVE_DCP = hasattr(_dcp, "StorageWriter") and hasattr(_dcp, "StorageReader")
except Exception:  # noqa: BLE001  (ImportError, or a broken module on this Python)
    HAVE_DCP = False


def _torch_dtype(name):
    dt = getattr(torch, name.replace("torch.", ""), None)
    if not isinstance(dt, torch.dtype):
        raise _strata.Corruption(f"checkpoint names an unknown torch dtype {name!r}")
    return dt


class _Encoder:
    """Splits a state_dict into tensor specs (for the C++ writer) and a JSON skeleton."""

    def __init__(self):
        self.specs = []  # (name, dtype, shape, address, nbytes)
        self.keep = []  # the tensors/arrays whose memory the specs point at
        self._names = set()
        self._seen = {}  # id(tensor) -> name

    def _name(self, path):
        name = "/".join(path) or "tensor"
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            name = "tensor"
        if len(name.encode("utf-8")) > 2000:
            name = "tensor"
        base, n = name, 1
        while name in self._names or name == "__metadata__":
            name, n = f"{base}~{n}", n + 1
        self._names.add(name)
        return name

    def _add(self, path, stored_dtype, shape, address, nbytes, owner):
        name = self._name(path)
        self.specs.append((name, stored_dtype, list(shape), address, nbytes))
        self.keep.append(owner)
        return name

    def tensor(self, t, path):
        if id(t) in self._seen:
            return {"T": "ref", "name": self._seen[id(t)]}
        if t.layout != torch.strided or t.is_quantized:
            raise TypeError(f"cannot checkpoint the {t.layout} / quantized tensor at {'/'.join(path)!r}: "
                            "convert it to a dense tensor first")
        node = {"T": "tensor", "dtype": str(t.dtype), "shape": list(t.shape), "device": str(t.device),
                "requires_grad": bool(t.requires_grad), "parameter": isinstance(t, torch.nn.Parameter)}
        data = t.detach()
        if data.device.type != "cpu":
            data = data.cpu()  # e.g. CUDA: copied to host first (no zero-copy path for device memory)
        if data.is_conj():
            data = data.resolve_conj()
        if data.is_neg():
            data = data.resolve_neg()
        if not data.is_contiguous():
            data = data.contiguous()
        nbytes = data.numel() * data.element_size()
        stored = _SAFETENSORS.get(data.dtype)
        shape = list(data.shape) if stored else [nbytes]
        name = self._add(path, stored or "U8", shape, data.data_ptr() if nbytes else 0, nbytes, data)
        node["name"] = name
        self._seen[id(t)] = name
        self.keep.append(t)
        return node

    def array(self, a, path):
        if a.dtype.hasobject or a.dtype.fields is not None:
            raise TypeError(f"cannot checkpoint the numpy array of dtype {a.dtype} at {'/'.join(path)!r}")
        c = np.ascontiguousarray(a)
        name = self._add(path, "U8", [c.nbytes], c.ctypes.data if c.nbytes else 0, c.nbytes, c)
        return {"T": "ndarray", "dtype": c.dtype.str, "shape": list(c.shape), "name": name}

    def encode(self, obj, path=()):
        if isinstance(obj, torch.Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, np.ndarray):
            return self.array(obj, path)
        if obj is None:
            return {"T": "none"}
        if isinstance(obj, bool):
            return {"T": "bool", "v": obj}
        if isinstance(obj, int):
            return {"T": "int", "v": str(int(obj))}  # exact for any size
        if isinstance(obj, float):
            return {"T": "float", "v": float(obj).hex()}  # exact, incl. nan/inf
        if isinstance(obj, complex):
            return {"T": "complex", "re": obj.real.hex(), "im": obj.imag.hex()}
        if isinstance(obj, str):
            return {"T": "str", "v": base64.b64encode(obj.encode("utf-8", "surrogatepass")).decode()}
        if isinstance(obj, (bytes, bytearray)):
            return {"T": "bytearray" if isinstance(obj, bytearray) else "bytes", "v": base64.b64encode(obj).decode()}
        if isinstance(obj, torch.dtype):
            return {"T": "dtype", "v": str(obj)}
        if isinstance(obj, torch.device):
            return {"T": "device", "v": str(obj)}
        if isinstance(obj, torch.Size):
            return {"T": "size", "v": list(obj)}
        if type(obj) in (list, tuple):
            return {"T": type(obj).__name__,
                    "items": [self.encode(v, path + (str(i),)) for i, v in enumerate(obj)]}
        if type(obj) in (dict, collections.OrderedDict):
            node = {"T": "odict" if isinstance(obj, collections.OrderedDict) else "dict",
                    "items": [[self.encode(k, path + ("<key>",)), self.encode(v, path + (str(k),))]
                              for k, v in obj.items()]}
            meta = getattr(obj, "_metadata", None)  # nn.Module.state_dict() versions
            if meta is not None:
                node["meta"] = self.encode(meta, path + ("_metadata",))
            return node
        raise TypeError(
            f"cannot checkpoint {type(obj).__module__}.{type(obj).__qualname__} at {'/'.join(path) or '<root>'!r}: "
            "strata stores tensors, numpy arrays, None, bool, int, float, complex, str, bytes, lists, tuples, "
            "dicts, torch.Size/dtype/device, and never pickles; convert it (e.g. to a dict or tensor) first")


class _Decoder:
    """Rebuilds the structure; tensors are allocated first and filled by one LoadInto."""

    def __init__(self, stored):
        self.stored = stored  # name -> (dtype, shape, size) as recorded in the manifest
        self.targets = []  # (name, address, nbytes)
        self.tensors = {}  # name -> tensor
        self.fixups = []  # (name, node): device / requires_grad / Parameter, applied after loading

    def _entry(self, name):
        if name not in self.stored:
            raise _strata.Corruption(f"checkpoint metadata names tensor {name!r}, which is not in the checkpoint")
        return self.stored[name]

    def decode(self, node):
        t = node["T"]
        if t == "tensor":
            dtype, shape = _torch_dtype(node["dtype"]), node["shape"]
            out = torch.empty(shape, dtype=dtype)
            nbytes = out.numel() * out.element_size()
            if self._entry(node["name"])[2] != nbytes:
                raise _strata.Corruption(f"tensor {node['name']!r}: {self.stored[node['name']][2]} bytes stored, "
                                         f"{nbytes} expected for {dtype} {shape}")
            if nbytes:
                self.targets.append((node["name"], out.data_ptr(), nbytes))
            self.tensors[node["name"]] = out
            self.fixups.append((node["name"], node))
            return _Slot(node["name"])
        if t == "ref":
            return _Slot(node["name"])
        if t == "ndarray":
            out = np.empty(node["shape"], dtype=np.dtype(node["dtype"]))
            if self._entry(node["name"])[2] != out.nbytes:
                raise _strata.Corruption(f"array {node['name']!r}: size differs from its metadata")
            if out.nbytes:
                self.targets.append((node["name"], out.ctypes.data, out.nbytes))
            return out
        if t == "none":
            return None
        if t == "bool":
            return bool(node["v"])
        if t == "int":
            return int(node["v"])
        if t == "float":
            return float.fromhex(node["v"])
        if t == "complex":
            return complex(float.fromhex(node["re"]), float.fromhex(node["im"]))
        if t == "str":
            return base64.b64decode(node["v"]).decode("utf-8", "surrogatepass")
        if t == "bytes":
            return base64.b64decode(node["v"])
        if t == "bytearray":
            return bytearray(base64.b64decode(node["v"]))
        if t == "dtype":
            return _torch_dtype(node["v"])
        if t == "device":
            return torch.device(node["v"])
        if t == "size":
            return torch.Size(node["v"])
        if t in ("list", "tuple"):
            items = [self.decode(v) for v in node["items"]]
            return items if t == "list" else _TupleSlot(items)
        if t in ("dict", "odict"):
            d = collections.OrderedDict() if t == "odict" else {}
            for k, v in node["items"]:
                d[_resolve_key(self.decode(k))] = self.decode(v)
            if "meta" in node:
                d._metadata = self.decode(node["meta"])
            return d
        raise _strata.Corruption(f"checkpoint metadata has an unknown node type {t!r}")

    def finish(self, obj, map_location):
        for name, node in self.fixups:
            t = self.tensors[name]
            if map_location is not None:
                t = t.to(map_location)
            if node.get("parameter"):
                t = torch.nn.Parameter(t, requires_grad=node.get("requires_grad", True))
            elif node.get("requires_grad"):
                t.requires_grad_(True)
            self.tensors[name] = t
        return self._fill(obj)

    def _fill(self, obj):
        if isinstance(obj, _Slot):
            return self.tensors[obj.name]
        if isinstance(obj, _TupleSlot):
            return tuple(self._fill(v) for v in obj.items)
        if isinstance(obj, list):
            for i, v in enumerate(obj):
                obj[i] = self._fill(v)
        elif isinstance(obj, dict):
            for k in list(obj.keys()):
                obj[k] = self._fill(obj[k])
            if hasattr(obj, "_metadata"):
                obj._metadata = self._fill(obj._metadata)
        return obj


class _Slot:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class _TupleSlot:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


def _resolve_key(k):
    return tuple(_resolve_key(v) for v in k.items) if isinstance(k, _TupleSlot) else k


class SaveFuture(concurrent.futures.Future):
    """A save in flight: ``done()``, ``result(timeout)`` (stats once committed locally),
    ``wait_uploaded()`` (committed in the remote store too) and ``step``.

    Stats (a dict; ``stats()`` any time, times in seconds): ``stall_s`` (time inside save(),
    what training waited), of it ``wait_s`` (for the previous save or the staging memory) and
    ``copy_s`` (copying the tensors to RAM), ``cold_staging`` (the copy went to freshly mapped
    memory: see Checkpointer's ``staging_bytes``), ``persist_s`` (staged -> committed
    locally), ``upload_s`` (-> committed remotely), ``bytes``, ``shards``, ``tiered`` (queued for
    upload; False without a remote or when policy "skip" kept it local), ``backlog_wait_s`` (part of
    ``wait_s`` spent waiting for the upload backlog, policy "wait")."""

    def __init__(self, handle):
        super().__init__()
        self._handle = handle
        self.step = handle.step
        self.set_running_or_notify_cancel()
        threading.Thread(target=self._wait, name=f"strata-ckpt-{self.step}", daemon=True).start()

    def _wait(self):
        try:
            self._handle.wait()  # GIL released in C++
            self.set_result(self._handle.stats())
        except BaseException as e:  # noqa: BLE001  (delivered through result())
            self.set_exception(e)

    def wait_uploaded(self):
        """Blocks until the checkpoint is committed in the remote store (at once without one).
        Raises strata.Cancelled if this writer will not upload it: superseded by newer steps
        (keep_remote), kept local by policy "skip", or the Checkpointer closed first (the next
        one opened on the directory resumes it)."""
        self._handle.wait_uploaded()
        return self._handle.stats()

    def stats(self):
        return self._handle.stats()


class Checkpointer:
    """Saves and loads state_dicts under ``dir`` (local), tiering to ``remote`` (a store URL).

    ``rank``/``world_size`` default to torch.distributed or RANK/WORLD_SIZE: every rank saves
    its own state into the same step, which commits when every rank's part is durable.
    ``attempt``: with several ranks, an id shared by every rank of this run of the job and new
    when the job restarts, so parts left by a crashed earlier attempt at the same step are
    never committed with this one's. Default: a UUID broadcast from rank 0 through
    torch.distributed when it is initialised (creating the Checkpointer is then a collective
    call); without torch.distributed pass it yourself (e.g. a launcher's run id + restart
    count). Ignored with one rank.
    ``keep_local``/``keep_remote``: keep the newest N checkpoints (0 = all).

    Uploads to ``remote`` send the newest committed step first; a step that ``keep_remote`` would
    delete as soon as the newer ones land is never sent (its ``wait_uploaded()`` raises
    strata.Cancelled); a Checkpointer opened after a crash does the same with what it finds. The
    *backlog* (checkpoints the bucket is behind on: queued, uploading, being saved, or passed over
    while the bucket's newest is older) is at most ``max_pending_steps`` checkpoints (None:
    ``keep_remote``, or 2 when keeping everything; 0: no bound) and, when given,
    ``max_pending_bytes`` bytes (a single save always fits); the local directory holds at most
    ``keep_local`` + ``max_pending_steps`` committed checkpoints. ``policy`` says what a save does
    when it would exceed it, i.e. when the bucket is slower than the saves: "wait" (it blocks
    until an upload lands: training waits for the bucket, which stays within
    ``max_pending_steps`` checkpoints of the newest while uploads succeed), "skip" (it is saved
    locally but never uploaded: training never waits, the bucket falls behind by the skipped
    saves), or "error" (it raises strata.Throttled and nothing is saved: the caller decides).
    With several ranks use "wait". ``stats()`` gives the lag and the backlog; ``metrics_text()``
    the same as Prometheus metrics.
    ``max_queued``: saves staged in RAM ahead of the one persisting (default 1: a save first waits
    for the previous one to persist). ``policy="queue"`` (the old spelling) means "wait" with
    ``max_queued=2``. Thread-safe. Use as a context manager or call ``close()`` to wait for staged
    saves.

    ``cache_group`` (with ``peer_listen``, ``group_secret_file``, ``group_cache_dir``): loads from
    ``remote`` go through a cache group (see StreamingDataset): N nodes restoring one checkpoint
    fetch each block from the bucket once; keep every node's Checkpointer open until all loaded.

    ``staging_bytes``: the size in bytes of the tensors you will save (e.g.
    ``state_nbytes(state_dict)``). Saves copy the state into reused, already-mapped RAM; the
    first save would otherwise map that memory itself and pay its page faults inside the
    stall (on VMs several times the copy itself). Given the state's size, the writer is opened here and maps and
    faults the memory in on a background thread, so the FIRST save stages at memory speed too
    (room for the shard headers is added). None (default): nothing is reserved up front and
    only the first save is slower; later saves reuse its memory either way.
    ``stats()["cold_staging"]`` of a save tells whether it had to map fresh memory.
    """

    def __init__(self, dir, remote=None, rank=None, world_size=None, keep_local=0, keep_remote=0,  # noqa: A002
                 policy="wait", *, max_pending_steps=None, max_pending_bytes=None, max_queued=None, io_threads=4,
                 stage_threads=2, shard_bytes=256 << 20, shared_dir=True, fsync=True, staging_bytes=None,
                 attempt=None, cache_group=None, peer_listen=None, group_secret_file=None, group_cache_dir=None):
        if policy == "queue":
            policy, max_queued = "wait", 2 if max_queued is None else max_queued
        if policy not in ("wait", "skip", "error"):
            raise ValueError(f"policy must be 'wait', 'skip' or 'error', not {policy!r}")
        max_queued = _count("max_queued", 1 if max_queued is None else max_queued)
        if max_queued < 1:
            raise ValueError("max_queued must be at least 1")
        if staging_bytes is not None:
            try:
                if isinstance(staging_bytes, bool) or operator.index(staging_bytes) < 0:
                    raise TypeError
            except TypeError:
                raise ValueError(f"staging_bytes must be None or a byte count >= 0, not {staging_bytes!r}") from None
            staging_bytes = operator.index(staging_bytes)
        self.dir = os.path.abspath(os.fspath(dir))
        self.remote = to_url(remote) if remote is not None else None
        self.rank, self.world_size = rank_world(rank, world_size)
        self._attempt = _check_attempt(attempt)  # agreed on at the first save: loads are not collective
        os.makedirs(self.dir, exist_ok=True)
        self._writer_args = dict(
            dir=self.dir, remote_url=self.remote or "", rank=self.rank, world_size=self.world_size,
            shared_dir=bool(shared_dir), policy=policy, keep_local=int(keep_local), keep_remote=int(keep_remote),
            io_threads=int(io_threads), stage_threads=int(stage_threads), shard_bytes=int(shard_bytes),
            max_queued=max_queued, fsync=bool(fsync), staging_bytes=_with_header_room(staging_bytes),
            max_pending_steps=None if max_pending_steps is None else _count("max_pending_steps", max_pending_steps),
            max_pending_bytes=_count("max_pending_bytes", max_pending_bytes or 0))
        self._writer = None
        self._lock = threading.Lock()
        self._local = _strata._open_location(self.dir)
        # Loads from the remote through a cache group: N nodes restoring one checkpoint fetch each
        # block from the bucket once (the rest come from its owner).
        self._remote = _strata._open_location(
            self.remote, cache_group=cache_group or "", peer_listen=peer_listen or "",
            group_secret_file=os.fspath(group_secret_file or ""),
            cache_dir=os.fspath(group_cache_dir or "")) if self.remote else None
        if staging_bytes:
            self._get_writer()  # now, so the staging memory is faulted in before the first save

    def _get_writer(self):
        with self._lock:
            if self._writer is None:  # at the first save (or with staging_bytes); resumes uploads left behind
                self._writer_args["attempt"] = _resolve_attempt(self._attempt, self.world_size)
                self._writer = _strata._open_writer(**self._writer_args)
            return self._writer

    def save(self, step, state_dict, async_save=False, metadata=None):
        """Saves ``state_dict`` as checkpoint ``step``.

        Returns once the tensors' bytes are copied to RAM staging: with ``async_save`` a
        :class:`SaveFuture`; else after the local commit, the save's stats dict.
        ``metadata``: extra JSON-serialisable user metadata.
        """
        enc = _Encoder()  # each rank's names are its own: loads ask for this rank's part
        skeleton = enc.encode(state_dict)
        meta = json.dumps({"format": _FORMAT, "skeleton": skeleton, "user": metadata}, separators=(",", ":"))
        handle = self._get_writer().save(int(step), enc.specs, meta)  # staging copies with the GIL released
        del enc  # the tensors may change from here on
        future = SaveFuture(handle)
        return future if async_save else future.result()

    def flush(self):
        """Waits until every staged save is committed locally."""
        if self._writer is not None:
            self._writer.flush()

    def wait_for_uploads(self):
        if self._writer is not None:
            self._writer.wait_for_uploads()

    def stats(self):
        """The remote tier now (a dict; times in seconds): ``newest_local``/``newest_remote`` (the
        newest step committed locally / in the bucket, None if none), ``lag_steps`` (the difference
        while the bucket is behind: what resuming from the bucket would lose), ``lag_checkpoints``
        (local checkpoints newer than the bucket's newest), ``lag_s`` (since the oldest of those was
        committed), ``pending_steps``/``pending_bytes`` (the backlog), ``uploading`` (the step in
        flight, or None), and since this process opened the writer: ``uploaded``, ``superseded``,
        ``not_tiered`` ("skip"), ``rejected`` ("error"), ``failed``, ``backlog_wait_s`` ("wait").
        Known once the first save opened the writer (or ``staging_bytes`` did); zeros before."""
        with self._lock:
            return self._writer.tier_stats() if self._writer is not None else _strata._no_tier_stats()

    @staticmethod
    def metrics_text():
        """This process's checkpoint metrics (``strata_ckpt_*``, labelled with dir and rank) in the
        Prometheus text format: the figures of ``stats()`` as gauges and counters, plus the save
        stall histogram."""
        return _strata._ckpt_metrics_text()

    def wait_staging_ready(self):
        """Blocks until the memory requested with ``staging_bytes`` is mapped and faulted in
        (at once without it); raises the error if mapping it failed. Optional: a save made
        earlier simply waits for it."""
        if self._writer is not None:
            self._writer.wait_staging_ready()

    def close(self):
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _location(self, source):
        if source == "local":
            return self._local
        if source == "remote":
            if self._remote is None:
                raise ValueError("this Checkpointer has no remote")
            return self._remote
        raise ValueError(f"source must be 'local' or 'remote', not {source!r}")

    def list(self, source="local"):
        """Steps with a committed checkpoint (quick checks), ascending."""
        loc = self._location(source)
        out = []
        for step in loc.steps():
            try:
                loc.info(step)
                out.append(step)
            except _strata.Error:
                pass
        return out

    def latest(self, source="local", full=False, quick=False):
        """The newest step whose every byte verifies (whole-shard xxh3, per-tensor xxh3), or None.

        ``full``: also each shard's SHA-256 (slower). ``quick``: only commit markers, manifest
        hashes and shard sizes (misses flipped or zeroed bytes; e.g. before a ``load()``, which
        verifies every byte it reads anyway). On a remote source every byte is downloaded."""
        return self._location(source).latest("full" if full else "quick" if quick else "bytes")

    def verify(self, step, source="local", full=True):
        """A report dict: ok, committed, problems [{file, tensor, what}], text."""
        return self._location(source).verify(int(step), full)

    def metadata(self, step, source="local"):
        """The user metadata saved with ``step``."""
        return self._meta(self._location(source), int(step))[0].get("user")

    def _meta(self, loc, step):
        info = loc.info(step)
        ranks = info["ranks"]
        if self.rank >= len(ranks):
            raise _strata.NotFound(f"checkpoint {step} has {len(ranks)} ranks, not rank {self.rank}")
        rank = ranks[self.rank]
        try:
            meta = json.loads(rank["metadata"])
            if isinstance(meta, str):
                meta = json.loads(meta)
        except ValueError as e:
            raise _strata.Corruption(f"checkpoint {step}: unreadable metadata: {e}") from None
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise _strata.Corruption(f"checkpoint {step} was not saved by strata.checkpoint (no state_dict skeleton)")
        return meta, {name: (dtype, shape, size) for name, dtype, shape, size in rank["tensors"]}

    def _load_step(self, loc, step, map_location, verify):
        meta, stored = self._meta(loc, step)
        dec = _Decoder(stored)
        obj = dec.decode(meta["skeleton"])
        loc.load_into(step, dec.targets, verify=verify, rank=self.rank)  # GIL released
        return dec.finish(obj, map_location)

    def load(self, step=None, map_location=None, verify=True, source="auto"):
        """Loads checkpoint ``step`` (None: the newest one that loads and verifies).

        ``map_location``: a device (str or torch.device) to move tensors to. ``source``:
        "local", "remote" or "auto" (local first, then remote). Raises strata.NotFound when
        nothing loads, strata.Corruption when ``step`` was given and fails verification.
        """
        sources = ["local", "remote"] if source == "auto" else [source]
        if self._remote is None and source == "auto":
            sources = ["local"]
        if map_location is not None and not isinstance(map_location, (str, torch.device)):
            raise ValueError("map_location must be a device (str or torch.device)")
        if step is not None:
            last = None
            for s in sources:
                try:
                    return self._load_step(self._location(s), int(step), map_location, verify)
                except _strata.NotFound as e:
                    last = e
            raise last
        skipped = []
        for s in sources:
            loc = self._location(s)
            for st in sorted(loc.steps(), reverse=True):
                try:
                    return self._load_step(loc, st, map_location, verify)
                except (_strata.NotFound, _strata.Corruption) as e:
                    skipped.append(f"{s} step {st}: {e}")
        raise _strata.NotFound(f"no valid checkpoint in {self.dir}" + (f" or {self.remote}" if self.remote else "") +
                               ("; skipped: " + "; ".join(skipped) if skipped else ""))


def state_nbytes(state_dict):
    """Bytes of the tensors and numpy arrays in ``state_dict`` (nested dicts, lists and tuples;
    a tensor object appearing twice counts once): what a save stages, for ``staging_bytes``."""
    seen, total, todo = set(), 0, [state_dict]
    while todo:
        obj = todo.pop()
        if isinstance(obj, (torch.Tensor, np.ndarray)):
            if id(obj) not in seen:
                seen.add(id(obj))
                total += obj.numel() * obj.element_size() if isinstance(obj, torch.Tensor) else obj.nbytes
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            todo.extend(obj)
    return total


def _count(name, value):
    try:
        if isinstance(value, bool) or operator.index(value) < 0:
            raise TypeError
    except TypeError:
        raise ValueError(f"{name} must be a count >= 0, not {value!r}") from None
    return operator.index(value)


def _check_attempt(attempt):
    if attempt is None:
        return None
    attempt = str(attempt)
    if not attempt or len(attempt.encode("utf-8")) > 256:
        raise ValueError(f"attempt must be a non-empty string of at most 256 bytes, not {attempt!r}")
    return attempt


def _resolve_attempt(attempt, world_size):
    """The save attempt id every rank must share (see Checkpointer): given, or broadcast from rank 0.

    Collective with torch.distributed: every rank's first save (or open with staging_bytes) calls it."""
    if attempt is not None:
        return attempt
    if world_size == 1:
        return ""  # a single rank needs no agreement: the writer picks a random id
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        box = [uuid.uuid4().hex if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]
    raise ValueError("several ranks without torch.distributed initialised: pass attempt=, the same string on "
                     "every rank and a new one each time the job (re)starts")


def _with_header_room(staging_bytes):
    """The staging memory for a state of ``staging_bytes`` tensor bytes: shards also hold a
    safetensors header each and start 4 KiB aligned."""
    return 0 if not staging_bytes else staging_bytes + (4 << 20) + staging_bytes // 256


def save(dir, step, state_dict, **kwargs):  # noqa: A002
    """One-shot synchronous save (see Checkpointer)."""
    with Checkpointer(dir) as c:
        return c.save(step, state_dict, **kwargs)


def load(dir, step=None, **kwargs):  # noqa: A002
    """One-shot load of ``step`` or the newest valid checkpoint (see Checkpointer.load)."""
    return Checkpointer(dir).load(step, **kwargs)
