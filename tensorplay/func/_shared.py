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

Large output files are reused across maps (`SharedPool`, as `Recycled` does for threads): a map
whose results are dropped before the next map gives its file, pages already allocated, to the
next map of the same output sizes, which writes a fresh nonce into it; a worker process keeps
its mapping of such a file (`SharedRef.attach`), so a map called in a loop costs neither the
workers' tmpfs page allocation nor their page faults. The fence: a file is reused only after a
map in which every chunk finished (a failed map's file is unlinked at once, as a small one
is), and only once every array viewing it is gone; a chunk attaches only to the file whose
header holds its own map's nonce. Pooled files stay in ``/dev/shm`` while they are free (at
most `SharedPool.MAX_FREE` of them) and are unlinked when dropped or at exit; files of a
process that died are removed by the next process that creates one.

`Recycled` is the memory of a map's outputs when the chunks run in this process (threads, or
here in order): one block per map, reused by a later map once every array made from it is gone.
A block the kernel hands out fresh costs a page fault and the zeroing of every page on first
touch, which the chunks' threads pay in the middle of their work and, being memory-bound, do not
speed up with more threads; a map called in a loop whose results are dropped each time (per-
sample gradients in a training loop) gets the same warm block back instead. Only blocks of
`Recycled.MIN_BYTES` to `Recycled.MAX_BLOCK_BYTES` are kept, at most `Recycled.MAX_FREE_BLOCKS` unused.
"""
from __future__ import annotations

import atexit
import mmap
import os
import secrets
import threading
import weakref
from collections import deque

import numpy as np

__all__ = ["SharedOutputs", "SharedRef", "Attached", "SharedPool", "SHARED_POOL", "Recycled", "RECYCLED"]

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
        """The outputs mapped in this process, or None when this process cannot see them.

        A mapping of a file of `SharedPool.MIN_BYTES` or more is kept for the next chunk that
        attaches to the same file (pooled files are reused by later maps: its pages stay mapped
        here), up to `_KEPT_MAPPINGS`; a kept mapping whose file was removed is dropped."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError:  # another machine or container, or the map is already over
            return None
        keep = self.size >= SharedPool.MIN_BYTES
        if _kept:
            _sweep_kept()
        try:
            st = os.fstat(fd)
            if st.st_size != self.size:
                return None
            ident = (self.path, st.st_dev, st.st_ino, self.size)
            mm = _kept_mapping(ident) if keep else None
            if mm is None:
                mm = mmap.mmap(fd, self.size)
                if keep:
                    _keep_mapping(ident, mm, os.dup(fd))
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        if mm[:len(self.nonce)] != self.nonce:  # a file of the same name (or a reused one) not this map's
            if not keep:
                mm.close()
            return None
        return Attached(None if keep else mm, _views(mm, self.layout))

    def __repr__(self) -> str:
        return f"<SharedRef {self.path}: {self.size} bytes, {sum(e is not None for e in self.layout)} arrays>"


class Attached:
    """A worker's mapping of the shared outputs; `close` unmaps it (after the views are dropped),
    unless it is a kept mapping (`mm` None: see `SharedRef.attach`)."""

    __slots__ = ("mm", "arrays")

    def __init__(self, mm: mmap.mmap | None, arrays: list):
        self.mm, self.arrays = mm, arrays

    def close(self) -> None:
        self.arrays = None
        if self.mm is None:
            return
        try:
            self.mm.close()
        except BufferError:  # a view is still alive somewhere: the mapping goes when it does
            pass


_KEPT_MAPPINGS = 2  # per process: a map in a loop needs one (two while the next map's file is new)
_kept: dict = {}  # (path, dev, inode, size) -> (mmap, fd), oldest first
_kept_lock = threading.Lock()


def _sweep_kept() -> None:
    """Drop the kept mappings whose file was removed (its memory goes with the mapping)."""
    with _kept_lock:
        for key, (mm, fd) in list(_kept.items()):
            try:
                gone = os.fstat(fd).st_nlink == 0
            except OSError:
                gone = True
            if gone:
                _drop_mapping(key)


def _kept_mapping(ident: tuple):
    """The kept mapping of the file `ident`, if any."""
    with _kept_lock:
        made = _kept.get(ident)
        return None if made is None else made[0]


def _keep_mapping(ident: tuple, mm: mmap.mmap, fd: int) -> None:
    with _kept_lock:
        if ident in _kept:
            _drop_mapping(ident)
        _kept[ident] = (mm, fd)
        while len(_kept) > _KEPT_MAPPINGS:
            _drop_mapping(next(iter(_kept)))


def _drop_mapping(key) -> None:
    mm, fd = _kept.pop(key)
    os.close(fd)
    try:
        mm.close()
    except BufferError:  # a chunk's views are still alive: the mapping goes when they do
        pass


