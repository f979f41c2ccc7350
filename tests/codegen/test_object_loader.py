"""`codegen.object_loader`, the ELF linker of disk-cache hits: every primitive's kernel loaded by it
gives the same bits as linked by llvmlite (which test_prims checks against the interpreter);
several images link together; stubs and GOT slots for code models with 32-bit references; what
it does not support (garbage, truncation, unknown relocations, missing symbols, TLS) raises
`Unsupported` and a disk-cache hit falls back; release unmaps; the host record keys the host."""
from __future__ import annotations

import ctypes
import gc
import struct

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import disk_cache, object_loader
from tensorplay.codegen.object_loader import Unsupported
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType
from codegen_testutil import single_node_graph
from prim_samples import ALL_SAMPLES, sample_id

pytestmark = pytest.mark.skipif(not object_loader.supported_host(), reason="the loader links x86-64 Linux objects")


def _no_loader(*args, **kwargs):
    raise Unsupported("turned off by the test")


@pytest.mark.parametrize("s", ALL_SAMPLES, ids=sample_id)
def test_every_primitive_loads_the_same_as_through_llvmlite(s, monkeypatch):
    # the session's cache directory: entries test_prims stored are reused (benchmark modules imported
    # by tests/bench turn the disk cache off for the process: on again for this test)
    monkeypatch.delenv("TENSORPLAY_DISK_CACHE", raising=False)
    g = single_node_graph(s.prim, s.args, s.attrs)
    codegen.clear_cache()
    with monkeypatch.context() as m:
        m.setattr(object_loader, "load", _no_loader)
        ref = codegen.compile_graph(g)
        want = ref(*s.args)
    assert not isinstance(ref._jit, object_loader.LoadedCode)
    codegen.clear_cache()
    exe = codegen.compile_graph(g)
    assert exe.stats["source"] == "disk cache" and isinstance(exe._jit, object_loader.LoadedCode)
    for a, b in zip(exe(*s.args), want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # same machine code: same bits (NaNs compare equal)
    codegen.clear_cache()


def _graph(n: int = 33) -> ir.Graph:
    b = ir.GraphBuilder("loaded")
    x = b.add_input(TensorType((n,), dt.float32))
    w = b.add_input(TensorType((n, 8), dt.float32))
    y = b.emit("dot_general", b.tanh(x), w, contract=((0,), (0,)), batch=((), ()))
    return b.build([y, b.emit("reduce_sum", b.exp(x), axes=(0,))])


def _args(n: int = 33):
    rng = np.random.default_rng(1)
    return [rng.standard_normal(n).astype(np.float32), rng.standard_normal((n, 8)).astype(np.float32)]


def _mapped(address: int) -> bool:
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            if lo <= address < hi:
                return True
    return False


def _compiled(cache_dir):
    exe = codegen.compile_graph(_graph())
    assert exe.stats["source"] == "compiled"
    (path,) = [p for p in cache_dir.rglob("*.tpo")]
    return exe, path


def test_a_hit_loads_without_llvm_and_release_unmaps(cache_dir):
    first, _ = _compiled(cache_dir)
    want = first(*_args())
    np.testing.assert_allclose(want[1], np.exp(_args()[0].astype(np.float64)).sum(), rtol=1e-5)
    codegen.clear_cache()
    exe = codegen.compile_graph(_graph())
    assert exe.stats["source"] == "disk cache"
    loaded = exe._jit
    assert isinstance(loaded, object_loader.LoadedCode) and loaded.mapped
    for a, b in zip(exe(*_args()), want):
        np.testing.assert_array_equal(a, b)
    assert "ret" in exe.asm and exe.llvm_ir == first.llvm_ir  # introspection: LLVM on demand
    address = next(iter(loaded.addresses.values()))
    assert _mapped(address)
    codegen.clear_cache()
    del exe
    gc.collect()
    assert not loaded.mapped and not _mapped(address)


def test_loading_and_releasing_many_times_gives_the_memory_back(cache_dir):
    exe, path = _compiled(cache_dir)
    images, _, _ = disk_cache.load(path.stem)
    entry = next(iter(exe._jit.addresses))
    resolve = object_loader.Resolver(_libraries(exe))
    first = object_loader.load(images, [entry], resolve)
    address = first.addresses[entry]
    first.release()
    first.release()  # idempotent
    for _ in range(300):
        code = object_loader.load(images, [entry], resolve)
        code.release()
    assert not _mapped(address) or address != code.addresses[entry]  # nothing left at the old place
    with open("/proc/self/maps") as f:
        n_maps = sum(1 for _ in f)
    for _ in range(300):
        object_loader.load(images, [entry], resolve).release()
    with open("/proc/self/maps") as f:
        assert sum(1 for _ in f) <= n_maps + 2  # no mapping is left behind


def _libraries(exe):
    from tensorplay.codegen import jit

    return sorted(jit.engine().libraries.items())


def _object(cache_dir):
    """The executable, its entry's object image, and its other images (the kernels compiled
    apart at the cheap level, `jit.split_levels`)."""
    exe, path = _compiled(cache_dir)
    images, _, _ = disk_cache.load(path.stem)
    entry = next(iter(exe._jit.addresses))
    first = next(i for i in images if entry.encode() in i)
    return exe, first, [i for i in images if i is not first]


def test_garbage_and_truncated_objects_are_refused(cache_dir):
    exe, obj, rest = _object(cache_dir)
    entry = next(iter(exe._jit.addresses))
    resolve = object_loader.Resolver(_libraries(exe))
    object_loader.load([obj, *rest], [entry], resolve).release()
    bad = [b"", b"\x7fELF", obj[:64], obj[:len(obj) // 2], obj[:18] + b"\x03\x00" + obj[20:],  # e_machine 3 (i386)
           obj[:4] + b"\x01" + obj[5:], bytes(len(obj))]
    for data in bad:
        with pytest.raises(Unsupported):
            object_loader.load([data, *rest], [entry], resolve)
    with pytest.raises(Unsupported, match="not defined"):
        object_loader.load([obj, *rest], ["no_such_symbol"], resolve)


def _sections(obj: bytes):
    shoff, = struct.unpack_from("<Q", obj, 40)
    shnum, shstrndx = struct.unpack_from("<HH", obj, 60)
    raw = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * i) for i in range(shnum)]
    names = raw[shstrndx][4]
    out = []
    for i, r in enumerate(raw):
        name = obj[names + r[0]:obj.index(b"\0", names + r[0])].decode()
        out.append((i, name, r, shoff + 64 * i))
    return out


