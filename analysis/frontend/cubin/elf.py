"""The cubin as an ELF file: sections, symbols, relocations and the `.nv.info` attributes.

A cubin is a little-endian ELF64 (e_machine EM_CUDA = 190). Each function's code is a
`.text.<mangled name>` section; `.nv.info.<name>` holds its attributes (EIATTR records);
`.debug_line` holds the line table when compiled with `-lineinfo`. Only what the SASS
decoder needs is read, with nothing but `struct`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property

EM_CUDA = 190
SHT_SYMTAB = 2
SHT_RELA = 4
SHT_REL = 9
STT_FUNC = 2
STO_CUDA_ENTRY = 0x10  # st_other bit nvdisasm prints as STO_CUDA_ENTRY: a __global__ function


class CubinFormatError(ValueError):
    """Not a cubin this reader understands; the caller falls back to nvdisasm."""


@dataclass(frozen=True, slots=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    value: int
    size: int
    type: int
    bind: int
    other: int
    section: int  # st_shndx


@dataclass(frozen=True, slots=True)
class Relocation:
    offset: int
    type: int
    symbol: int  # index into the symbol table
    addend: int


@dataclass(frozen=True)
class Cubin:
    data: bytes
    e_flags: int
    sections: tuple[Section, ...]
    symbols: tuple[Symbol, ...]

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def bytes_of(self, section: Section) -> bytes:
        return self.data[section.offset:section.offset + section.size]

    @cached_property
    def _relocation_sections(self) -> dict[int, tuple[Section, ...]]:
        # by the section they apply to: asked once per function, a scan of every section each time
        # made a cubin of n kernels cost n²
        out: dict[int, list[Section]] = {}
        for s in self.sections:
            if s.type in (SHT_RELA, SHT_REL) and s.size:
                out.setdefault(s.info, []).append(s)
        return {k: tuple(v) for k, v in out.items()}

    def relocations(self, target: Section) -> tuple[Relocation, ...]:
        """RELA/REL entries that apply to `target` (sections whose sh_info names it)."""
        out: list[Relocation] = []
        for s in self._relocation_sections.get(target.index, ()):
            step = 24 if s.type == SHT_RELA else 16
            raw = self.bytes_of(s)
            for k in range(0, len(raw) - step + 1, step):
                off, info = struct.unpack_from("<QQ", raw, k)
                addend = struct.unpack_from("<q", raw, k + 16)[0] if s.type == SHT_RELA else 0
                out.append(Relocation(off, info & 0xFFFFFFFF, info >> 32, addend))
        return tuple(out)


def read_cubin(data: bytes) -> Cubin:
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise CubinFormatError("not a little-endian ELF64 file")
    e_machine = struct.unpack_from("<H", data, 18)[0]
    if e_machine != EM_CUDA:
        raise CubinFormatError(f"ELF machine {e_machine} is not EM_CUDA")
    e_flags = struct.unpack_from("<I", data, 48)[0]
    e_shoff = struct.unpack_from("<Q", data, 40)[0]
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 58)
    if e_shoff + e_shnum * e_shentsize > len(data) or e_shstrndx >= e_shnum:
        raise CubinFormatError("truncated section table")
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    strtab_off = raw[e_shstrndx][4]
    sections = tuple(Section(i, _cstr(data, strtab_off + r[0]), r[1], r[2], r[4], r[5], r[6], r[7], r[9])
                     for i, r in enumerate(raw))
    symbols: tuple[Symbol, ...] = ()
    symtab = next((s for s in sections if s.type == SHT_SYMTAB), None)
    if symtab is not None:
        names = sections[symtab.link].offset
        syms = []
        for k in range(symtab.offset, symtab.offset + symtab.size, 24):
            st_name, st_info, st_other, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", data, k)
            syms.append(Symbol(_cstr(data, names + st_name), st_value, st_size, st_info & 0xF, st_info >> 4,
                               st_other, st_shndx))
        symbols = tuple(syms)
    return Cubin(data, e_flags, sections, symbols)


def _cstr(data: bytes, at: int) -> str:
    end = data.index(b"\0", at)
    return data[at:end].decode("utf-8", "replace")


def arch_of(cubin: Cubin) -> tuple[int, int]:
    """(major, minor) of the SASS target. CUDA 12.8+ cubins (ELF ABI version 8) keep the
    SM number in e_flags bits 8..15; older ones in bits 0..7."""
    abi = cubin.data[8]
    sm = (cubin.e_flags >> 8) & 0xFF if abi >= 8 else cubin.e_flags & 0xFF
    return sm // 10, sm % 10


# ---- .nv.info ---------------------------------------------------------------------------------

EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4


def nv_info(raw: bytes) -> list[tuple[int, bytes]]:
    """(attribute, value) records of one `.nv.info*` section, in order."""
    out, i = [], 0
    while i + 2 <= len(raw):
        fmt, attr = raw[i], raw[i + 1]
        if fmt == EIFMT_SVAL:
            n = struct.unpack_from("<H", raw, i + 2)[0]
            out.append((attr, raw[i + 4:i + 4 + n]))
            i += 4 + n
        elif fmt in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):  # a record of 4 bytes (NVAL's last two unused)
            out.append((attr, raw[i + 2:i + 4]))
            i += 4
        else:
            raise CubinFormatError(f"unknown .nv.info record format {fmt}")
    return out
