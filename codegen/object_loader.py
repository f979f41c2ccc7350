"""Load the object code of a disk-cache entry without LLVM: a small static linker for the ELF64
relocatable objects LLVM emits for x86-64, so that a cache hit never imports llvmlite.binding
(its import is 30-80 ms: dlopen of the 179 MB libllvmlite.so and hundreds of ctypes prototypes).

`load(images, symbols, resolve)` lays the allocated sections of one or more objects out in one
anonymous mapping, applies their relocations, resolves undefined symbols first against the other
images and then through `resolve` (numpy's OpenBLAS and process symbols, as the JIT does), and
returns the addresses of `symbols`. The mapping has three page-aligned parts, each protected once
relocated (W^X: never writable and executable at once): code and jump stubs (read + execute),
read-only data and the GOT (read), writable data and zero-filled sections (read + write). External
symbols may lie more than 2 GB away: 32-bit PC-relative calls to them go through a stub in the
mapping (``jmp *GOT(%rip)``), GOT-relative loads through a GOT slot; today's objects use the large
code model (every reference is an absolute R_X86_64_64), so those paths serve other code models.

Anything not understood raises `Unsupported` and the caller links with llvmlite instead: another
architecture or object format, an unknown relocation, section or symbol kind, TLS, constructors
(``.init_array``), common symbols, a missing symbol, a value that does not fit its field. Unwind
tables (``.eh_frame``) are left out: they serve only unwinding through the code, and compiled
kernels call C functions alone. x86 needs no instruction-cache flush.

    >>> import platform
    >>> try:
    ...     load([b"not an object"], ["f"], lambda name: None)
    ... except Unsupported as e:
    ...     print("falls back:", str(e).split(":")[0])
    falls back: not an ELF64 little-endian relocatable x86-64 object
"""
from __future__ import annotations

import ctypes
import platform
import struct
import time

PAGE = 4096

_SHT_PROGBITS, _SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 1, 2, 3, 4, 8, 9
_SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY, _SHT_GROUP, _SHT_SYMTAB_SHNDX = 14, 15, 16, 17, 18
_SHT_X86_64_UNWIND = 0x70000001
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR, _SHF_TLS, _SHF_COMPRESSED = 0x1, 0x2, 0x4, 0x400, 0x800
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS, _SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
_STB_LOCAL, _STB_GLOBAL, _STB_WEAK = 0, 1, 2
_STT_NOTYPE, _STT_OBJECT, _STT_FUNC, _STT_SECTION, _STT_FILE = 0, 1, 2, 3, 4

# relocation types (x86-64 psABI) this linker applies
R_64, R_PC32, R_PLT32, R_32, R_32S, R_PC64 = 1, 2, 4, 10, 11, 24
R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX = 9, 41, 42
_GOT_RELOCS = (R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX)
_KNOWN_RELOCS = (R_64, R_PC32, R_PLT32, R_32, R_32S, R_PC64) + _GOT_RELOCS

_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20
_STUB = b"\xff\x25"  # jmp *disp32(%rip), padded to 8 bytes


class Unsupported(Exception):
    """The object cannot be loaded here: link it with llvmlite instead."""


class _Libc:
    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.mmap = libc.mmap
        self.mmap.restype = ctypes.c_void_p
        self.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        self.munmap = libc.munmap
        self.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.mprotect = libc.mprotect
        self.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


_libc: _Libc | None = None


def _lib() -> _Libc:
    global _libc
    if _libc is None:
        _libc = _Libc()
    return _libc


def supported_host() -> bool:
    """Whether this process can run objects loaded here (x86-64 Linux).

    >>> supported_host() == (platform.machine() in ("x86_64", "AMD64") and platform.system() == "Linux")
    True
    """
    return platform.machine() in ("x86_64", "AMD64") and platform.system() == "Linux"


class _Section:
    __slots__ = ("index", "name", "type", "flags", "offset", "size", "align", "part", "at")

    def __init__(self, index, name, type_, flags, offset, size, align):
        self.index, self.name, self.type, self.flags = index, name, type_, flags
        self.offset, self.size, self.align = offset, size, align
        self.part = self.at = None  # which part of the mapping ("x", "r", "w") and the offset in it