def test_an_unknown_relocation_is_refused(cache_dir):
    exe, obj, rest = _object(cache_dir)
    entry = next(iter(exe._jit.addresses))
    resolve = object_loader.Resolver(_libraries(exe))
    rela = [r for _, _, r, _ in _sections(obj) if r[1] == 4 and r[5]]
    assert rela
    info_at = rela[0][4] + 8  # r_info of the first relocation: type in the low 32 bits
    patched = obj[:info_at] + struct.pack("<I", 99) + obj[info_at + 4:]
    with pytest.raises(Unsupported, match="relocation type 99"):
        object_loader.load([patched, *rest], [entry], resolve)


def test_thread_local_sections_are_refused(cache_dir):
    exe, obj, rest = _object(cache_dir)
    entry = next(iter(exe._jit.addresses))
    text = [(at, r) for _, name, r, at in _sections(obj) if r[2] & 0x4 and r[5]]
    at, r = text[0]
    patched = obj[:at + 8] + struct.pack("<Q", r[2] | 0x400) + obj[at + 16:]  # sh_flags |= SHF_TLS
    with pytest.raises(Unsupported, match="thread-local"):
        object_loader.load([patched, *rest], [entry], object_loader.Resolver(_libraries(exe)))


def test_an_entry_whose_object_is_garbage_falls_back_and_is_rebuilt(cache_dir):
    first, path = _compiled(cache_dir)
    want = first(*_args())
    images, llvm_ir, layout = disk_cache.load(path.stem)
    disk_cache.store(path.stem, [images[0][:200]], llvm_ir, layout)  # a valid entry, a truncated object
    codegen.clear_cache()
    exe = codegen.compile_graph(_graph())
    assert exe.stats["source"] == "compiled"
    for a, b in zip(exe(*_args()), want):
        np.testing.assert_array_equal(a, b)
    codegen.clear_cache()
    assert codegen.compile_graph(_graph()).stats["source"] == "disk cache"


