"""Object-store helpers: ``strata.open(url)``, ``strata.pack``, file-like reads."""

import io
import os

from . import _strata


def to_url(path_or_url):
    """A store URL for ``path_or_url``: URLs pass through, local paths become file:// URLs."""
    s = os.fspath(path_or_url)
    if "://" in s:
        return s
    return "file://" + os.path.abspath(s)


def open(url, *, cache_dir=None, cache_limit=10 << 30, ram_cache=None, cache_encryption_key_file=None):  # noqa: A001
    """Opens the store ``url`` names (``file:///dir``, a plain path, ``mem://name``, ``s3://bucket/prefix?...``).

    With ``cache_dir`` (or ``ram_cache`` bytes) reads go through strata's verified block cache:
    RAM (``ram_cache``, default 256 MiB when a cache is used) then ``cache_dir`` holding at most
    ``cache_limit`` bytes. Returns a :class:`strata.Store` with ``get(key, start=None, end=None)``
    (a read-only memoryview, no copy), ``put(key, data)``, ``head(key)``, ``delete(key)``,
    ``copy(src, dst)`` and ``list(prefix="", delimiter="")`` iterating ``(key, size, etag)``.
    ``cache_encryption_key_file``: the path of a 32-byte key (mode 0600) encrypting the blocks in
    ``cache_dir`` at rest (AES-256-GCM, the CLI's ``--cache-encryption-key-file``); the path is
    kept, never the key's bytes.
    """
    if cache_encryption_key_file and cache_dir is None:
        raise ValueError("cache_encryption_key_file encrypts cache_dir: give cache_dir too")
    if ram_cache is None:
        ram_cache = (256 << 20) if cache_dir is not None else 0
    if cache_dir is not None:
        cache_dir = os.fspath(cache_dir)
    return _strata._open_store(to_url(url), cache_dir, int(cache_limit), int(ram_cache),
                               os.fspath(cache_encryption_key_file or ""))


def pack(src, dst, *, format="tar", shard_size=64 << 20, parallel=4, zstd=False,  # noqa: A002
         imagefolder="auto", shard_prefix="shard-"):
    """Packs the files under ``src`` into shards under ``dst`` (like ``strata pack``).

    ``format``: "tar" (WebDataset), "tfrecord" or "indexed". Returns a dict with
    samples, shards, fields, classes, input/output byte counts and seconds.
    """
    return _strata._pack(to_url(src), to_url(dst), format=format, shard_size=int(shard_size),
                         parallel=int(parallel), zstd=bool(zstd), imagefolder=imagefolder,
                         shard_prefix=shard_prefix)


class ObjectReader(io.RawIOBase):
    """A read-only, seekable file over one object (ranged GETs), e.g. for tarfile or PIL.

    Wrap it in ``io.BufferedReader(reader, buffer_size)`` to batch small reads.
    """

    def __init__(self, store, key):
        super().__init__()
        self._store = store
        self._key = key
        self._size = store.head(key)["size"]
        self._pos = 0

    @property
    def name(self):
        return self._key

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        pos = base + offset
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def readinto(self, b):
        if self._pos >= self._size:
            return 0
        end = min(self._size, self._pos + len(b))
        data = self._store.get(self._key, self._pos, end)
        n = len(data)
        memoryview(b).cast("B")[:n] = data
        self._pos += n
        return n

    def readall(self):
        if self._pos >= self._size:
            return b""
        data = bytes(self._store.get(self._key, self._pos, self._size))
        self._pos += len(data)
        return data
