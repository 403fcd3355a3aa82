"""How a DataLoader worker hands its batches to the main process: through reused shared memory.

Fresh shared memory per batch (what torch's own workers do for every tensor, and what pickling
does for bytes and numpy arrays through a pipe) costs a page fault per 4 KiB page in the worker
and again in the main process, more than the copy itself. A worker instead keeps a few shared
buffers (_Ring), mapped once, copies a batch's large values into one of them and pickles only
where they are; the main process views them there. Two carriers:

- _PackedBatch: StreamingDataLoader's default collate, a batch collated in C++.
- _PackedTree: a user's collate_fn's result: its tensors, numpy arrays and lists of bytes,
  wherever they sit in dicts, lists and tuples.
"""

import collections
import os
import weakref

import numpy as np
import torch
from torch.utils.data._utils.collate import default_collate
from torch.utils.data._utils.pin_memory import pin_memory as _pin_memory

_RING_SLOTS = 6  # shared buffers a worker keeps: its batches in flight or still viewed in the main process
_SLOT_HEADER = 64  # byte 0: 1 while the main process has not copied the batch out yet
_RINGS = {}  # main process: (worker pid, slot) -> (generation, uint8 tensor), as a worker sent them
_PROCESS_RING = {}  # worker: pid -> its _Ring for _PackedTree (a forked child starts its own)