# --- hand-written modules: several images, 32-bit references through stubs and the GOT ---------
_CALLER = """
declare double @callee(double)
declare ptr @memset(ptr, i32, i64)
@table = internal constant [4 x double] [double 1.0, double 2.0, double 3.0, double 4.0], align 32
@counter = global i64 5
define double @caller(double %x, ptr %buf, i64 %i) {
  %y = call double @callee(double %x)
  %p = getelementptr [4 x double], ptr @table, i64 0, i64 %i
  %t = load double, ptr %p
  %c = load i64, ptr @counter
  %c1 = add i64 %c, 1
  store i64 %c1, ptr @counter
  %cf = sitofp i64 %c1 to double
  call ptr @memset(ptr %buf, i32 7, i64 3)
  %s = fadd double %y, %t
  %r = fadd double %s, %cf
  ret double %r
}
"""
_CALLEE = """
define double @callee(double %x) {
  %y = fmul double %x, 3.0
  ret double %y
}
"""


def _emit(text: str, codemodel: str, reloc: str) -> bytes:
    import llvmlite.binding as llvm

    from tensorplay.codegen import jit

    e = jit.engine()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = target.create_target_machine(cpu=e.cpu, features=e.features, opt=2, codemodel=codemodel, reloc=reloc)
    mod = llvm.parse_assembly(text)
    mod.verify()
    return tm.emit_object(mod)


def _relocation_types(obj: bytes) -> set:
    out = set()
    for _, _, r, _ in _sections(obj):
        if r[1] == 4:
            for k in range(r[5] // 24):
                out.add(struct.unpack_from("<Q", obj, r[4] + 24 * k + 8)[0] & 0xFFFFFFFF)
    return out


def code_above_2gb() -> bool:
    probe = object_loader.load([_emit(_CALLEE, "jitdefault", "default")], ["callee"], object_loader.Resolver([]))
    probe.release()
    return probe.addresses["callee"] >= 1 << 31


@pytest.mark.parametrize("codemodel,reloc", [("jitdefault", "default"), ("small", "pic"), ("small", "static")])
def test_two_images_link_together(codemodel, reloc):
    caller, callee = _emit(_CALLER, codemodel, reloc), _emit(_CALLEE, codemodel, reloc)
    if codemodel == "small" and reloc == "pic":
        kinds = _relocation_types(caller)
        assert object_loader.R_PLT32 in kinds and kinds & set(object_loader._GOT_RELOCS)
    if codemodel == "small" and reloc == "static":
        # absolute 32-bit addresses (R_X86_64_32S): only right if the mapping lies below 2 GB
        assert object_loader.R_32S in _relocation_types(caller)
        if code_above_2gb():
            with pytest.raises(Unsupported, match="does not fit 32 bits"):
                object_loader.load([caller, callee], ["caller"], object_loader.Resolver([]))
            return
    code = object_loader.load([caller, callee], ["caller", "callee"], object_loader.Resolver([]))
    try:
        f = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double, ctypes.c_void_p, ctypes.c_int64)(
            code.addresses["caller"])
        buf = (ctypes.c_uint8 * 4)()
        assert f(2.0, ctypes.addressof(buf), 2) == 2.0 * 3 + 3.0 + 6
        assert f(1.0, ctypes.addressof(buf), 3) == 1.0 * 3 + 4.0 + 7  # @counter is writable
        assert list(buf) == [7, 7, 7, 0]
    finally:
        code.release()
    with pytest.raises(Unsupported, match="callee not found"):
        object_loader.load([caller], ["caller"], object_loader.Resolver([]))
    with pytest.raises(Unsupported, match="defined in two images"):
        object_loader.load([callee, callee], ["callee"], object_loader.Resolver([]))


