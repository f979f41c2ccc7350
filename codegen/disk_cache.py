"""Persistent cache of compiled object code, shared by processes.

An entry is keyed by a SHA-256 over everything its machine code depends on: the graph's text
(`ir.text.print_graph`: structure, types, attributes and name), the build options of the
executable (threaded entry or not, BLAS found or not), the host (LLVM and llvmlite versions,
target triple, CPU name and features: `jit.host_fingerprint`), the tensorplay version, and a
fingerprint of the codegen source files themselves, so that a developer who edits the code
generator without bumping the version never loads a stale entry.

- Location: ``$TENSORPLAY_CACHE_DIR``, else ``$XDG_CACHE_HOME/tensorplay``, else
  ``~/.cache/tensorplay``. ``TENSORPLAY_DISK_CACHE=0`` turns it off.
- Safe with concurrent processes: an entry is written to a temporary file in the same
  directory, then renamed into place (atomic on POSIX).
- An entry carries a magic header, its full key and a SHA-256 of its payload; anything that
  does not check out (corrupt, truncated, foreign, written by another key) is ignored and
  rebuilt, never loaded.
- Bounded: when the directory grows beyond ``TENSORPLAY_CACHE_MAX_MB`` (default 512), the
  least recently used entries are deleted down to 3/4 of the bound.

An entry holds the object code, the optimised LLVM IR (for introspection) and the executable's
layout (text: what the entry function expects, `executable._layout`), so that a hit needs no
scheduling or lowering.

    >>> key = make_key("func @f() ...", "options", "host")
    >>> store(key, b"object code", "llvm ir", "{'layout': 1}")
    >>> load(key) if enabled() else (b"object code", "llvm ir", "{'layout': 1}")
    (b'object code', 'llvm ir', "{'layout': 1}")
"""
from __future__ import annotations

import functools
import hashlib
import os
import struct
import sys
import tempfile
import threading
import zlib

MAGIC = b"TPOBJ002"  # 002: + the layout
SUFFIX = ".tpo"
DEFAULT_MAX_MB = 512
_writes = 0
_lock = threading.Lock()


def enabled() -> bool:
    return os.environ.get("TENSORPLAY_DISK_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def directory() -> str:
    """Where entries live (not created until the first store)."""
    explicit = os.environ.get("TENSORPLAY_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tensorplay")


def max_bytes() -> int:
    try:
        return int(float(os.environ.get("TENSORPLAY_CACHE_MAX_MB", DEFAULT_MAX_MB)) * (1 << 20))
    except ValueError:
        return DEFAULT_MAX_MB << 20


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """SHA-256 of the codegen package's source files (names and contents)."""
    h = hashlib.sha256()
    root = os.path.dirname(os.path.abspath(__file__))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def tensorplay_version() -> str:
    """The version of the tensorplay package that loaded codegen (read, not imported: codegen
    never imports tensorplay), or "none" when codegen runs on its own."""
    package = sys.modules.get("tensorplay")
    return str(getattr(package, "__version__", "none"))


def make_key(graph_text: str, options: str, host: str) -> str:
    """The hex key of an entry (see the module docstring for what goes in)."""
    h = hashlib.sha256()
    for part in (graph_text, options, host, tensorplay_version(), source_fingerprint()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _path(key: str) -> str:
    return os.path.join(directory(), key[:2], key + SUFFIX)


def load(key: str) -> tuple[bytes, str, str] | None:
    """(object code, optimised LLVM IR, layout) stored under `key`, or None if absent or invalid."""
    if not enabled():
        return None
    path = _path(key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    entry = _decode(data, key)
    if entry is None:
        return None
    try:
        os.utime(path)  # least recently *used* goes first when the cache is trimmed
    except OSError:
        pass
    return entry


def store(key: str, obj: bytes, llvm_ir: str, layout: str = "") -> None:
    """Write an entry atomically (temporary file + rename); errors are ignored (the cache is optional)."""
    global _writes
    if not enabled():
        return
    path = _path(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_encode(key, obj, llvm_ir, layout))
            os.replace(tmp, path)
        except BaseException:
            _remove(tmp)
            raise
    except OSError:
        return
    with _lock:
        _writes += 1
        check = _writes % 16 == 1
    if check:
        trim()


def _encode(key: str, obj: bytes, llvm_ir: str, layout: str) -> bytes:
    ir_z = zlib.compress(llvm_ir.encode(), 1)
    lay = layout.encode()
    payload = struct.pack("<QQQ", len(obj), len(ir_z), len(lay)) + obj + ir_z + lay
    return MAGIC + key.encode() + hashlib.sha256(payload).digest() + payload


def _decode(data: bytes, key: str) -> tuple[bytes, str, str] | None:
    head = len(MAGIC) + len(key) + 32
    if len(data) < head + 24 or data[:len(MAGIC)] != MAGIC or data[len(MAGIC):len(MAGIC) + len(key)] != key.encode():
        return None
    digest, payload = data[head - 32:head], data[head:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    n_obj, n_ir, n_lay = struct.unpack("<QQQ", payload[:24])
    if 24 + n_obj + n_ir + n_lay != len(payload):
        return None
    try:
        llvm_ir = zlib.decompress(payload[24 + n_obj:24 + n_obj + n_ir]).decode()
        layout = payload[24 + n_obj + n_ir:].decode()
    except (zlib.error, UnicodeDecodeError):
        return None
    return payload[24:24 + n_obj], llvm_ir, layout


def entries() -> list[tuple[float, int, str]]:
    """(last use, size, path) of every entry."""
    out = []
    for dirpath, _, filenames in os.walk(directory()):
        for name in filenames:
            if name.endswith(SUFFIX) and not name.startswith(".tmp-"):
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                out.append((st.st_mtime, st.st_size, path))
    return out


def trim(limit: int | None = None) -> None:
    """Delete least recently used entries while the cache is larger than `limit` (default the bound)."""
    limit = max_bytes() if limit is None else limit
    found = entries()
    total = sum(size for _, size, _ in found)
    if total <= limit:
        return
    for _, size, path in sorted(found):
        if total <= limit * 3 // 4:
            break
        _remove(path)
        total -= size


def clear() -> None:
    """Delete every entry (the directory itself stays)."""
    for _, _, path in entries():
        _remove(path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
