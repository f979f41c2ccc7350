"""Persistent cache of compiled object code, shared by processes.

An entry is keyed by a SHA-256 over everything its machine code depends on: the graph's text
(`ir.text.print_graph`: structure, types, attributes and name), the build options of the
executable (threaded entry or not, BLAS found or not), the host (LLVM and llvmlite versions,
target triple, CPU name and features: `jit.host_fingerprint`), the tensorplay version, and a
fingerprint of the codegen source files themselves (path, size and modification time of each), so
that a developer who edits the code generator without bumping the version never loads a stale entry.

- Location: ``$TENSORPLAY_CACHE_DIR``, else ``$XDG_CACHE_HOME/tensorplay``, else
  ``~/.cache/tensorplay``. ``TENSORPLAY_DISK_CACHE=0`` turns it off.
- Safe with concurrent processes: an entry is written to a temporary file in the same
  directory, then renamed into place (atomic on POSIX).
- An entry carries a magic header, its full key and a SHA-256 of its payload; anything that
  does not check out (corrupt, truncated, foreign, written by another key) is ignored and
  rebuilt, never loaded.
- Bounded: when the directory grows beyond ``TENSORPLAY_CACHE_MAX_MB`` (default 512), the
  least recently used entries are deleted down to 3/4 of the bound.

An entry holds the object code (one or more object images: a module may be compiled as several
in parallel), the optimised LLVM IR (for introspection) and the executable's layout (text: what
the entry function expects, `executable._layout`), so that a hit needs no scheduling or lowering;
`object_loader` links the images without llvmlite.

The host part of the key (`jit.host_fingerprint`: LLVM's CPU name and features, versions, options)
needs llvmlite.binding, whose import is most of a hit's cost. The first process to compute it
stores it in a *host record* (``hosts/`` in the cache directory) named by a key that is cheap to
read and changes with the host: the machine and OS, /proc/cpuinfo's vendor, family, model and
flags, the installed llvmlite (its version file and library's size and time), the tensorplay
version and the codegen sources (`host_key`). A later process reads the record instead; a record
under another cheap key is never read, so a different host never loads foreign code.

    >>> key = make_key("func @f() ...", "options", "host")
    >>> store(key, b"object code", "llvm ir", "{'layout': 1}")
    >>> load(key) if enabled() else ([b"object code"], "llvm ir", "{'layout': 1}")
    ([b'object code'], 'llvm ir', "{'layout': 1}")
"""
from __future__ import annotations

import functools
import hashlib
import os
import struct
import sys
import threading
import zlib

MAGIC = b"TPOBJ003"  # 002: + the layout; 003: a list of object images
HOST_MAGIC = b"TPHOST01"
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
    """SHA-256 over the source files of the codegen package and of the IR package (its passes
    rewrite the graph before scheduling, `schedule.normalize`): each one's path, size and
    modification time (an edit changes them; reading and hashing the sources took ~11 ms of every hit)."""
    from tensorplay import ir

    h = hashlib.sha256()
    here, ir_root = os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(ir.__file__))
    root = os.path.dirname(here)
    pending = [ir_root, here]
    while pending:
        with os.scandir(pending.pop()) as it:
            found = sorted(it, key=lambda e: e.name)
        for entry in found:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    pending.append(entry.path)
            elif entry.name.endswith(".py"):
                st = entry.stat()
                h.update(f"{os.path.relpath(entry.path, root)} {st.st_size} {st.st_mtime_ns}\0".encode())
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


def symbol_key(name: str) -> str:
    """The key of an entry holding the object code that defines the global function `name` alone
    (the in-place gemm's generic functions, `gemm_library`): whoever needs the symbol can load it.

    >>> symbol_key("tp_gemm_f32_8x32_nn") == symbol_key("tp_gemm_f32_8x32_nn") != symbol_key("f")
    True
    """
    return make_key(f"symbol {name}", "", host_fingerprint())


def _path(key: str) -> str:
    return os.path.join(directory(), key[:2], key + SUFFIX)


def load(key: str) -> tuple[list[bytes], str, str] | None:
    """(object images, optimised LLVM IR, layout) stored under `key`, or None if absent or invalid."""
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


def store(key: str, obj, llvm_ir: str, layout: str = "") -> None:
    """Write an entry atomically (temporary file + rename); errors are ignored (the cache is optional).
    `obj` is one object image (bytes) or a list of them."""
    global _writes
    if not enabled():
        return
    images = [bytes(obj)] if isinstance(obj, (bytes, bytearray, memoryview)) else [bytes(i) for i in obj]
    if not _write(_path(key), _encode(key, images, llvm_ir, layout)):
        return
    with _lock:
        _writes += 1
        check = _writes % 16 == 1
    if check:
        trim()


def _write(path: str, data: bytes) -> bool:
    """Write `data` to `path` atomically (temporary file in the same directory + rename)."""
    import tempfile  # only writers need it (with `random`): a cache hit does not

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            _remove(tmp)
            raise
    except OSError:
        return False
    return True


def _encode(key: str, images: list[bytes], llvm_ir: str, layout: str) -> bytes:
    ir_z = zlib.compress(llvm_ir.encode(), 1)
    lay = layout.encode()
    head = struct.pack(f"<Q{len(images)}QQQ", len(images), *map(len, images), len(ir_z), len(lay))
    payload = head + b"".join(images) + ir_z + lay
    return MAGIC + key.encode() + hashlib.sha256(payload).digest() + payload