def test_entries_hold_several_images(cache_dir):
    key = disk_cache.make_key("graph", "opts", "host")
    disk_cache.store(key, [b"first image", b"", b"third"], "ir", "layout")
    assert disk_cache.load(key) == ([b"first image", b"", b"third"], "ir", "layout")
    disk_cache.store(key, b"one", "ir", "layout")
    assert disk_cache.load(key) == ([b"one"], "ir", "layout")


# --- the host record ---------------------------------------------------------------------------
def test_the_host_record_is_read_only_under_this_hosts_cheap_key(cache_dir, monkeypatch):
    from tensorplay.codegen import jit

    monkeypatch.setattr(disk_cache, "_hosts", {})
    monkeypatch.setattr(disk_cache, "host_key", lambda: "a" * 64)
    monkeypatch.setattr(jit, "_engine", None)  # as in a process that has not started LLVM
    monkeypatch.setattr(jit, "host_fingerprint", lambda: "computed")
    disk_cache.write_host_record("b" * 64, "another host")
    assert disk_cache.host_fingerprint() == "computed"  # the other host's record is ignored
    assert disk_cache.read_host_record("a" * 64) == "computed"  # and this host's is written
    assert disk_cache.read_host_record("b" * 64) == "another host"

    disk_cache.write_host_record("a" * 64, "recorded")
    disk_cache._hosts.clear()
    monkeypatch.setattr(jit, "host_fingerprint", lambda: pytest.fail("computed although recorded"))
    assert disk_cache.host_fingerprint() == "recorded"

    path = cache_dir / "hosts" / ("a" * 64 + ".host")
    data = path.read_bytes()
    disk_cache.clear()
    assert not path.exists()
    path.write_bytes(data)
    for damaged in (data[:-1], data[:-1] + b"X", b"", data.replace(b"a" * 64, b"c" * 64)):
        path.write_bytes(damaged)
        assert disk_cache.read_host_record("a" * 64) is None


def test_a_record_that_disagrees_with_the_running_engine_is_rewritten(cache_dir, monkeypatch):
    from tensorplay.codegen import jit

    jit.engine()
    monkeypatch.setattr(disk_cache, "_hosts", {})
    disk_cache.write_host_record(disk_cache.host_key(), "stale")
    assert disk_cache.host_fingerprint() == jit.host_fingerprint()
    assert disk_cache.read_host_record(disk_cache.host_key()) == jit.host_fingerprint()


@pytest.mark.skipif(not __import__("os").path.exists("/proc/cpuinfo"), reason="needs /proc/cpuinfo")
def test_the_cheap_host_key_changes_with_the_cpu_flags(tmp_path, monkeypatch):
    import builtins

    with open("/proc/cpuinfo", "rb") as f:
        info = f.read()
    assert disk_cache.host_key.__wrapped__() == disk_cache.host_key()
    real_open = builtins.open
    for changed in (info.replace(b"flags", b"flags\t: other cpu\nignored", 1), info.replace(b" avx", b" ", 1)):
        fake = tmp_path / "cpuinfo"
        fake.write_bytes(changed)
        with monkeypatch.context() as m:
            m.setattr(builtins, "open", lambda path, *a, **k: real_open(fake if path == "/proc/cpuinfo" else path, *a, **k))
            other = disk_cache.host_key.__wrapped__()
        assert (other != disk_cache.host_key()) == (changed != info)


def test_the_source_fingerprint_changes_when_a_codegen_file_changes():
    import os

    path = os.path.join(os.path.dirname(disk_cache.__file__), "object_loader.py")
    st = os.stat(path)
    before = disk_cache.source_fingerprint.__wrapped__()
    try:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # as an edit would
        assert disk_cache.source_fingerprint.__wrapped__() != before
    finally:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert disk_cache.source_fingerprint.__wrapped__() == before


@pytest.mark.parametrize("module", [object_loader, disk_cache], ids=lambda m: m.__name__)
def test_docstring_examples_run(module, cache_dir):
    import doctest

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and not result.failed