class _Object:
    """One parsed image: its loaded sections, symbols and relocations (nothing mapped yet)."""

    def __init__(self, data: bytes, number: int):
        self.data = data
        self.number = number
        try:
            self._parse()
        except (struct.error, IndexError, ValueError, UnicodeDecodeError) as e:
            raise Unsupported(f"image {number}: malformed ELF ({e})") from None

    def _parse(self) -> None:
        d = self.data
        if (len(d) < 64 or d[:4] != b"\x7fELF" or d[4] != 2 or d[5] != 1 or d[6] != 1
                or struct.unpack_from("<HH", d, 16) != (1, 62)):
            raise Unsupported(f"not an ELF64 little-endian relocatable x86-64 object: image {self.number}")
        shoff, = struct.unpack_from("<Q", d, 40)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 58)
        if shentsize != 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * 64 > len(d):
            raise Unsupported(f"image {self.number}: unusual section table")
        raw = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + 64 * i) for i in range(shnum)]
        names_off, names_size = raw[shstrndx][4], raw[shstrndx][5]
        self._check_range(names_off, names_size)
        names = d[names_off:names_off + names_size]

        def name_of(off: int) -> str:
            return names[off:names.index(b"\0", off)].decode()

        self.sections: dict[int, _Section] = {}
        self.relocations: list[tuple[int, int, int, int]] = []  # (offset, count, target section, symtab)
        symtab = None
        for i, (name, type_, flags, _, offset, size, link, info, align, entsize) in enumerate(raw):
            if i == 0:
                continue
            sname = name_of(name)
            if type_ == _SHT_SYMTAB:
                if symtab is not None or entsize != 24:
                    raise Unsupported(f"image {self.number}: several or unusual symbol tables")
                symtab = (offset, size, link)
            elif type_ == _SHT_RELA:
                if entsize != 24 or size % 24:
                    raise Unsupported(f"image {self.number}: unusual relocation section {sname}")
                self._check_range(offset, size)
                self.relocations.append((offset, size // 24, info, link))
            elif type_ in (_SHT_REL, _SHT_SYMTAB_SHNDX):
                raise Unsupported(f"image {self.number}: section {sname} of type {type_}")
            elif flags & _SHF_ALLOC:
                if type_ == _SHT_X86_64_UNWIND or sname == ".eh_frame":
                    continue  # unwind tables: not registered (see the module docstring)
                if type_ in (_SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY) or sname.startswith(
                        (".init", ".fini", ".ctors", ".dtors", ".preinit")):
                    raise Unsupported(f"image {self.number}: constructors or destructors ({sname})")
                if type_ not in (_SHT_PROGBITS, _SHT_NOBITS):
                    raise Unsupported(f"image {self.number}: allocated section {sname} of type {type_:#x}")
                if flags & (_SHF_TLS | _SHF_COMPRESSED):
                    raise Unsupported(f"image {self.number}: thread-local or compressed section {sname}")
                if flags & _SHF_WRITE and flags & _SHF_EXECINSTR:
                    raise Unsupported(f"image {self.number}: writable code section {sname}")
                align = max(align, 1)
                if align > PAGE or align & (align - 1):
                    raise Unsupported(f"image {self.number}: section {sname} aligned to {align}")
                if type_ == _SHT_PROGBITS:
                    self._check_range(offset, size)
                self.sections[i] = _Section(i, sname, type_, flags, offset, size, align)
        if symtab is None:
            raise Unsupported(f"image {self.number}: no symbol table")
        sym_off, sym_size, str_index = symtab
        self._check_range(sym_off, sym_size)
        str_off, str_size = raw[str_index][4], raw[str_index][5]
        self._check_range(str_off, str_size)
        strings = d[str_off:str_off + str_size]
        self.symbols = []  # (name, binding, type, section index, value)
        for k in range(sym_size // 24):
            name, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", d, sym_off + 24 * k)
            sname = strings[name:strings.index(b"\0", name)].decode()
            self.symbols.append((sname, info >> 4, info & 0xF, shndx, value))
        self.symtab_index = next(i for i, r in enumerate(raw) if r[1] == _SHT_SYMTAB)

    def _check_range(self, offset: int, size: int) -> None:
        if offset + size > len(self.data):
            raise Unsupported(f"image {self.number}: truncated (section past the end)")


class LoadedCode:
    """Machine code in a mapping of our own, with the interface of `jit.JitModule` the executable
    uses: function addresses, the object images and optimised IR it came from, `release()`."""

    def __init__(self, addresses, base, size, images, llvm_ir, timings):
        self.addresses = addresses
        self.objects = list(images)
        self.llvm_ir = llvm_ir
        self.timings = timings
        self.merged = 0
        self._base, self._size = base, size

    @property
    def mapped(self) -> bool:
        """Whether the machine code is still mapped (False after `release`)."""
        return self._base is not None

    def asm(self) -> str:
        """Host assembly of the optimised module (re-emitted by LLVM on demand)."""
        from .jit import JitModule

        return JitModule({}, self.llvm_ir, b"").asm()

    def release(self) -> None:
        """Unmap the machine code; its function addresses become invalid."""
        base, self._base = self._base, None
        if base is not None:
            _lib().munmap(base, self._size)


def load(images, symbols, resolve, llvm_ir: str = "") -> LoadedCode:
    """Link the object `images` (bytes, or a list of them) into fresh memory; the addresses of the
    global `symbols`. `resolve(name)` gives the address of an external symbol (or None: then this
    raises `Unsupported`, as for anything else it does not support).

    >>> from tensorplay.codegen import jit  # an object to load: LLVM emits one
    >>> e = jit.engine()
    >>> with jit._parsed('define i64 @twice(i64 %x) {\\n  %y = add i64 %x, %x\\n  ret i64 %y\\n}') as mod:
    ...     obj = e.tm.emit_object(mod)
    >>> code = load([obj], ["twice"], Resolver([]))
    >>> ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(code.addresses["twice"])(21)
    42
    >>> code.release()
    """
    t0 = time.perf_counter()
    if not supported_host():
        raise Unsupported(f"host {platform.machine()} {platform.system()}: only x86-64 Linux is loaded here")
    images = [bytes(images)] if isinstance(images, (bytes, bytearray, memoryview)) else [bytes(i) for i in images]
    objects = [_Object(data, n) for n, data in enumerate(images)]

    # 1. where every section goes: code, read-only data, writable data
    sizes = {"x": 0, "r": 0, "w": 0}
    for obj in objects:
        for s in obj.sections.values():
            s.part = "x" if s.flags & _SHF_EXECINSTR else "w" if s.flags & _SHF_WRITE else "r"
            s.at = -(-sizes[s.part] // s.align) * s.align
            sizes[s.part] = s.at + s.size

    # 2. global definitions over all images, then the symbols each relocation refers to
    defined: dict[str, tuple[_Object, int, int]] = {}  # name -> (object, section index or ABS, value)
    for obj in objects:
        for name, bind, typ, shndx, value in obj.symbols:
            if shndx == _SHN_COMMON:
                raise Unsupported(f"image {obj.number}: common symbol {name}")
            if bind not in (_STB_LOCAL, _STB_GLOBAL, _STB_WEAK):
                raise Unsupported(f"image {obj.number}: symbol {name} of binding {bind}")
            if typ not in (_STT_NOTYPE, _STT_OBJECT, _STT_FUNC, _STT_SECTION, _STT_FILE):
                raise Unsupported(f"image {obj.number}: symbol {name} of type {typ} (TLS, IFUNC, ...)")
            if bind != _STB_LOCAL and shndx != _SHN_UNDEF:
                if name in defined:
                    raise Unsupported(f"symbol {name} defined in two images")
                defined[name] = (obj, shndx, value)
    externals: dict[str, int] = {}
    got: dict[str, int] = {}  # symbol key -> offset of its slot in the read-only part
    stubs: dict[str, int] = {}  # external name -> offset of its stub in the code part
    relocs = []  # (obj, target section, offset, type, symbol index, addend)
    for obj in objects:
        for off, count, target, link in obj.relocations:
            if target not in obj.sections:
                continue  # relocations of a section that is not loaded (unwind tables, debug info)
            if link != obj.symtab_index:
                raise Unsupported(f"image {obj.number}: relocations against another symbol table")
            sec = obj.sections[target]
            for k in range(count):
                r_off, r_info, addend = struct.unpack_from("<QQq", obj.data, off + 24 * k)
                rtype, sym = r_info & 0xFFFFFFFF, r_info >> 32
                if rtype not in _KNOWN_RELOCS:
                    raise Unsupported(f"image {obj.number}: relocation type {rtype} in {sec.name}")
                if sym >= len(obj.symbols) or r_off + (8 if rtype in (R_64, R_PC64) else 4) > sec.size \
                        or sec.type == _SHT_NOBITS:
                    raise Unsupported(f"image {obj.number}: relocation outside {sec.name} or its symbols")
                name, bind, _, shndx, _ = obj.symbols[sym]
                external = sym != 0 and shndx == _SHN_UNDEF and name not in defined
                if external and name not in externals:
                    if bind == _STB_LOCAL or not name:
                        raise Unsupported(f"image {obj.number}: undefined local symbol")
                    address = resolve(name)
                    if not address:
                        raise Unsupported(f"symbol {name} not found")
                    externals[name] = address
                key = name if shndx == _SHN_UNDEF or bind != _STB_LOCAL else (obj.number, sym)
                if rtype in _GOT_RELOCS and key not in got:
                    sizes["r"] = -(-sizes["r"] // 8) * 8
                    got[key] = sizes["r"]
                    sizes["r"] += 8
                if rtype == R_PLT32 and external and name not in stubs:
                    if name not in got:
                        sizes["r"] = -(-sizes["r"] // 8) * 8
                        got[name] = sizes["r"]
                        sizes["r"] += 8
                    sizes["x"] = -(-sizes["x"] // 8) * 8
                    stubs[name] = sizes["x"]
                    sizes["x"] += 8
                relocs.append((obj, sec, r_off, rtype, sym, addend, key, external))

    # 3. map, copy, relocate, protect
    starts, total = {}, 0
    for part in ("x", "r", "w"):
        starts[part] = total
        total += -(-sizes[part] // PAGE) * PAGE
    total = max(total, PAGE)
    lib = _lib()
    base = lib.mmap(None, total, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)
    if base in (None, ctypes.c_void_p(-1).value):
        raise Unsupported(f"mmap of {total} bytes failed (errno {ctypes.get_errno()})")
    try:
        addresses = _relocate(objects, defined, externals, got, stubs, relocs, symbols, base, starts)
        for part, prot in (("x", _PROT_READ | _PROT_EXEC), ("r", _PROT_READ), ("w", _PROT_READ | _PROT_WRITE)):
            n = -(-sizes[part] // PAGE) * PAGE
            if n and lib.mprotect(base + starts[part], n, prot) != 0:
                raise Unsupported(f"mprotect failed (errno {ctypes.get_errno()})")
    except BaseException:
        lib.munmap(base, total)
        raise
    return LoadedCode(addresses, base, total, images, llvm_ir, {"link": time.perf_counter() - t0})


def _relocate(objects, defined, externals, got, stubs, relocs, symbols, base, starts) -> dict[str, int]:
    def section_address(obj, shndx) -> int:
        sec = obj.sections.get(shndx)
        if sec is None:
            raise Unsupported(f"image {obj.number}: a symbol in section {shndx}, which is not loaded")
        return base + starts[sec.part] + sec.at

    def symbol_address(obj, shndx, value) -> int:
        if shndx == _SHN_ABS:
            return value
        if shndx >= _SHN_LORESERVE:
            raise Unsupported(f"image {obj.number}: symbol in reserved section {shndx:#x}")
        return section_address(obj, shndx) + value

    for obj in objects:
        for sec in obj.sections.values():
            if sec.type == _SHT_PROGBITS and sec.size:
                ctypes.memmove(section_address(obj, sec.index), obj.data[sec.offset:sec.offset + sec.size], sec.size)
    # NOBITS sections are zero already (anonymous mapping)
    for obj, sec, r_off, rtype, sym, addend, key, external in relocs:
        name, _, _, shndx, value = obj.symbols[sym]
        if external:
            s = externals[name]
        elif sym == 0:
            s = 0  # no symbol: the addend is the value
        elif shndx == _SHN_UNDEF:
            owner, oshndx, ovalue = defined[name]
            s = symbol_address(owner, oshndx, ovalue)
        else:
            s = symbol_address(obj, shndx, value)
        p = section_address(obj, sec.index) + r_off
        if key in got:
            ctypes.c_uint64.from_address(base + starts["r"] + got[key]).value = s
        if rtype == R_64:
            ctypes.c_uint64.from_address(p).value = (s + addend) & 0xFFFFFFFFFFFFFFFF
            continue
        if rtype == R_PC64:
            ctypes.c_uint64.from_address(p).value = (s + addend - p) & 0xFFFFFFFFFFFFFFFF
            continue
        if rtype == R_PLT32 and external:
            s = base + starts["x"] + stubs[name]
        if rtype in _GOT_RELOCS:
            v = base + starts["r"] + got[key] + addend - p
        elif rtype in (R_PC32, R_PLT32):
            v = s + addend - p
        else:
            v = s + addend
        lo, hi = (0, 1 << 32) if rtype == R_32 else (-(1 << 31), 1 << 31)
        if not lo <= v < hi:
            raise Unsupported(f"image {obj.number}: relocation {rtype} to {name or 'a section'} does not fit 32 bits")
        ctypes.c_uint32.from_address(p).value = v & 0xFFFFFFFF
    for name, offset in stubs.items():
        stub = base + starts["x"] + offset
        disp = base + starts["r"] + got[name] - (stub + 6)
        ctypes.memmove(stub, _STUB + struct.pack("<i", disp) + b"\xcc\xcc", 8)
    out = {}
    for name in symbols:
        if name not in defined:
            raise Unsupported(f"symbol {name} is not defined by the object")
        owner, shndx, value = defined[name]
        out[name] = symbol_address(owner, shndx, value)
    return out


class Resolver:
    """External symbols the way the JIT resolves them: the libraries a disk-cache entry lists (path,
    symbols: numpy's OpenBLAS), functions made in this process for compiled code to call
    (`provided`), the process's own symbols (libc, libm), then a function the disk cache holds an
    entry of its own for (`load_symbol`: the in-place gemm's generic functions, `gemm_library`).
    A name found nowhere gives None.

    >>> r = Resolver([])
    >>> r("memset") == ctypes.cast(ctypes.CDLL(None).memset, ctypes.c_void_p).value
    True
    """

    def __init__(self, libraries):
        self.known: dict[str, int] = {}
        for path, names in libraries:
            lib = ctypes.CDLL(path)
            for name in names:
                self.known[name] = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        self._process = ctypes.CDLL(None)

    def __call__(self, name: str) -> int | None:
        if name in self.known:
            return self.known[name]
        if name in provided:
            return provided[name]
        try:
            return ctypes.cast(getattr(self._process, name), ctypes.c_void_p).value
        except AttributeError:
            return load_symbol(name)


# Functions made in this process that compiled code may call by name (`gemm_library` puts the
# in-place gemm's generic functions here): name -> address.
provided: dict[str, int] = {}
_symbol_code: list = []  # what `load_symbol` mapped: never unmapped (callers hold the addresses)


def load_symbol(name: str) -> int | None:
    """The address of global function `name` from the disk cache's entry for it
    (`disk_cache.symbol_key`), linked here and kept for the life of the process; None when there is
    no such entry or it does not load. A later call finds it in `provided`.

    >>> load_symbol("no_such_symbol_anywhere") is None
    True
    """
    from . import disk_cache

    if name in provided:
        return provided[name]
    entry = disk_cache.load(disk_cache.symbol_key(name)) if disk_cache.enabled() else None
    if entry is None:
        return None
    try:
        code = load(entry[0], [name], Resolver([]), entry[1])
    except Unsupported:
        return None
    _symbol_code.append(code)
    provided[name] = code.addresses[name]
    return provided[name]