class SharedOutputs:
    """The map's batched outputs in one ``/dev/shm`` file mapped by the caller (see the module).

    `types` has one entry per output: ``(shape, dtype)`` of the whole map's output, or None for
    one that is not shared (an unbatched output); `arrays` matches it. `create` returns None
    where shared memory is not available or there is no room for it.
    """

    __slots__ = ("arrays", "ref", "base", "pooled", "_mm", "_path")

    def __init__(self, arrays: list | None, ref: SharedRef, mm: mmap.mmap):
        """`arrays` None: views of `mm` made here, through one `base` (a memoryview) per map, which
        lives as long as any of them (`SharedPool` watches it)."""
        if arrays is None:
            block = np.frombuffer(memoryview(mm), np.uint8)
            arrays = _views(block, ref.layout)
            self.base = block.base
        else:
            self.base = None
        self.arrays, self.ref, self._path, self._mm = arrays, ref, ref.path, mm
        self.pooled = None  # (pool, mmap, layout, size) when the file is `SharedPool`'s

    @classmethod
    def create(cls, types: list) -> "SharedOutputs | None":
        layout, offset = _layout(types, _HEADER)
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
        return cls(None, SharedRef(path, nonce, size, layout), mm)

    def close(self) -> None:
        """Remove the file (idempotent): workers can no longer attach; the arrays stay valid."""
        if self._path is not None:
            try:
                os.unlink(self._path)
            except FileNotFoundError:
                pass
            self._path = None


class SharedPool:
    """Shared output files of `MIN_BYTES` or more, reused across maps (see the module).

    `take(types)` is `SharedOutputs.create` for a map: a free file of exactly that layout with
    a fresh nonce when there is one. `finish(shared, ok)` ends the map: with `ok` (every chunk
    finished) a pooled file goes back to the free list once every array viewing it is gone;
    otherwise, or for a small file, it is unlinked now (`SharedOutputs.close`).

    >>> pool = SharedPool()
    >>> shared = pool.take([((1024, 1024), np.float32)]); path = shared.ref.path
    >>> pool.finish(shared, ok=True); del shared          # the map's results are dropped
    >>> again = pool.take([((1024, 1024), np.float32)])
    >>> again.ref.path == path, again.ref.nonce != b""
    (True, True)
    >>> pool.finish(again, ok=False); pool.clear()
    """

    MIN_BYTES = 4 << 20  # below this a fresh file is cheap; as `Recycled.MIN_BYTES`
    MAX_FREE = 2

    def __init__(self):
        self._free: deque = deque()  # (layout, size, mmap, path) of files not in use, oldest first
        self._live: set = set()  # paths of every pooled file (in use or free): unlinked at exit
        self._lock = threading.Lock()
        self._swept = False
        self._pid = os.getpid()
        self.hits = self.misses = 0

    def take(self, types: list) -> "SharedOutputs | None":
        layout, offset = _layout(types, _HEADER)
        size = max(offset, _HEADER + 1)
        if size < self.MIN_BYTES:
            return SharedOutputs.create(types)
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the files are its parent's
                self._free, self._live, self._pid = deque(), set(), os.getpid()
            if not self._swept:
                self._swept = True
                _sweep_dead()
            for _ in range(len(self._free)):
                entry = self._free.popleft()
                if entry[0] == layout and entry[1] == size:
                    self.hits += 1
                    return self._use(entry[2], entry[3], layout, size)
                self._free.append(entry)
            self.misses += 1
        shared = SharedOutputs.create(types)
        if shared is None:
            return None
        with self._lock:
            self._live.add(shared.ref.path)
        shared.pooled = (self, shared._mm, layout, size)
        return shared

    def _use(self, mm: mmap.mmap, path: str, layout: list, size: int) -> "SharedOutputs":
        nonce = secrets.token_bytes(16)
        mm[:len(nonce)] = nonce  # a chunk of an earlier map (there is none running) would not attach
        shared = SharedOutputs(None, SharedRef(path, nonce, size, layout), mm)
        shared.pooled = (self, mm, layout, size)
        return shared

    def finish(self, shared: "SharedOutputs", ok: bool) -> None:
        """The map of `shared` is over (`ok`: every chunk finished)."""
        pooled = shared.pooled
        if pooled is None or not ok:
            if pooled is not None:
                with self._lock:
                    self._live.discard(shared.ref.path)
            shared.close()
            return
        # the file is free again when the last array of this map is gone (then nothing writes it)
        weakref.finalize(shared.base, self._give, pooled[1], shared.ref.path, pooled[2], pooled[3]).atexit = False

    def _give(self, mm, path: str, layout: list, size: int) -> None:
        # a finalizer: may run in any thread at any allocation; takes no lock (as `Recycled._give`)
        if self._pid != os.getpid():  # in a forked child: the file is its parent's
            return
        self._free.append((layout, size, mm, path))
        self._evict(self.MAX_FREE)

    def clear(self) -> None:
        """Unlink every free file (a file in use goes back to the free list when its arrays are gone)."""
        self._evict(0)

    def _evict(self, keep: int) -> None:
        """Unlink the oldest free files until at most `keep` are left."""
        while len(self._free) > keep:
            try:
                path = self._free.popleft()[3]
            except IndexError:  # another thread's finalizer took it
                break
            self._live.discard(path)
            _unlink(path)

    def _at_exit(self) -> None:
        if self._pid != os.getpid():  # a forked child exiting: the files are its parent's
            return
        for path in list(self._live):
            _unlink(path)
        self._live.clear()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _sweep_dead() -> None:
    """Remove the output files of processes that are gone (killed while their files were pooled)."""
    try:
        names = os.listdir(_DIR)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != "tensorplay" or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            _unlink(os.path.join(_DIR, name))
        except OSError:  # alive, another user's
            pass


