"""SASS instruction encodings as data: one 128-bit word -> the text nvdisasm prints for it.

Volta and later encode every instruction in 128 bits (one architecture per table):

- bits 0..11: the opcode together with its operand form (register, immediate, constant or
  uniform register source), so they pick one row of the table (`OpcodeTable`);
- bits 12..15: the guard predicate (index, then negation; index 7 is PT, "always");
- bits 105..125: the control code (`sass.ControlCode`), whose top four bits are the operand
  reuse flags that nvdisasm prints as `.reuse` on a source operand (only when bit 109, the
  inverted yield flag, is set: a warp that may yield loses its reuse cache);
- the rest: operand fields (`Field`: registers, immediates, branch offsets) and the bits that
  choose modifiers, which, with the operand fields masked out, are the *residual* that selects
  a `Form`: the mnemonic with its modifiers and the operands' text with the fields' holes.

Nothing here is written by hand: `learn.py` derives each table from nvdisasm's own listings of
a corpus of compiled kernels, and `decode_word` answers only for opcodes, residuals, field
values and reuse flags that the corpus showed; anything else is `None` (the caller then asks
nvdisasm). `tests/frontend/test_cubin_decoder.py` checks every instruction of every cubin the test
suite's sources produce against nvdisasm.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

GUARD_SHIFT = 12
CONTROL_LO = 105  # first control bit (stall count); reuse flags are bits 122..125
REUSE_LO = 122
NO_YIELD = 109  # nvdisasm prints reuse flags only on instructions with this bit set
#: opcode, guard and control bits: never part of an operand field or the residual
FIXED_MASK = 0xFFFF | (((1 << 21) - 1) << CONTROL_LO)


@dataclass(frozen=True, slots=True)
class Field:
    """An operand field: `width` bits from bit `lo` of the 128-bit word (then `width2` more from
    `lo2`, for a branch offset split in two), printed by `fmt`.

    fmt: "R", "UR", "P", "UP", "B" (registers; the all-ones index is RZ/URZ/PT/UPT), "hexu",
    "hexs" (two's complement; both `<< shift`: before Hopper a constant-bank offset is held in
    words), "f32", "f64" (the upper half of a double), "f16" (immediates), "tgt"/"tgtu" (a
    signed/unsigned branch offset, `<< shift` bytes, from the next instruction).
    """

    lo: int
    width: int
    fmt: str
    shift: int = 0
    lo2: int = 0
    width2: int = 0

    @property
    def mask(self) -> int:
        return (((1 << self.width) - 1) << self.lo) | (((1 << self.width2) - 1) << self.lo2)

    @property
    def bits(self) -> int:
        return self.width + self.width2

    def value(self, word: int) -> int:
        v = (word >> self.lo) & ((1 << self.width) - 1)
        if self.width2:
            v |= ((word >> self.lo2) & ((1 << self.width2) - 1)) << self.width
        return v


@dataclass(frozen=True, slots=True)
class FloatStyle:
    """How nvdisasm prints floating-point immediates, as far as the corpus showed it.

    `%.20g` for magnitudes up to `plain_max`, `%.20e` from `exp_min` on; what lies between, and
    special values never seen (`specials`), are not decoded.
    """

    plain_max: float
    exp_min: float
    specials: frozenset[str]


def _sext(v: int, width: int) -> int:
    return v - (1 << width) if v >> (width - 1) & 1 else v


def format_value(field: Field, v: int, floats: FloatStyle) -> str | None:
    """The operand text of value `v` of `field`, or None where the corpus does not say."""
    fmt = field.fmt
    if fmt in ("R", "UR", "P", "UP", "B"):
        if v == (1 << field.width) - 1:
            return {"R": "RZ", "UR": "URZ", "P": "PT", "UP": "UPT"}.get(fmt)
        return f"{fmt}{v}"
    if fmt == "hexu":
        return f"0x{v << field.shift:x}"
    if fmt == "hexs":
        s = _sext(v, field.width) << field.shift
        return f"-0x{-s:x}" if s < 0 else f"0x{s:x}"
    if fmt == "f32":
        return _float(struct.unpack("<f", struct.pack("<I", v))[0], v >> 31, 23, v & 0x7FFFFF, floats)
    if fmt == "f64":
        return _float(struct.unpack("<d", struct.pack("<Q", v << 32))[0], v >> 31, 52, (v & 0xFFFFF) << 32, floats)
    if fmt == "f16":
        if v == 0x8000:  # nvdisasm's `-0.0 `, which no training word showed
            return None
        return _float(float(struct.unpack("<e", struct.pack("<H", v))[0]), v >> 15, 10, v & 0x3FF, floats)
    return None


def _float(x: float, sign: int, mant_bits: int, mantissa: int, floats: FloatStyle) -> str | None:
    if math.isinf(x) or math.isnan(x):
        if math.isinf(x):
            s = "-INF " if sign else "+INF "
        elif mantissa >> (mant_bits - 1) & 1:  # the quiet bit
            s = "-QNAN " if sign else "+QNAN "
        else:
            return None
        return s if s in floats.specials else None
    if x == 0 and sign:
        return "-0" if "-0" in floats.specials else None
    a = abs(x)
    if a <= floats.plain_max:
        return "%.20g" % x
    if a >= floats.exp_min:
        return "%.20e" % x
    return None


@dataclass(frozen=True, slots=True)
class Form:
    """One spelling of an opcode: its mnemonic and operands, with holes for the fields.

    `operands` are lists of parts: literal text or a field index. `fixed` pins the fields this
    form does not print to the values seen with it (the constant they hold for this spelling).

    Some spellings depend on operand values: nvdisasm prints `IMAD R3, R0, 0x4, R3` but
    `IMAD.MOV R3, R0, 0x0, R3` and `IMAD.IADD ... 0x1 ...`. Such a form lists the value classes
    (`value_class` of each field in `classed`) it was seen with; other words are not decoded.
    """

    mnemonic: str
    operands: tuple[tuple[str | int, ...], ...]
    fixed: tuple[tuple[int, frozenset[int]], ...]
    classed: tuple[int, ...] = ()
    classes: frozenset[tuple[int, ...]] = frozenset()

    def fits(self, fields: tuple[Field, ...], word: int) -> bool:
        if not all(fields[i].value(word) in allowed for i, allowed in self.fixed):
            return False
        return not self.classed or tuple(value_class(fields[i], fields[i].value(word)) for i in self.classed) \
            in self.classes


GENERIC = -2  # `value_class` of an ordinary value
ALL_ONES = -1  # RZ, URZ, PT, UPT


def value_class(field: Field, v: int) -> int:
    """The class of a field value for spellings that depend on values: a register is all-ones
    (RZ, PT) or not; an integer is itself when it is 0, all ones or a power of two (the values
    nvdisasm's aliases test: a multiply by 0, 1 or 2^k), else GENERIC."""
    ones = (1 << field.bits) - 1
    if field.fmt in ("R", "UR", "P", "UP", "B"):
        return ALL_ONES if v == ones else GENERIC
    if field.fmt in ("hexu", "hexs"):
        return ALL_ONES if v == ones else v if v & (v - 1) == 0 else GENERIC
    return GENERIC


@dataclass(frozen=True, slots=True)
class OpcodeTable:
    fields: tuple[Field, ...]
    mask: int  # FIXED_MASK | every field's bits: what the residual leaves out
    guarded: bool  # nvdisasm was seen printing a guard predicate on it
    reuse: dict[int, int]  # reuse bit (0..3) -> field index of the operand it marks
    reuse_gated: bool  # probed: with NO_YIELD clear, nvdisasm prints no reuse flag
    forms: dict[int, tuple[Form, ...]]  # residual -> candidate forms, most constrained first


@dataclass(frozen=True)
class ArchTable:
    arch: str  # "sm_90"
    opcodes: Mapping[int, OpcodeTable]
    floats: FloatStyle


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str  # as nvdisasm prints it, with "{target}" where a branch target's name goes
    target: int | None  # absolute byte offset of the branch target in the section


def decode_word(table: ArchTable, word: int, pc: int) -> Decoded | None:
    op = table.opcodes.get(word & 0xFFF)
    if op is None:
        return None
    forms = op.forms.get(word & ~op.mask & ((1 << 128) - 1))
    if forms is None:
        return None
    fields = op.fields
    form = next((f for f in forms if f.fits(fields, word)), None)
    if form is None:
        return None
    guard = (word >> GUARD_SHIFT) & 0xF
    prefix = ""
    if guard != 7:
        if not op.guarded:
            return None
        prefix = f"@{'!' if guard & 8 else ''}{'PT' if guard & 7 == 7 else f'P{guard & 7}'} "
    target = None
    ops: list[str] = []
    marked: dict[int, int] = {}  # operand index -> reuse flag count
    reuse = (word >> REUSE_LO) & 0xF
    for k, parts in enumerate(form.operands):
        if _rz_beside_uniform(parts, fields, word, form):
            return None
        out = []
        for p in parts:
            if isinstance(p, str):
                out.append(p)
                continue
            f = fields[p]
            v = f.value(word)
            if f.fmt in ("tgt", "tgtu"):
                target = pc + 16 + ((_sext(v, f.bits) if f.fmt == "tgt" else v) << f.shift)
                out.append("{target}")
                continue
            s = format_value(f, v, table.floats)
            if s is None:
                return None
            out.append(s)
        ops.append("".join(out))
    if reuse and not word >> NO_YIELD & 1:
        if not op.reuse_gated:
            return None
        reuse = 0
    if reuse:
        where = {fi: k for k, parts in enumerate(form.operands) for fi in parts if isinstance(fi, int)}
        for b in range(4):
            if reuse >> b & 1:
                fi = op.reuse.get(b)
                if fi is None or fi not in where:
                    return None
                marked[where[fi]] = 1
        ops = [with_reuse(o) if k in marked else o for k, o in enumerate(ops)]
    text = prefix + form.mnemonic + (" " + ", ".join(ops) if ops else "")
    return Decoded(text.rstrip(), target)


def _rz_beside_uniform(parts: tuple[str | int, ...], fields: tuple[Field, ...], word: int, form: Form) -> bool:
    """An address whose register is RZ beside a uniform register (`[R2.64+UR4]` with R2 = RZ):
    nvdisasm drops the RZ (`[UR4]`, sm_75's STG to a uniform address), a spelling a form learned
    from other registers does not know. Such a word is declined (nvdisasm lists it) unless the form
    was learned with its value classes, RZ among them."""
    for r, plus, u in zip(parts, parts[1:], parts[2:]):  # R, "+" (".64+"), UR inside one bracket
        if (isinstance(r, int) and isinstance(plus, str) and "+" in plus and "]" not in plus and isinstance(u, int)
                and fields[r].fmt == "R" and fields[u].fmt == "UR" and r not in form.classed
                and value_class(fields[r], fields[r].value(word)) == ALL_ONES):
            return True
    return False


def with_reuse(operand: str) -> str:
    """An operand with its reuse flag as nvdisasm prints it: at the end (`R4.reuse`, `-R4.reuse`,
    `|R4|.reuse`) but before a half-precision swizzle (`R15.reuse.H0_H0`)."""
    head, dot, swizzle = operand.rpartition(".")
    return f"{head}.reuse.{swizzle}" if dot and _SWIZZLE.fullmatch(swizzle) else operand + ".reuse"


_SWIZZLE = re.compile(r"H[01]_H[01]")


# ---- the tables on disk -------------------------------------------------------------------------

TABLE_DIR = "sass_encodings"  # under analysis/data/


def table_to_json(t: ArchTable) -> dict:
    return {
        "arch": t.arch,
        "floats": {"plain_max": t.floats.plain_max, "exp_min": t.floats.exp_min,
                   "specials": sorted(t.floats.specials)},
        "opcodes": {f"{code:03x}": {
            "fields": [[f.lo, f.width, f.fmt, f.shift, f.lo2, f.width2] for f in o.fields],
            "guarded": o.guarded,
            "reuse": {str(b): fi for b, fi in sorted(o.reuse.items())},
            "reuse_gated": o.reuse_gated,
            "forms": {f"{res:x}": [[f.mnemonic, [list(p) for p in f.operands],
                                    [[i, sorted(a)] for i, a in f.fixed], list(f.classed),
                                    sorted(list(c) for c in f.classes)] for f in forms]
                      for res, forms in sorted(o.forms.items())},
        } for code, o in sorted(t.opcodes.items())},
    }


def table_from_json(d: dict) -> ArchTable:
    fl = d["floats"]
    return ArchTable(d["arch"], _Opcodes({int(code, 16): o for code, o in d["opcodes"].items()}),
                     FloatStyle(fl["plain_max"], fl["exp_min"], frozenset(fl["specials"])))


class _Opcodes(Mapping[int, OpcodeTable]):
    """An architecture's opcode tables, each built from its JSON the first time a word asks for it:
    a cubin uses a few dozen of the ~160 opcodes, and building all of them (thousands of forms)
    cost ~60 ms, more than decoding the cubin, in every short-lived command-line process."""

    def __init__(self, raw: dict[int, dict]) -> None:
        self._raw = raw
        self._built: dict[int, OpcodeTable] = {}

    def __getitem__(self, code: int) -> OpcodeTable:
        got = self._built.get(code)
        if got is None:
            got = self._built[code] = _opcode_from_json(self._raw[code])
        return got

    def __iter__(self):
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def _opcode_from_json(o: dict) -> OpcodeTable:
    fields = tuple(Field(*f) for f in o["fields"])
    mask = FIXED_MASK
    for f in fields:
        mask |= f.mask
    forms = {int(res, 16): tuple(Form(m, tuple(tuple(p) for p in ops), tuple((i, frozenset(a)) for i, a in fixed),
                                      tuple(classed), frozenset(tuple(c) for c in classes))
                                 for m, ops, fixed, classed, classes in fl) for res, fl in o["forms"].items()}
    return OpcodeTable(fields, mask, o["guarded"], {int(b): fi for b, fi in o["reuse"].items()}, o["reuse_gated"],
                       forms)


@lru_cache(maxsize=None)
def arch_table(arch: str) -> ArchTable | None:
    """The learned table for `arch` ("sm_90"), or None when the corpus had no cubins for it."""
    try:
        raw = resources.files("kernelscope.analysis").joinpath("data", TABLE_DIR, f"{arch}.json.gz").read_bytes()
    except (FileNotFoundError, OSError):
        return None
    return table_from_json(json.loads(gzip.decompress(raw)))
