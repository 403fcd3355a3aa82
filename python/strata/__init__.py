"""strata: a data layer that keeps GPUs fed.

Object stores (``strata.open``), packing (``strata.pack``), a streaming
PyTorch dataset (``strata.StreamingDataset``, ``strata.StreamingDataLoader``)
and async checkpoints (``strata.checkpoint``), over the C++ core in
``strata._strata``. Build for and run with Debian's ``/usr/bin/python3``.
"""

from . import _strata
from ._strata import (  # noqa: F401  (re-exported)
    AlreadyExists,
    Buffer,
    Cancelled,
    Corruption,
    DeadlineExceeded,
    Error,
    InternalError,
    InvalidArgument,
    IOFailure,
    NoSpace,
    NotFound,
    NotModified,
    NotSupported,
    OutOfRange,
    PermissionDenied,
    PreconditionFailed,
    Store,
    Throttled,
    Unauthenticated,
    Unavailable,
)
from .store import ObjectReader, open, pack, to_url  # noqa: F401,A004

__all__ = [
    "Error", "NotFound", "InvalidArgument", "OutOfRange", "Corruption", "IOFailure", "NoSpace",
    "PreconditionFailed", "NotModified", "Unavailable", "Throttled", "DeadlineExceeded", "NotSupported",
    "PermissionDenied", "Unauthenticated", "AlreadyExists", "Cancelled", "InternalError",
    "Buffer", "Store", "ObjectReader", "open", "pack", "to_url",
    "StreamingDataset", "StreamingDataLoader", "checkpoint",
]

_LAZY = {"StreamingDataset": "streaming", "StreamingDataLoader": "streaming"}


def __getattr__(name):
    # torch is imported only when the loader or checkpoints are used.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module("." + _LAZY[name], __name__), name)
    if name == "checkpoint":
        import importlib

        return importlib.import_module(".checkpoint", __name__)
    raise AttributeError(f"module 'strata' has no attribute {name!r}")