SHARED_POOL = SharedPool()
atexit.register(SHARED_POOL._at_exit)


def _views(buffer, layout: list) -> list:
    return [None if e is None else np.ndarray(e[1], np.dtype(e[2]), buffer=buffer, offset=e[0]) for e in layout]


def _layout(types: list, offset: int = 0, align: int = _ALIGN) -> tuple[list, int]:
    """``[(offset, shape, dtype str) | None, ...]`` of `types` packed from `offset`, each array
    aligned to `align` bytes, and the end offset."""
    layout = []
    for t in types:
        if t is None:
            layout.append(None)
            continue
        shape, dtype = tuple(t[0]), np.dtype(t[1])
        offset = -(-offset // align) * align
        layout.append((offset, shape, dtype.str))
        offset += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return layout, offset


class Recycled:
    """Output blocks of in-process maps, reused once the arrays viewing them are gone (see the module).

    `arrays(types)` returns one array per entry of `types` (``(shape, dtype)``, or None for no
    array), views of one block, each 64-byte aligned: a free block of at least the size (and less
    than twice it) when there is one, else a new one. The views' base is a `memoryview` of the
    block, which lives as long as any array made from it; when it dies a finalizer returns the
    block to the free list. The finalizer may run in any thread, at any allocation, so it takes no
    lock: it appends to a deque and drops the oldest free blocks beyond `MAX_FREE_BLOCKS`. Blocks
    under `MIN_BYTES` or over `MAX_BLOCK_BYTES` are plain arrays, never kept, so at most
    ``MAX_FREE_BLOCKS * MAX_BLOCK_BYTES`` bytes lie unused.

    >>> pool = Recycled()
    >>> a, b = pool.arrays([((1024, 1024), np.float32), ((3,), np.int64)])
    >>> address = a.ctypes.data
    >>> del a, b                                     # the map's results are dropped
    >>> c, = pool.arrays([((1024, 1024), np.float32)])
    >>> c.ctypes.data == address                     # the same memory, already paged in
    True
    """

    MIN_BYTES = 4 << 20  # below this a fresh allocation is cheap (and glibc reuses its own heap)
    MAX_BLOCK_BYTES = 512 << 20
    MAX_FREE_BLOCKS = 2  # a map called in a loop needs one (the previous result, dropped)

    def __init__(self):
        self._free: deque = deque()  # blocks (uint8 arrays) not in use, oldest first
        self._lock = threading.Lock()  # for `arrays` only (never taken by the finalizer)
        self._layouts: dict = {}  # types -> (layout, size): a map called in a loop lays out the same outputs
        self.hits = self.misses = 0

    def arrays(self, types: list) -> list:
        key = tuple(types)
        made = self._layouts.get(key)
        if made is None:
            if len(self._layouts) > 64:
                self._layouts.clear()
            made = self._layouts[key] = _layout(types, align=64)
        layout, size = made
        if not self.MIN_BYTES <= size <= self.MAX_BLOCK_BYTES:
            return [None if t is None else np.empty(t[0], t[1]) for t in types]
        block = self._take(size + 64)
        base = np.frombuffer(memoryview(block), np.uint8, size, -block.ctypes.data % 64)  # its base: a memoryview
        weakref.finalize(base.base, self._give, block).atexit = False
        return _views(base, layout)

    def _take(self, size: int) -> np.ndarray:
        with self._lock:
            for _ in range(len(self._free)):
                try:
                    block = self._free.popleft()
                except IndexError:  # taken meanwhile by `_give` trimming
                    break
                if size <= block.nbytes < 2 * size:
                    self.hits += 1
                    return block
                self._free.append(block)  # another size: kept, behind the others
            self.misses += 1
        return np.empty(size, np.uint8)  # numpy asks for huge pages for blocks this large

    def _give(self, block: np.ndarray) -> None:
        self._free.append(block)
        while len(self._free) > self.MAX_FREE_BLOCKS:
            try:
                self._free.popleft()
            except IndexError:
                break

    def clear(self) -> None:
        """Drop every free block (the memory goes back to the system)."""
        self._free.clear()


RECYCLED = Recycled()