def _decode(data: bytes, key: str) -> tuple[list[bytes], str, str] | None:
    head = len(MAGIC) + len(key) + 32
    if len(data) < head + 8 or data[:len(MAGIC)] != MAGIC or data[len(MAGIC):len(MAGIC) + len(key)] != key.encode():
        return None
    digest, payload = data[head - 32:head], data[head:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    n_images, = struct.unpack_from("<Q", payload)
    if not 1 <= n_images <= 4096 or len(payload) < 8 * (n_images + 3):
        return None
    *sizes, n_ir, n_lay = struct.unpack_from(f"<{n_images + 2}Q", payload, 8)
    at = 8 * (n_images + 3)
    if at + sum(sizes) + n_ir + n_lay != len(payload):
        return None
    images = []
    for n in sizes:
        images.append(payload[at:at + n])
        at += n
    try:
        llvm_ir = zlib.decompress(payload[at:at + n_ir]).decode()
        layout = payload[at + n_ir:].decode()
    except (zlib.error, UnicodeDecodeError):
        return None
    return images, llvm_ir, layout


@functools.lru_cache(maxsize=1)
def host_key() -> str:
    """The cheap key of this host's record: what changes with the host and is read without
    importing llvmlite (see the module docstring).

    >>> len(host_key()), host_key() == host_key()
    (64, True)
    """
    import importlib.util
    import platform

    h = hashlib.sha256()
    h.update(f"{platform.machine()} {platform.system()} {sys.version}".encode())
    try:
        with open("/proc/cpuinfo", "rb") as f:
            info = f.read()
        wanted = (b"vendor_id", b"cpu family", b"model", b"model name", b"flags", b"isa", b"features")
        for line in info.split(b"\n\n")[0].splitlines():  # the first processor's block
            name = line.partition(b":")[0].strip()
            if name in wanted:
                h.update(line + b"\n")
    except OSError:
        h.update(b"no /proc/cpuinfo")
    spec = importlib.util.find_spec("llvmlite")
    root = os.path.dirname(spec.origin) if spec is not None and spec.origin else None
    for name in ("_version.py", os.path.join("binding", "libllvmlite.so")):
        try:
            path = os.path.join(root or "", name)
            st = os.stat(path)
            h.update(f"{path} {st.st_size} {st.st_mtime_ns}".encode())
            if name.endswith(".py"):
                with open(path, "rb") as f:
                    h.update(f.read())
        except (OSError, TypeError):
            h.update(f"no {name}".encode())
    h.update(tensorplay_version().encode() + b"\0" + source_fingerprint().encode())
    return h.hexdigest()


_hosts: dict[tuple[str, str], str] = {}


def _host_path(cheap: str) -> str:
    return os.path.join(directory(), "hosts", cheap + ".host")


def host_fingerprint() -> str:
    """`jit.host_fingerprint()`, read from this host's record when there is one (no llvmlite import),
    else computed (importing llvmlite) and recorded. When the JIT engine is up anyway, the computed
    value wins and a record that differs is rewritten.

    >>> from tensorplay.codegen import jit
    >>> host_fingerprint() == jit.host_fingerprint()
    True
    """
    cheap = host_key()
    memo = (directory(), cheap)
    jit = sys.modules.get(__name__.rpartition(".")[0] + ".jit")
    # (getattr: another thread may be importing jit, its module not initialised yet)
    if getattr(jit, "_engine", None) is not None:
        real = jit.host_fingerprint()
        if _hosts.get(memo) != real and read_host_record(cheap) != real:
            write_host_record(cheap, real)
        _hosts[memo] = real
        return real
    if memo not in _hosts:
        found = read_host_record(cheap) if enabled() else None
        if found is None:
            from . import jit

            found = jit.host_fingerprint()
            write_host_record(cheap, found)
        _hosts[memo] = found
    return _hosts[memo]


def read_host_record(cheap: str) -> str | None:
    """The fingerprint recorded under the cheap key `cheap`, or None if absent or invalid.

    >>> write_host_record("f" * 64, "llvm=... cpu=znver3")
    >>> read_host_record("f" * 64) if enabled() else "llvm=... cpu=znver3"
    'llvm=... cpu=znver3'
    """
    try:
        with open(_host_path(cheap), "rb") as f:
            data = f.read()
    except OSError:
        return None
    head = len(HOST_MAGIC) + len(cheap) + 32
    if data[:len(HOST_MAGIC)] != HOST_MAGIC or data[len(HOST_MAGIC):head - 32] != cheap.encode():
        return None
    if hashlib.sha256(data[head:]).digest() != data[head - 32:head]:
        return None
    try:
        return data[head:].decode() or None
    except UnicodeDecodeError:
        return None


def write_host_record(cheap: str, fingerprint: str) -> None:
    """Record `fingerprint` under the cheap key `cheap` (atomically; errors are ignored; see
    `read_host_record` for an example)."""
    if enabled():
        payload = fingerprint.encode()
        _write(_host_path(cheap), HOST_MAGIC + cheap.encode() + hashlib.sha256(payload).digest() + payload)


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
    """Delete every entry and host record (the directory itself stays)."""
    for _, _, path in entries():
        _remove(path)
    hosts = os.path.join(directory(), "hosts")
    for name in os.listdir(hosts) if os.path.isdir(hosts) else ():
        _remove(os.path.join(hosts, name))
    _hosts.clear()


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
