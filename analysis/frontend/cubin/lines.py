"""The SASS -> source line table, read from a `-lineinfo` cubin's `.debug_line`.

ptxas writes one DWARF (v2/v3) line program sequence per `.text` section, with NVIDIA's two
extended opcodes for inlining (the same codes elfutils' libdw reads):

- `DW_LNE_NVIDIA_inlined_call` (144): ULEB context, ULEB function name; the context is the
  1-based index of the row of the call site in the table, 0 when not inlined;
- `DW_LNE_NVIDIA_set_function_name` (145): ULEB function name (an offset into `.debug_str`).

A row's inline chain is its own location, then its context row's, and so on outwards: what
`nvdisasm -gi` prints as `File "A", line 3 inlined at "B", line 7`.
"""

from __future__ import annotations

import posixpath
import struct
from dataclasses import dataclass

from .elf import Cubin, CubinFormatError

DW_LNE_end_sequence, DW_LNE_set_address, DW_LNE_define_file = 1, 2, 3
DW_LNE_NVIDIA_inlined_call, DW_LNE_NVIDIA_set_function_name = 144, 145


@dataclass(frozen=True, slots=True)
class Row:
    section: int  # ELF section index of the code the address is in
    address: int  # byte offset in that section
    file: str
    line: int
    context: int  # 1-based index of the call site's row within this row's sequence; 0 when not inlined
    first: int  # index in the whole table of its sequence's first row


def line_rows(cubin: Cubin) -> tuple[Row, ...]:
    """Every row of `.debug_line`, in table order (the order contexts index)."""
    sec = cubin.section(".debug_line")
    if sec is None:
        return ()
    raw = cubin.bytes_of(sec)
    # DW_LNE_set_address operands are relocated against the section's symbol: the relocation
    # at that offset says which .text section the sequence describes.
    reloc_at = {r.offset: cubin.symbols[r.symbol].section for r in cubin.relocations(sec)}
    rows: list[Row] = []
    pos = 0
    while pos < len(raw):
        pos = _unit(raw, pos, reloc_at, rows)
    return tuple(rows)


def _uleb(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        byte = b[i]
        i += 1
        v |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return v, i


def _sleb(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        byte = b[i]
        i += 1
        v |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            if byte & 0x40:
                v -= 1 << shift
            return v, i


def _unit(b: bytes, start: int, reloc_at: dict[int, int], rows: list[Row]) -> int:
    unit_length = struct.unpack_from("<I", b, start)[0]
    if unit_length >= 0xFFFFFFF0:
        raise CubinFormatError("64-bit DWARF line table")
    end = start + 4 + unit_length
    version = struct.unpack_from("<H", b, start + 4)[0]
    if version not in (2, 3, 4):
        raise CubinFormatError(f"DWARF line table version {version}")
    header_length = struct.unpack_from("<I", b, start + 6)[0]
    i = start + 10
    program = i + header_length
    min_inst = b[i]
    i += 1
    if version >= 4:
        i += 1  # maximum_operations_per_instruction (1: no VLIW)
    i += 1  # default_is_stmt
    line_base = struct.unpack_from("<b", b, i)[0]
    line_range, opcode_base = b[i + 1], b[i + 2]
    lengths = b[i + 3:i + 2 + opcode_base]
    i += 2 + opcode_base
    dirs = [""]
    while b[i]:
        e = b.index(b"\0", i)
        dirs.append(b[i:e].decode("utf-8", "replace"))
        i = e + 1
    i += 1
    files = [""]
    while b[i]:
        e = b.index(b"\0", i)
        name = b[i:e].decode("utf-8", "replace")
        d, i = _uleb(b, e + 1)
        _, i = _uleb(b, i)  # mtime
        _, i = _uleb(b, i)  # length
        files.append(name if name.startswith("/") or d >= len(dirs) or not dirs[d] else f"{dirs[d]}/{name}")
    i = program
    section, address, file, line, context, first = -1, 0, 1, 1, 0, len(rows)
    while i < end:
        op = b[i]
        i += 1
        if op >= opcode_base:
            adj = op - opcode_base
            address += (adj // line_range) * min_inst
            line += line_base + adj % line_range
            rows.append(Row(section, address, files[file] if file < len(files) else "", line, context, first))
        elif op == 0:
            n, i = _uleb(b, i)
            sub, body = b[i], i + 1
            if sub == DW_LNE_end_sequence:
                section, address, file, line, context, first = -1, 0, 1, 1, 0, len(rows)
            elif sub == DW_LNE_set_address:
                address = int.from_bytes(b[body:i + n], "little")
                section = reloc_at.get(body, section)
            elif sub == DW_LNE_NVIDIA_inlined_call:
                context, _ = _uleb(b, body)
            elif sub == DW_LNE_define_file:
                raise CubinFormatError("DW_LNE_define_file")
            i += n
        elif op == 1:  # copy
            rows.append(Row(section, address, files[file] if file < len(files) else "", line, context, first))
        elif op == 2:
            v, i = _uleb(b, i)
            address += v * min_inst
        elif op == 3:
            v, i = _sleb(b, i)
            line += v
        elif op == 4:
            file, i = _uleb(b, i)
        elif op == 8:  # const_add_pc
            address += ((255 - opcode_base) // line_range) * min_inst
        elif op == 9:
            address += struct.unpack_from("<H", b, i)[0]
            i += 2
        else:  # column, negate_stmt, basic_block, prologue_end, epilogue_begin, isa: no effect here
            for _ in range(lengths[op - 1]):
                _, i = _uleb(b, i)
    return end


def inline_chain(rows: tuple[Row, ...], k: int) -> tuple[tuple[str, int], ...]:
    """(file, line) of row `k`, then of each call site it was inlined into, innermost first."""
    out = []
    seen = set()
    while True:
        r = rows[k]
        out.append((posixpath.normpath(r.file), r.line))
        nxt = r.first + r.context - 1
        if r.context <= 0 or nxt in seen or nxt >= len(rows):
            return tuple(out)
        seen.add(k)
        k = nxt
