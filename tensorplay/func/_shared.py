"""Chunk results written into the caller's memory by worker *processes* on the same machine.

A chunk run by a thread of the calling process writes its results straight into the map's
outputs. A worker process (a `ProcessPoolExecutor`, a dask worker on this machine) cannot, unless
the outputs live in memory both can map: `SharedOutputs` puts the map's batched outputs in one
file of ``/dev/shm`` (a tmpfs: memory, not disk), mapped by the caller, and hands each chunk a
`SharedRef` -- the file's path, a random nonce and the layout, a few hundred bytes pickled.
A worker that can open the file and finds the nonce in its header maps it and has the compiled
code write its slice there; any other worker (another machine, another container, no
``/dev/shm``) gets None from `SharedRef.attach` and sends its results back as before.

The file is unlinked as soon as the map is over (`SharedOutputs.close`), whatever the outcome:
the caller's arrays keep the mapping, and with it the memory, until they are freed; nothing is
left behind in ``/dev/shm``. The file is sparse: its pages are allocated (and zeroed by the
kernel) by the worker that first writes them, in parallel, not by the caller up front. So
that a write cannot find the tmpfs full (a SIGBUS), `SharedOutputs.create` returns None (plain
arrays, results sent back) unless the tmpfs has room for the outputs and 64 MB more.
"""
from __future__ import annotations

import mmap
import os
import secrets

import numpy as np

__all__ = ["SharedOutputs", "SharedRef", "Attached"]

_DIR = "/dev/shm"
_HEADER = 64  # the nonce, then padding
_ALIGN = 4096  # each array starts on a page
_SLACK = 64 << 20  # room left for others in /dev/shm


class SharedRef:
    """What a chunk carries to find the map's shared outputs: path, nonce and layout.

    >>> import pickle, numpy as np
    >>> shared = SharedOutputs.create([((2, 3), np.dtype(np.float32)), None])
    >>> ref = pickle.loads(pickle.dumps(shared.ref))   # as a worker process receives it
    >>> attached = ref.attach()
    >>> attached.arrays[0][1] = 7.0; attached.arrays[1] is None
    True
    >>> attached.close(); shared.arrays[0][1].tolist()
    [7.0, 7.0, 7.0]
    >>> shared.close()
    """

    __slots__ = ("path", "nonce", "size", "layout")

    def __init__(self, path: str, nonce: bytes, size: int, layout: list):
        self.path, self.nonce, self.size, self.layout = path, nonce, size, layout

    def __getstate__(self):
        return (self.path, self.nonce, self.size, self.layout)

    def __setstate__(self, state):
        self.path, self.nonce, self.size, self.layout = state

    def attach(self) -> "Attached | None":
        """The outputs mapped in this process, or None when this process cannot see them."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError:  # another machine or container, or the map is already over
            return None
        try:
            if os.fstat(fd).st_size != self.size:
                return None
            mm = mmap.mmap(fd, self.size)
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        if mm[:len(self.nonce)] != self.nonce:  # a file of the same name that is not this map's
            mm.close()
            return None
        return Attached(mm, _views(mm, self.layout))

    def __repr__(self) -> str:
        return f"<SharedRef {self.path}: {self.size} bytes, {sum(e is not None for e in self.layout)} arrays>"


class Attached:
    """A worker's mapping of the shared outputs; `close` unmaps it (after the views are dropped)."""

    __slots__ = ("mm", "arrays")

    def __init__(self, mm: mmap.mmap, arrays: list):
        self.mm, self.arrays = mm, arrays

    def close(self) -> None:
        self.arrays = None
        try:
            self.mm.close()
        except BufferError:  # a view is still alive somewhere: the mapping goes when it does
            pass


class SharedOutputs:
    """The map's batched outputs in one ``/dev/shm`` file mapped by the caller (see the module).

    `types` has one entry per output: ``(shape, dtype)`` of the whole map's output, or None for
    one that is not shared (an unbatched output); `arrays` matches it. `create` returns None
    where shared memory is not available or there is no room for it.
    """

    __slots__ = ("arrays", "ref", "_path")

    def __init__(self, arrays: list, ref: SharedRef):
        self.arrays, self.ref, self._path = arrays, ref, ref.path

    @classmethod
    def create(cls, types: list) -> "SharedOutputs | None":
        layout, offset = [], _HEADER
        for t in types:
            if t is None:
                layout.append(None)
                continue
            shape, dtype = tuple(t[0]), np.dtype(t[1])
            offset = -(-offset // _ALIGN) * _ALIGN
            layout.append((offset, shape, dtype.str))
            offset += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        size = max(offset, _HEADER + 1)
        if not os.path.isdir(_DIR):
            return None
        path = os.path.join(_DIR, f"tensorplay-{os.getpid()}-{secrets.token_hex(8)}")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            return None
        try:
            try:
                free = os.statvfs(_DIR)
                if free.f_bavail * free.f_frsize < size + _SLACK:
                    raise OSError(f"{_DIR} has no room for {size} bytes")
                os.ftruncate(fd, size)  # sparse: the pages are allocated by whoever writes them first
                mm = mmap.mmap(fd, size)
            finally:
                os.close(fd)
        except (OSError, ValueError):
            os.unlink(path)
            return None
        nonce = secrets.token_bytes(16)
        mm[:len(nonce)] = nonce
        return cls(_views(mm, layout), SharedRef(path, nonce, size, layout))

    def close(self) -> None:
        """Remove the file (idempotent): workers can no longer attach; the arrays stay valid."""
        if self._path is not None:
            try:
                os.unlink(self._path)
            except FileNotFoundError:
                pass
            self._path = None


def _views(mm: mmap.mmap, layout: list) -> list:
    return [None if e is None else np.ndarray(e[1], np.dtype(e[2]), buffer=mm, offset=e[0]) for e in layout]