class _Ring:
    """A worker's shared-memory buffers for its batches, reused.

    The main process clears a buffer's busy byte once nothing views the batch in it any more; a
    worker never waits for one: with every buffer busy it sends a one-off buffer instead.
    """

    def __init__(self, slots=_RING_SLOTS):
        self.slots = [None] * slots  # (generation, tensor)
        self.generation = 0

    def acquire(self, nbytes):
        """(slot, generation, tensor, send): a buffer of at least nbytes, marked busy."""
        need = _SLOT_HEADER + nbytes
        free = [i for i, s in enumerate(self.slots) if s is None or s[1][0].item() == 0]
        fits = [i for i in free if self.slots[i] is not None and self.slots[i][1].numel() >= need]
        self.generation += 1
        if fits:
            slot = fits[0]
            gen, t = self.slots[slot]
            send = False
        else:
            size = max(need + need // 4, 1 << 20)  # headroom: batches of varying size reuse it
            t = torch.tensor((), dtype=torch.uint8).set_(torch.UntypedStorage._new_shared(size))
            slot, gen, send = (free[0] if free else -1), self.generation, True
            if slot >= 0:
                self.slots[slot] = (gen, t)
        t[0] = 1
        return slot, gen, t, send


def _process_ring():
    return _PROCESS_RING.setdefault(os.getpid(), _Ring())


_PRIMED = set()  # pids of the processes whose allocator prime_malloc adapted


def prime_malloc():
    """Lets this process's allocator keep the memory of a batch of bytes objects for the next.

    Each sample's bytes is its own malloc block (100 KiB ones here). Until a large block has once
    been freed, glibc returns the free top of its heap beyond 128 KiB to the kernel, so every
    batch's bytes fault their pages in anew (on this VM 1.7 ms against 0.3 ms a batch of 32);
    after such a free it keeps up to twice that block's size (its dynamic threshold), as it
    would after any large temporary. One 8 MiB block freed here makes it adapt at once."""
    if os.getpid() not in _PRIMED:
        _PRIMED.add(os.getpid())
        bytearray(8 << 20)  # made and freed at once


def _torch_dtype(dtype):
    """The torch dtype default_collate would make of numpy ``dtype``; None if it cannot."""
    try:
        return torch.from_numpy(np.empty(0, dtype=dtype)).dtype
    except (TypeError, ValueError):
        return None


def _release_slot(shared):
    shared[0] = 0  # the main process no longer views the batch: the worker may reuse its buffer


def _spans(sizes):
    """Offsets in a slot for values of these byte sizes (each 64-byte aligned), and the end."""
    spans, end = [], _SLOT_HEADER
    for n in sizes:
        spans.append(end)
        end += (n + 63) // 64 * 64
    return spans, end


class _InRing:
    """What both carriers share: the slot their values are in, and how the main process finds it."""

    __slots__ = ("slot", "buffer", "send")

    def _ring_state(self):
        return self.slot, self.buffer if self.send else None

    def _bind(self, slot, buffer):
        self.slot, self.send = slot, False
        if slot is not None:
            pid, index, gen = slot
            if buffer is not None and index >= 0:
                _RINGS[(pid, index)] = (gen, buffer)
            elif buffer is None:  # bound now: batches of one worker arrive in order
                known = _RINGS.get((pid, index))
                if known is None or known[0] != gen:
                    raise RuntimeError(f"strata: worker {pid}'s batch names shared buffer {index} generation {gen}, "
                                       f"which this process did not receive")
                buffer = known[1]
        self.buffer = buffer

    def _take_view(self):
        """A memoryview of the slot; the worker may reuse the slot once every view made from it is gone."""
        if self.buffer is None:
            return None
        shared = self.buffer.numpy()
        owner = shared.view()  # every view below keeps it alive; when it goes, the buffer is free
        weakref.finalize(owner, _release_slot, shared)
        self.buffer = None
        return memoryview(owner)


class _PackedBatch(_InRing):
    """A batch collated in C++, as StreamingDataLoader's default collate gives it.

    In a worker, raw fields and fixed-shape arrays are copied into one reused shared-memory
    buffer (_Ring) and only their offsets are pickled: the result queue carries neither a dict
    nor a bytes object per sample. ``unpack()`` in the main process makes what
    ``default_collate`` of the sample dicts would: ``__key__`` a list of str, ``__index__`` an
    int64 tensor, raw fields a list of bytes, arrays stacked tensors, JSON/Example values
    collated.
    """

    __slots__ = ("columns", "count")

    def __init__(self, columns, count, slot=None, buffer=None, send=False):
        self.columns = columns  # [(name, kind, value)], kind: "value" | "index" | "raw" | "array"
        self.count = count
        self.slot = slot  # (worker pid, slot, generation) when the columns are in a shared buffer
        self.buffer = buffer  # uint8 tensor (shared) or None: raw/array values are local arrays
        self.send = send  # pickle the buffer itself (first use of a slot, or a one-off)

    @classmethod
    def ready(cls, batch, count):
        return cls([(None, "value", batch)], count)

    @classmethod
    def of(cls, batch, ring):
        count = len(batch["__key__"])
        cols = [("__key__", "value", batch["__key__"]), ("__index__", "index", batch["__index__"])]
        big = []  # (position in cols, array or list of rows, bytes)
        for name, col in batch.items():
            if name in ("__key__", "__index__", "__epoch__", "__position__"):
                continue
            if isinstance(col, tuple) and len(col) == 3 and col[0] == "rows":  # views of the shards' bytes
                offsets = col[2].tolist()
                rows = col[1] if ring is not None else np.frombuffer(b"".join(col[1]), np.uint8)
                big.append((len(cols), rows, offsets[-1]))
                cols.append((name, "raw", (rows, offsets)))
            elif isinstance(col, tuple) and len(col) == 3 and col[0] == "raw":
                big.append((len(cols), col[1], col[1].nbytes))
                cols.append((name, "raw", (col[1], col[2].tolist())))
            elif isinstance(col, np.ndarray) and _torch_dtype(col.dtype) is not None:
                col = np.ascontiguousarray(col)
                big.append((len(cols), col, col.nbytes))
                cols.append((name, "array", (col, col.dtype.str, col.shape)))
            else:  # JSON / Example values, ragged arrays: as default_collate does
                cols.append((name, "value", default_collate(list(col))))
        if ring is None or not big:
            return cls(cols, count)
        spans, end = _spans([nbytes for _, _, nbytes in big])
        slot, gen, buffer, send = ring.acquire(end - _SLOT_HEADER)
        view = buffer.numpy()
        for (pos, value, nbytes), start in zip(big, spans):
            name, kind, described = cols[pos]
            if type(value) is list:  # each row straight from its shard's buffer: the batch is copied once
                for row, offset in zip(value, described[1]):
                    view[start + offset:start + offset + len(row)] = np.frombuffer(row, np.uint8)
            else:
                view[start:start + nbytes] = value.reshape(-1).view(np.uint8)
            cols[pos] = (name, kind, ((start, nbytes),) + described[1:])
        return cls(cols, count, (os.getpid(), slot, gen), buffer, send)

    def __getstate__(self):
        return self.columns, self.count, *self._ring_state()

    def __setstate__(self, state):
        self.columns, self.count, slot, buffer = state
        self._bind(slot, buffer)

    def unpack(self, pin=None):
        """The batch dict. Raw values and arrays view the shared buffer (no copy); the worker may
        reuse it once all of them are gone. ``pin``: pin_memory's device (pins tensors only)."""
        if len(self.columns) == 1 and self.columns[0][0] is None:
            value = self.columns[0][2]
            return value if pin is None else _pin_memory(value, *pin)
        view = self._take_view()
        out = {}
        for name, kind, value in self.columns:
            if kind == "index":
                value = torch.from_numpy(value.astype(np.int64))
            elif kind == "raw":
                data, offsets = value
                if view is not None:
                    data = view[data[0]:data[0] + data[1]].toreadonly()
                else:
                    data = memoryview(data)  # in-process: a view of strata's (read-only) batch buffer
                value = [data[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
                out[name] = value
                continue
            elif kind == "array":
                data, dtype, shape = value
                if view is not None and data[1]:
                    value = torch.frombuffer(view[data[0]:data[0] + data[1]], dtype=_torch_dtype(dtype)).view(shape)
                elif view is not None:
                    value = torch.empty(shape, dtype=_torch_dtype(dtype))
                else:
                    value = torch.from_numpy(np.array(data))  # a copy: owned, writable
            if pin is not None:
                value = _pin_memory(value, *pin)
            out[name] = value
        return out

    def pin_memory(self, device=None):  # the pin_memory thread (pin_memory=True): tensors only
        return _CountedBatch(self.unpack(pin=(device,)), self.count)


# A collated batch and the number of samples collated into it, counted where the batch is made
# (the worker, or the main process without workers). A namedtuple so that pin_memory and the
# worker result queue pass it through unchanged apart from pinning the batch itself.
_CountedBatch = collections.namedtuple("_CountedBatch", ["batch", "count"])

# Where a _PackedTree's value went: kind "tensor" (meta: dtype, shape), "array" (dtype, shape)
# or "bytes" (a list of bytes; meta: their offsets), at `start` in the slot, `nbytes` long.
_Leaf = collections.namedtuple("_Leaf", ["kind", "start", "nbytes", "meta"])


def _ring_tensor(x):
    return (x.device.type == "cpu" and x.layout == torch.strided and not x.requires_grad and not x.is_quantized
            and not x.is_conj() and not x.is_neg())


_DESCEND = object()  # a _map_tree callback's answer for a container: map its items


def _is_container(x):
    t = type(x)
    return t is dict or t is list or t is tuple or (isinstance(x, tuple) and hasattr(x, "_fields") and t is not _Leaf)


_PLAIN = frozenset((str, int, float, bool, type(None)))


def _plain_sequence(x):
    """A list or tuple of plain values only (a batch's keys, labels): nothing in it goes to a slot.
    Kept whole rather than mapped item by item (a batch's 32 keys cost as much as the rest of the
    tree, in the worker and again in the main process)."""
    t = type(x)
    return (t is list or t is tuple) and all(type(e) in _PLAIN for e in x)


def _map_tree(x, fn):
    """``x`` with ``fn``'s answer for each value, descending into dicts, lists, tuples and
    namedtuples where ``fn`` answers _DESCEND. (Module-level recursion: a closure calling itself
    would be a reference cycle, holding whatever it views until the garbage collector ran.)"""
    y = fn(x)
    if y is not _DESCEND:
        return y
    t = type(x)
    if t is dict:
        return {k: _map_tree(v, fn) for k, v in x.items()}
    if t is list:
        return [_map_tree(v, fn) for v in x]
    if t is tuple:
        return tuple(_map_tree(v, fn) for v in x)
    return t(*(_map_tree(v, fn) for v in x))  # a namedtuple


def _collect(x, found):
    """What goes to the slot: a _Leaf (numbered in ``found``) for a tensor, array or list of bytes."""
    t = type(x)
    if t is torch.Tensor and _ring_tensor(x):
        x = x.detach().contiguous()
        found.append(("tensor", x, x.numel() * x.element_size(), (x.dtype, tuple(x.shape))))
    elif t is np.ndarray and not x.dtype.hasobject:
        x = np.ascontiguousarray(x)
        found.append(("array", x, x.nbytes, (x.dtype, x.shape)))
    elif t is list and x and all(type(e) is bytes for e in x):
        offsets = np.cumsum([0] + [len(e) for e in x]).tolist()
        found.append(("bytes", x, offsets[-1], offsets))
    else:
        return _DESCEND if _is_container(x) and not _plain_sequence(x) else x
    return _Leaf(found[-1][0], len(found) - 1, 0, None)  # placed once the slot is known


def _leaf_value(leaf, view):
    data = view[leaf.start:leaf.start + leaf.nbytes]
    if leaf.kind == "tensor":
        dtype, shape = leaf.meta
        if not leaf.nbytes:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(data, dtype=torch.uint8).view(dtype).view(shape)
    if leaf.kind == "array":
        dtype, shape = leaf.meta
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    offsets = leaf.meta
    return [bytes(data[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]


def _leaf_or_descend(x, value):
    """For _map_tree: ``value(x)`` for a _Leaf, _DESCEND for a container, else ``x``."""
    if type(x) is _Leaf:
        return value(x)
    return _DESCEND if _is_container(x) and not _plain_sequence(x) else x


class _PackedTree(_InRing):
    """A collate_fn's result from a worker, its tensors, numpy arrays and lists of bytes in one
    reused shared buffer: pickled is the structure with those values replaced by where they are.
    ``unpack()`` in the main process gives the same structure, its tensors and arrays viewing the
    buffer (writable, no copy) and its bytes copied out, as unpickling would give them."""

    __slots__ = ("tree",)

    @classmethod
    def of(cls, batch, ring):
        """``batch`` itself when nothing in it goes to a slot, else its _PackedTree."""
        found = []
        tree = _map_tree(batch, lambda x: _collect(x, found))
        if not found:
            return batch
        spans, end = _spans([nbytes for _, _, nbytes, _ in found])
        slot, gen, buffer, send = ring.acquire(end - _SLOT_HEADER)
        view = buffer.numpy()
        leaves = []
        for (kind, value, nbytes, meta), start in zip(found, spans):
            if kind == "tensor" and nbytes:
                buffer[start:start + nbytes].copy_(value.reshape(-1).view(torch.uint8))
            elif kind == "array" and nbytes:
                view[start:start + nbytes] = value.reshape(-1).view(np.uint8)
            elif kind == "bytes":
                for e, offset in zip(value, meta):
                    view[start + offset:start + offset + len(e)] = np.frombuffer(e, np.uint8)
            leaves.append(_Leaf(kind, start, nbytes, meta))
        out = cls()
        out.tree = _map_tree(tree, lambda x: _leaf_or_descend(x, lambda leaf: leaves[leaf.start]))
        out.slot, out.buffer, out.send = (os.getpid(), slot, gen), buffer, send
        return out

    def __getstate__(self):
        return self.tree, *self._ring_state()

    def __setstate__(self, state):
        self.tree, slot, buffer = state
        self._bind(slot, buffer)

    def unpack(self):
        view = self._take_view()
        return _map_tree(self.tree, lambda x: _leaf_or_descend(x, lambda leaf: _leaf_value(leaf, view)))

    def pin_memory(self, device=None):  # the pin_memory thread (pin_memory=True)
        return _pin_memory(self.unpack(), device)


def _raw_as_bytes(batch):
    """The packed batch's raw fields (lists of memoryviews of a shared buffer) as bytes, as
    ``default_collate`` of the sample dicts gives them; dropping the views frees the buffer."""
    for name, value in batch.items():
        if type(value) is list and value and type(value[0]) is memoryview:
            batch[name] = [bytes(v) for v in value]
    return batch
