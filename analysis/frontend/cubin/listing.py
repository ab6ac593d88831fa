"""A cubin read straight into the listing nvdisasm would print, without running nvdisasm.

`decode_cubin` rebuilds what `sass.parse_text_listing` reads from `nvdisasm -gi -hex -c`: per
`.text` section, in file order, each instruction's PC, text and encoding words, its inline
chain from the line table, the labels its branches name and the function symbols placed in
it. `sass.module_from_sections` turns that into the same `SassModule` either way.

Label names follow nvdisasm: a branch target that is a function symbol of the section is
named by it (`$kernel$callee`, the kernel itself for RET); any other target gets `.L_x_N`,
numbered across the whole file in section order, then in the order branches refer to them.
(nvdisasm numbers the labels it places at `.nv.info` instruction offsets and section ends
after all of those, and prints none of them in instruction text.)

Anything this reader cannot vouch for makes it return None, and the caller runs nvdisasm:
an architecture without a table, an instruction the table does not decode, a relocation in
code (its text names a symbol), a branch outside its section, an instruction annotation of a
kind it does not know (`.nv.info`; nvdisasm prints `(*"SpillRefill"*)` after a spill).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from ..instructions import SassModule
from ..sass import _loc, _TextInstr, _TextSection, module_from_sections
from .elf import STO_CUDA_ENTRY, STT_FUNC, Cubin, CubinFormatError, arch_of, nv_info, read_cubin
from .encoding import ArchTable, arch_table, decode_word
from .lines import inline_chain, line_rows


def decode_cubin(data: bytes, table: ArchTable | None = None) -> SassModule | None:
    """The cubin's SASS as `sass.parse_nvdisasm` would read it from nvdisasm, or None."""
    try:
        cubin = read_cubin(data)
        major, minor = arch_of(cubin)
        table = table or arch_table(f"sm_{major}{minor}")
        if table is None:
            return None
        sections = decode_sections(cubin, table)
    except (CubinFormatError, IndexError, ValueError, KeyError, struct.error):
        return None
    return None if sections is None else module_from_sections((major, minor), sections)


def decode_sections(cubin: Cubin, table: ArchTable) -> dict[str, _TextSection] | None:
    texts = [s for s in cubin.sections if s.name.startswith(".text.")]
    if any(cubin.relocations(s) for s in texts):
        return None
    rows = line_rows(cubin)
    rows_at: dict[int, dict[int, int]] = {}
    for k, r in enumerate(rows):
        rows_at.setdefault(r.section, {})[r.address] = k  # the last row at an address is the one printed
    decoded: list[tuple[_TextSection, list[tuple[int, str, int | None]]]] = []
    for sec in texts:
        raw = cubin.bytes_of(sec)
        if len(raw) % 16:
            return None
        name = sec.name[len(".text."):]
        funcs = sorted((s for s in cubin.symbols if s.section == sec.index and s.type == STT_FUNC),
                       key=lambda s: (s.value, s.name != name))
        out = _TextSection(name, is_entry=any(s.name == name and s.other & STO_CUDA_ENTRY for s in funcs))
        out.function_symbols = [s.name for s in funcs]
        starts = {s.value for s in funcs}
        notes = _annotations(cubin, name)
        if notes is None:
            return None
        lines = rows_at.get(sec.index, {})
        body: list[tuple[int, str, int | None]] = []
        chain: tuple = ()
        for pc in range(0, len(raw), 16):
            lo = int.from_bytes(raw[pc:pc + 8], "little")
            hi = int.from_bytes(raw[pc + 8:pc + 16], "little")
            d = decode_word(table, lo | (hi << 64), pc)
            if d is None:
                return None
            if d.target is not None and not 0 <= d.target < len(raw):
                return None
            if pc in starts:
                chain = ()  # nvdisasm's listing starts each function without a line
            k = lines.get(pc)
            if k is not None:
                row_chain = tuple(_loc(f, ln) for f, ln in inline_chain(rows, k))
                # nvdisasm prints a row, and so its call sites, only where the innermost line changes:
                # a row at the same file and line keeps the chain printed before it (CUB's
                # agent_reduce.cuh:390 inlined from line 424, then a row of it from line 425, lists
                # as from 424 on)
                if not chain or row_chain[0] != chain[0]:
                    chain = row_chain
            out.instrs.append(_TextInstr(pc, d.text, [lo, hi], chain, notes.get(pc, "")))
            body.append((pc, d.text, d.target))
        decoded.append((out, body))
    _name_targets(decoded, cubin)
    return {sec.name: sec for sec, _ in decoded}


#: `.nv.info` attribute listing (kind, instruction offset) pairs that nvdisasm prints as a note
#: after the instruction; the one kind seen so far, 1, is ptxas's register spills and refills
EIATTR_INSTR_ANNOTATIONS = 0x55
_ANNOTATION_KINDS = {1: "SpillRefill"}


def _annotations(cubin: Cubin, name: str) -> dict[int, str] | None:
    """The function's annotated instructions by offset; None for a kind this reader does not know."""
    info = cubin.section(f".nv.info.{name}")
    if info is None:
        return {}
    out = {}
    for attr, value in nv_info(cubin.bytes_of(info)):
        if attr != EIATTR_INSTR_ANNOTATIONS:
            continue
        for kind, pc in struct.iter_unpack("<II", value):
            if kind not in _ANNOTATION_KINDS:
                return None
            out[pc] = _ANNOTATION_KINDS[kind]
    return out


def _name_targets(decoded: list[tuple[_TextSection, list[tuple[int, str, int | None]]]], cubin: Cubin) -> None:
    counter = 0
    for sec, body in decoded:
        symbols: Mapping[int, str] = {}
        for s in cubin.symbols:
            if s.type == STT_FUNC and s.name in sec.function_symbols:
                symbols = {**symbols, s.value: symbols.get(s.value, s.name)}
        for pc, name in symbols.items():
            sec.labels[name] = pc
        names: dict[int, str] = {}
        for k, (pc, text, target) in enumerate(body):
            if target is None:
                continue
            name = symbols.get(target)
            if name is None:
                name = names.get(target)
                if name is None:
                    name = names[target] = f".L_x_{counter}"
                    counter += 1
                    sec.labels[name] = target
            sec.instrs[k].text = text.replace("{target}", name)
