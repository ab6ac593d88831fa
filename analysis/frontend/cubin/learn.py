"""Learning the encoding tables from nvdisasm: `python -m kernelscope.analysis.frontend.cubin.learn`.

For each architecture, every `.cu` file of a corpus (by default the repository's examples and
test sources) is compiled by the pipeline's own compile step, disassembled by nvdisasm, and
each instruction's 128-bit word is lined up with the text nvdisasm printed for it:

1. the text is cut into the mnemonic and operands, and each number in the operands into a
   *hole* (register, hexadecimal or floating-point immediate, branch target);
2. per opcode (bits 0..11), a hole's *field* is the bit range whose value prints as the hole
   in every instance of that spelling; a field ambiguous in one spelling is settled by the
   fields the opcode's other spellings pinned down, and a hole that never varies stays text;
3. with the fields masked out, the remaining bits (the residual) key the spellings;
4. every training instance is decoded back with the finished table, and a spelling that does
   not reproduce nvdisasm's text exactly is dropped, so the table only claims what it can
   reproduce.

The output is `analysis/data/sass_encodings/<arch>.json.gz`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..sass import parse_text_listing, top_level_pieces
from .encoding import (CONTROL_LO, FIXED_MASK, NO_YIELD, REUSE_LO, ArchTable, Field, FloatStyle, Form, OpcodeTable,
                       decode_word, format_value, table_to_json, value_class)

_HOLE = re.compile(r"(?P<tgt>`\((?P<label>[^)]*)\))"
                   r"|(?<![\w.])(?P<reg>UR|R)(?P<ridx>\d+|Z)(?!\w)"
                   r"|(?<![\w.])(?P<pred>UP|P)(?P<pidx>\d|T)(?!\w)"
                   r"|(?<![\w.])(?P<bar>B)(?P<bidx>\d+)(?!\w)"
                   r"|(?P<hex>-?0x[0-9a-f]+)"
                   r"|(?<![\w.])(?P<flt>[-+](?:INF|QNAN|NAN) ?|-?\d+(?:\.\d+)?(?:e[+-]\d+)?)(?![\w.])")
_WIDTH = {"R": 8, "UR": 6, "P": 3, "UP": 3, "B": 4}  # before probing; UR is 8 on Blackwell
_FLOAT_FIELDS = (("f32", 32), ("f64", 32), ("f16", 16))
_DEBUG = False
_ALL_ONES = -1  # RZ, URZ, PT, UPT: the register field's all-ones value, whatever its width
_LEARN_FLOATS = FloatStyle(float("inf"), 0.0, frozenset({"+INF ", "-INF ", "+QNAN ", "-QNAN ", "-0"}))


@dataclass
class Hole:
    kind: str  # "R", "UR", "P", "UP", "B", "hex", "flt", "tgt"
    printed: str
    value: int | None  # register index / integer / target pc; None for floats


@dataclass
class Instance:
    word: int
    pc: int
    text: str
    guard: int  # bits 12..15 as printed
    mnemonic: str
    operands: tuple[tuple[str | int, ...], ...]  # literal text and hole numbers
    holes: list[Hole]
    reuse_ops: frozenset[int]  # operand indices printed with .reuse
    section: str

    @property
    def key(self) -> tuple:
        kinds = tuple(h.kind for h in self.holes)
        return self.mnemonic, self.operands, kinds


def _split_operands(text: str) -> list[str]:
    out = top_level_pieces(text)
    # nvdisasm separates operands with ", " and pads some (`+INF , PT`): keep that padding.
    return [o[1:] if k and o.startswith(" ") else o for k, o in enumerate(out)]


#: a relocated operand names a symbol (`32@lo((kernel + .L_x_0@srel))`): the decoder declines any
#: cubin with relocations in code, and each symbol name would make a spelling of its own
_RELOCATED = re.compile(r"@(?:lo|hi|srel)\b")


def parse_instance(word: int, pc: int, text: str, labels: dict[str, int], section: str) -> Instance | None:
    if _RELOCATED.search(text):
        return None
    guard = 7
    rest = text
    if rest.startswith("@"):
        g, _, rest = rest.partition(" ")
        m = re.fullmatch(r"@(!?)P([0-6T])", g)
        if m is None:
            return None
        guard = (8 if m[1] else 0) | (7 if m[2] == "T" else int(m[2]))
    mnemonic, _, ops_text = rest.partition(" ")
    raw_ops = _split_operands(ops_text) if ops_text else []
    holes: list[Hole] = []
    operands = []
    reuse = set()
    for k, op in enumerate(raw_ops):
        if op.endswith(".reuse"):
            reuse.add(k)
            op = op[:-len(".reuse")]
        elif ".reuse." in op:  # before a swizzle: `R15.reuse.H0_H0` (encoding.with_reuse)
            reuse.add(k)
            op = op.replace(".reuse", "", 1)
        if ".reuse" in op:
            return None
        parts: list[str | int] = []
        pos = 0
        for m in _HOLE.finditer(op):
            if m.start() > pos:
                parts.append(op[pos:m.start()])
            pos = m.end()
            if m["tgt"]:
                label = m["label"]
                if label not in labels:
                    return None
                holes.append(Hole("tgt", label, labels[label]))
                parts += ["`(", len(holes) - 1, ")"]
                continue
            elif m["reg"]:
                holes.append(Hole(m["reg"], m[0], _ALL_ONES if m["ridx"] == "Z" else int(m["ridx"])))
            elif m["pred"]:
                holes.append(Hole(m["pred"], m[0], _ALL_ONES if m["pidx"] == "T" else int(m["pidx"])))
            elif m["bar"]:
                holes.append(Hole("B", m[0], int(m["bidx"])))
            elif m["hex"]:
                holes.append(Hole("hex", m[0], int(m[0], 16)))
            else:
                holes.append(Hole("flt", m[0], None))
            parts.append(len(holes) - 1)
        if pos < len(op):
            parts.append(op[pos:])
        operands.append(tuple(parts))
    return Instance(word, pc, text, guard, mnemonic, tuple(operands), holes, frozenset(reuse), section)


# ---- nvdisasm on raw words: what each bit of an instruction does -------------------------------

_RAW_LINE = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s*(.*?)\s*$")
_RAW_ADDR = re.compile(r"at address 0x([0-9a-f]+)")


def raw_disassemble(nvdisasm: Path, arch: str, words: Sequence[int], chunk: int = 8192,
                    jobs: int = 2) -> list[tuple[int, str] | None]:
    """(address, text) nvdisasm printed for each 128-bit word (`-b SMxy`: branch targets are
    printed as addresses); None for a word nvdisasm rejects. nvdisasm prints nothing for a run
    with an illegal word, but names the address of every one it rejects, so a chunk is retried
    once without all of them (bisected only when the errors name none)."""
    sm = "SM" + arch.removeprefix("sm_").upper()

    def run(idx: list[int]) -> dict[int, tuple[int, str] | None]:
        got: dict[int, tuple[int, str] | None] = {}
        while idx:
            with tempfile.NamedTemporaryFile(suffix=".bin") as f:
                f.write(b"".join((words[k]).to_bytes(16, "little") for k in idx))
                f.flush()
                r = subprocess.run([str(nvdisasm), "-b", sm, f.name], capture_output=True, text=True)
            lines = [m for m in (_RAW_LINE.match(ln) for ln in r.stdout.splitlines()) if m]
            if r.returncode == 0 and len(lines) == len(idx):
                got.update((k, (int(m[1], 16), m[2].rstrip(" ;"))) for k, m in zip(idx, lines))
                return got
            at = [int(m[1], 16) for m in lines]
            if r.returncode == 0 and at == sorted(set(at)) and all(a % 16 == 0 and a // 16 < len(idx) for a in at):
                # some words print nothing and no error (sm_90's LDSM with some modifier bits):
                # each line's address says whose it is, so the silent ones need no bisection
                # (which cost ~26 runs of 0.35 s each per silent word in a chunk)
                printed = {a // 16: m[2].rstrip(" ;") for a, m in zip(at, lines)}
                got.update((k, (16 * n, printed[n]) if n in printed else None) for n, k in enumerate(idx))
                return got
            bad = {a // 16 for a in (int(m, 16) for m in _RAW_ADDR.findall(r.stderr))} & set(range(len(idx)))
            if not bad:
                if len(idx) == 1:
                    got[idx[0]] = None
                    return got
                got.update(run(idx[:len(idx) // 2]))
                idx = idx[len(idx) // 2:]
                continue
            got.update((idx[b], None) for b in bad)
            idx = [k for n, k in enumerate(idx) if n not in bad]
        return got

    chunks = [list(range(k, min(k + chunk, len(words)))) for k in range(0, len(words), chunk)]
    out: list[tuple[int, str] | None] = [None] * len(words)
    with ThreadPoolExecutor(jobs) as ex:
        for got in ex.map(run, chunks):
            for k, t in got.items():
                out[k] = t
    return out


def _raw_key(key: tuple) -> tuple:
    """The spelling of `key` as nvdisasm prints it for raw words: branch targets as numbers."""
    mnemonic, operands, kinds = key
    ops = []
    for parts in operands:
        out: list[str | int] = []
        for p in parts:
            if p == "`(" or p == ")" and out and isinstance(out[-1], int) and kinds[out[-1]] == "tgt":
                continue
            out.append(p)
        ops.append(_merge_literals(out))
    return mnemonic, tuple(ops), tuple("hex" if k == "tgt" else k for k in kinds)


def _raw_instance(printed: tuple[int, str] | None) -> Instance | None:
    if printed is None:
        return None
    i = parse_instance(0, printed[0], printed[1], {}, "")
    if i is not None:
        i = Instance(i.word, i.pc, i.text, i.guard, i.mnemonic, tuple(_merge_literals(p) for p in i.operands),
                     i.holes, i.reuse_ops, i.section)
    return i


@dataclass
class _Probe:
    """What flipping each bit of one instance did to nvdisasm's text."""

    weights: dict[int, dict[int, int]]  # hole -> {bit: signed weight exponent (negative: sign bit)}
    floats: dict[int, set[int]]  # float hole -> bits that changed it
    sensitive: set[int] = field(default_factory=set)  # holes whose value alone changed the spelling
    neighbors: list[Instance] = field(default_factory=list)  # one flip away, spelled otherwise
    guarded: bool = False  # nvdisasm prints `@P0 ` / `@!P0 ` before it for guards P0 / !P0
    reuse: dict[int, frozenset[int]] = field(default_factory=dict)  # reuse bit -> operands marked
    reuse_gated: bool = False  # with NO_YIELD clear, all four reuse flags print nothing


def probe(nvdisasm: Path, arch: str, reps: Sequence[Instance]) -> list[_Probe | None]:
    """Flip each operand/modifier bit (16..104) of each representative instance, one at a time.

    nvdisasm rejects a whole run for one illegal word, so bits that are illegal in most of a
    first sample (reserved bits, such as bit 91 on sm_90) are not flipped in the others."""
    sample = sorted({k * len(reps) // 8 for k in range(8)}) if reps else []
    every = list(range(16, CONTROL_LO))
    first = raw_disassemble(nvdisasm, arch, [reps[n].word ^ (1 << b) for n in sample for b in every])
    illegal = [sum(first[m * len(every) + k] is None for m in range(len(sample))) for k in range(len(every))]
    bits = [b for k, b in enumerate(every) if illegal[k] * 8 < len(sample) * 7 or not sample]
    words = []
    for r in reps:
        words.append(r.word)
        words += [r.word ^ (1 << b) for b in bits]
        plain = r.word & ~(0xF << 12) & ~(0xF << REUSE_LO)
        words += [plain | (7 << 12), plain, plain | (8 << 12)]  # guards PT, P0, !P0
        gated = plain | (7 << 12) | (1 << NO_YIELD)
        words += [gated | (1 << (REUSE_LO + b)) for b in range(4)]
        words += [(gated ^ (1 << NO_YIELD)) | (0xF << REUSE_LO)]
    texts = raw_disassemble(nvdisasm, arch, words)
    step = len(bits) + 9
    probes: list[_Probe | None] = []
    bases: list[Instance | None] = []
    moved: list[list[int]] = []  # per rep: bits whose flip changed the spelling
    for n, r in enumerate(reps):
        base = _raw_instance(texts[n * step])
        want = _raw_key(r.key)
        bases.append(base if base is not None and base.key == want else None)
        moved.append([])
        if bases[-1] is None:
            probes.append(None)
            continue
        pr = _Probe(defaultdict(dict), defaultdict(set))
        for k, b in enumerate(bits):
            v = _raw_instance(texts[n * step + k + 1])
            if v is not None and v.key != want:
                moved[-1].append(b)
                pr.neighbors.append(Instance(r.word ^ (1 << b), v.pc, v.text, v.guard, v.mnemonic, v.operands,
                                             v.holes, v.reuse_ops, ""))
            elif v is not None:
                _record(pr, base, v, r, b, None)
        at = n * step + len(bits) + 1
        unguarded, p0, not_p0 = (texts[at + g][1] if texts[at + g] else None for g in range(3))
        pr.guarded = unguarded is not None and p0 == "@P0 " + unguarded and not_p0 == "@!P0 " + unguarded
        for b in range(4):
            v = _raw_instance(texts[at + 3 + b])
            if v is not None and v.key == want:
                pr.reuse[b] = v.reuse_ops
        v = _raw_instance(texts[at + 7])
        pr.reuse_gated = v is not None and v.key == want and not v.reuse_ops
        probes.append(pr)
    # A flip that zeroes a field (0x4 -> 0) changes the spelling (`[R4.64]`, `IMAD.MOV`), so it
    # hides its bit: flip those again together with the field's two lowest known bits, which
    # leaves a value with several bits set (not 0, 1 or 2^k, where nvdisasm's aliases are).
    second: list[tuple[int, int, int, tuple[int, ...]]] = []  # rep, hole, bit, known bits
    for n, pr in enumerate(probes):
        if pr is None:
            continue
        for j, ws in pr.weights.items():
            lo, hi = min(ws), max(ws)
            refs = tuple(sorted(ws, key=lambda b: abs(ws[b]))[:2])
            second += [(n, j, b, refs) for b in moved[n] if lo - 2 <= b <= hi + 2]
    if second:
        texts2 = raw_disassemble(nvdisasm, arch, [reps[n].word ^ (1 << b) ^ sum(1 << r for r in refs)
                                                  for n, _, b, refs in second])
        for (n, j, b, refs), t in zip(second, texts2):
            v = _raw_instance(t)
            pr, base = probes[n], bases[n]
            if v is not None and pr is not None and base is not None and v.key == base.key:
                if _record(pr, base, v, reps[n], b, (j, tuple(pr.weights[j][r] for r in refs))):
                    pr.sensitive.add(j)
    return [None if pr is None else _Probe(dict(pr.weights), dict(pr.floats), pr.sensitive, pr.neighbors,
                                           pr.guarded, pr.reuse, pr.reuse_gated) for pr in probes]


def _record(pr: _Probe, base: Instance, v: Instance, rep: Instance, bit: int,
            ref: tuple[int, tuple[int, ...]] | None) -> bool:
    """Note which hole flipping `bit` (and, with `ref`, known bits of that hole too) changed, and by what."""
    changed = [j for j, (h0, h1) in enumerate(zip(base.holes, v.holes))
               if (h0.value - base.pc != h1.value - v.pc if rep.holes[j].kind == "tgt" else h0.printed != h1.printed)]
    if len(changed) != 1 or ref is not None and changed[0] != ref[0]:
        return False
    j = changed[0]
    h0, h1 = base.holes[j], v.holes[j]
    if h0.kind == "flt":
        if ref is None:
            pr.floats[j].add(bit)
        return ref is None
    a, c = h0.value, h1.value
    if _ALL_ONES in (a, c) and h0.kind in _WIDTH:
        other = c if a == _ALL_ONES else a
        widths = (6, 8) if h0.kind == "UR" else (_WIDTH[h0.kind],)
        w = next((w for w in widths if other < (1 << w) and ((1 << w) - 1) ^ other in (1 << k for k in range(w))),
                 widths[-1])
        a, c = (1 << w) - 1, other
    if rep.holes[j].kind == "tgt":  # printed as an address: compare offsets from the next instruction
        a, c = a - (base.pc + 16), c - (v.pc + 16)
    d = a ^ c
    for k in ref[1] if ref is not None else ():
        d ^= -(1 << (-k - 1)) if k < 0 else 1 << k
    if d > 0 and d & (d - 1) == 0:
        pr.weights[j][bit] = d.bit_length() - 1
    elif d < 0 and (-d) & (-d - 1) == 0:
        pr.weights[j][bit] = -(-d).bit_length()  # the sign bit: -(k + 1) for bit k
    else:
        return False
    return True


def field_from_probe(kind: str, weights: dict[int, int]) -> Field | None:
    """The field whose bits the probe found, if they form at most two runs of consecutive weights."""
    if not weights:
        return None
    signed = any(k < 0 for k in weights.values())
    order = sorted(weights.items(), key=lambda bk: bk[1] if bk[1] >= 0 else -bk[1] - 1)
    exps = [k if k >= 0 else -k - 1 for _, k in order]
    shift = exps[0]
    if exps != list(range(shift, shift + len(exps))) or signed and weights[order[-1][0]] >= 0:
        return None  # a weight is missing, or the sign is not the top bit
    if shift and kind not in ("tgt", "hex"):
        return None
    runs: list[list[int]] = []
    for b, _ in order:
        if runs and b == runs[-1][-1] + 1:
            runs[-1].append(b)
        else:
            runs.append([b])
    if len(runs) > 2:
        return None
    lo, width = runs[0][0], len(runs[0])
    lo2, width2 = (runs[1][0], len(runs[1])) if len(runs) == 2 else (0, 0)
    if kind in _WIDTH:
        if signed or width + width2 != _register_width(kind, width + width2):
            return None
        return Field(lo, width, kind, 0, lo2, width2)
    if kind == "tgt":
        return Field(lo, width, "tgt" if signed else "tgtu", shift, lo2, width2)
    return Field(lo, width, "hexs" if signed else "hexu", shift, lo2, width2)


def _register_width(kind: str, probed: int) -> int:
    # Uniform registers have 6 bits before Blackwell and 8 after: the probe decides.
    return probed if kind == "UR" and probed in (6, 8) else _WIDTH[kind]


def _float_field(insts: Sequence[Instance], j: int, changed: set[int]) -> Field | None:
    # The sign bit and the exponent's top bit may go unseen: a flip of either can make a zero, an
    # infinity or a NaN (-2 -> `-0.0 `, 1.44 -> `+SNAN `), which nvdisasm pads or names otherwise
    # and a probe reads as another spelling (on 2026-11-27 a representative of -2 left sm_90's
    # `FFMA R3, R3, 0.25, R0` without a field); every instance must still print as the field says.
    for fmt, w in _FLOAT_FIELDS:
        lo = min(changed) if changed else 0
        f = Field(lo, w, fmt)
        unseen = {lo + w - 1, lo + w - 2}
        if changed and changed <= set(range(lo, lo + w)) and set(range(lo, lo + w)) - changed <= unseen and \
                all(_float_matches(f, i.word, i.holes[j].printed) for i in insts):
            return f
    return None


def _float_matches(f: Field, word: int, printed: str) -> bool:
    v = f.value(word)
    s = format_value(f, v, _LEARN_FLOATS)
    if s is not None and s.strip() == printed.strip():
        return True
    alt = format_value(f, v, FloatStyle(0.0, 0.0, frozenset()))  # the %.20e spelling
    return alt is not None and alt == printed


# ---- one opcode -------------------------------------------------------------------------------

@dataclass
class _Spelling:
    insts: list[Instance]
    fields: list[Field | None]  # per hole; None: stays literal text (a constant)
    ok: bool = True
    sensitive: bool = False  # nvdisasm spells it otherwise for some values of its fields
    seen: list[int] = field(default_factory=list)  # words nvdisasm spelled this way when probed
    guarded: bool = False  # probed: a guard predicate prints as `@P0 `
    reuse: dict[int, frozenset[int]] = field(default_factory=dict)  # probed: reuse bit -> operands marked
    reuse_gated: bool = False  # probed: without NO_YIELD no reuse flag prints
    probed: bool = False  # its representative's bits were flipped (not a spelling found by probing)


_INT_FORMATS = ("R", "UR", "P", "UP", "B", "hexu", "hexs")


def _with_value(word: int, f: Field, v: int) -> int:
    word &= ~f.mask
    word |= (v & ((1 << f.width) - 1)) << f.lo
    if f.width2:
        word |= ((v >> f.width) & ((1 << f.width2) - 1)) << f.lo2
    return word


def _test_values(f: Field) -> list[int]:
    """Values that trigger nvdisasm's aliases (0, 1, 2^k, all ones) and a few ordinary ones."""
    ones = (1 << f.bits) - 1
    if f.fmt in ("R", "UR", "P", "UP", "B"):
        return sorted({ones, 1 % ones, 2 % ones, 5 % ones})
    return sorted({0, ones, ones - 1, 3, 5, 0x123 & ones, 0x5A5A5A5A & ones} | {1 << k for k in range(f.bits)})


def _representative(insts: Sequence[Instance]) -> Instance:
    # The instance whose holes differ most from each other and from all-ones (RZ, PT) tells the
    # most when its bits are flipped.
    return max(insts, key=lambda i: (len({h.printed for h in i.holes}),
                                     -sum(h.printed in ("RZ", "URZ", "PT", "UPT") for h in i.holes)))


def learn_opcode(spellings: dict[tuple, _Spelling], unknown: dict[int, list[int]] | None = None) -> OpcodeTable:
    """The table of one opcode. `unknown`: per residual, probed words nvdisasm spelled in a way
    no spelling covers (their value classes then decode nothing)."""
    unknown = unknown or {}
    known: list[Field] = []
    for sp in spellings.values():
        if sp.ok:
            known += [f for f in sp.fields if f is not None and f not in known]
    fields = sorted(known, key=lambda f: (f.lo, f.width, f.fmt, f.shift, f.lo2, f.width2))
    index = {f: k for k, f in enumerate(fields)}
    mask = FIXED_MASK
    for f in fields:
        mask |= f.mask
    reuse = _reuse_map(spellings)
    guarded = any(i.guard != 7 for sp in spellings.values() for i in sp.insts) or \
        any(sp.guarded for sp in spellings.values() if sp.ok)
    forms: dict[int, list[tuple[Form, _Spelling]]] = defaultdict(list)
    for key, sp in spellings.items():
        if not sp.ok:
            continue
        used = {f for f in sp.fields if f is not None}
        fixed = []
        for f in fields:
            if f in used or any(f.mask & u.mask for u in used):
                continue
            fixed.append((index[f], frozenset(f.value(i.word) for i in sp.insts)))
        operands = tuple(_merge_literals(p if isinstance(p, str) else (index[sp.fields[p]] if sp.fields[p] is not None
                                                                       else sp.insts[0].holes[p].printed)
                                         for p in parts) for parts in key[1])
        form = Form(key[0], operands, tuple(fixed))
        for r in {w & ~mask for w in [i.word for i in sp.insts] + sp.seen}:
            forms[r].append((form, sp))
    table_forms = {}
    for r, fl in forms.items():
        if any(sp.sensitive for _, sp in fl) or len(fl) > 1:
            fl = _classed(fl, fields, r, mask, unknown.get(r, []))
        if ordered := _order(fl, fields, r, mask):
            table_forms[r] = ordered
    gates = [sp.reuse_gated for sp in spellings.values() if sp.ok and sp.probed]
    reuse_gated = bool(gates) and all(gates)
    return OpcodeTable(tuple(fields), mask, guarded, {b: index[f] for b, f in reuse.items() if f in index},
                       reuse_gated, table_forms)


def _classed(entries: list[tuple[Form, _Spelling]], fields: list[Field], residual: int, mask: int,
             unknown: list[int]) -> list[tuple[Form, _Spelling]]:
    """Forms of one residual that value classes must tell apart: each keeps the class tuples its
    own words (training and probes) showed and no other spelling, known or not, showed."""
    classed = tuple(sorted({p for form, _ in entries for parts in form.operands for p in parts
                            if isinstance(p, int) and fields[p].fmt in _INT_FORMATS}))

    def cls(word: int) -> tuple[int, ...]:
        return tuple(value_class(fields[i], fields[i].value(word)) for i in classed)

    claimed: dict[tuple[int, ...], set[int]] = defaultdict(set)
    for k, (_, sp) in enumerate(entries):
        for w in [i.word for i in sp.insts] + sp.seen:
            if w & ~mask == residual:
                claimed[cls(w)].add(k)
    for w in unknown:
        claimed[cls(w)].add(-1)
    out = []
    for k, (form, sp) in enumerate(entries):
        own = frozenset(c for c, who in claimed.items() if who == {k})
        out.append((Form(form.mnemonic, form.operands, form.fixed, classed, own), sp))
    return out


def _order(entries: list[tuple[Form, _Spelling]], fields: list[Field], residual: int, mask: int) -> tuple[Form, ...]:
    """The forms sharing one residual, in the order `decode_word` tries them: a form goes before
    another whose pinned fields some of its own words satisfy. Forms in a cycle are dropped."""
    ftuple = tuple(fields)

    def fits(word: int, form: Form) -> bool:
        return form.fits(ftuple, word)

    n = len(entries)
    words = [[w for w in [i.word for i in sp.insts] + sp.seen if w & ~mask == residual] for _, sp in entries]
    first = {a: {b for b in range(n) if b != a and any(fits(w, entries[b][0]) for w in words[a])} for a in range(n)}
    order: list[int] = []
    left = set(range(n))
    while left:
        free = [a for a in sorted(left) if not any(a in first[x] for x in left if x != a)]
        if not free:
            break
        order.append(free[0])
        left.discard(free[0])
    return tuple(entries[a][0] for a in order)


def _merge_literals(parts: Iterable[str | int]) -> tuple[str | int, ...]:
    out: list[str | int] = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    return tuple(out)


def _reuse_map(spellings: dict[tuple, _Spelling]) -> dict[int, Field]:
    """Reuse bit -> field: the register field of the operand nvdisasm marks when the bit is set."""
    cand: dict[int, set[Field] | None] = {b: None for b in range(4)}
    for key, sp in spellings.items():
        if not sp.ok:
            continue
        op_fields = [{sp.fields[p] for p in parts if isinstance(p, int) and sp.fields[p] is not None
                      and sp.fields[p].fmt in ("R", "UR")} for parts in key[1]]
        seen = [((i.word >> REUSE_LO) & 0xF, i.reuse_ops) for i in sp.insts if i.word >> NO_YIELD & 1] + \
            [(1 << b, ops) for b, ops in sp.reuse.items()]
        for bits, ops in seen:
            if any(not op_fields[k] for k in ops):
                continue  # a marked operand this spelling prints as text (RZ): it says nothing
            marked = set().union(*(op_fields[k] for k in ops)) if ops else set()
            for b in range(4):
                if bits >> b & 1:
                    cand[b] = set(marked) if cand[b] is None else cand[b] & marked
    settled: dict[int, Field] = {}
    for _ in range(4):
        for b, cs in cand.items():
            if cs is None or b in settled:
                continue
            left = cs - set(settled.values())
            if len(left) == 1:
                settled[b] = next(iter(left))
    return settled


# ---- one architecture ---------------------------------------------------------------------------

def learn_arch(arch: str, listings: Iterable[str], nvdisasm: Path,
               borrowed: Iterable[int] = ()) -> tuple[ArchTable, dict[str, int]]:
    """The table for `arch` from nvdisasm listings, and counts of what the training words held.

    `borrowed`: words of other architectures' corpora; those whose opcode this one's corpus has
    (and that are not branches) are disassembled for `arch` and, where nvdisasm accepts them,
    learned from too: the architectures share most encodings, so one corpus teaches all."""
    by_key: dict[tuple[int, tuple], list[Instance]] = defaultdict(list)
    stats: dict[str, int] = defaultdict(int)
    seen: set[tuple[int, int, str]] = set()
    for text in listings:
        _, sections = parse_text_listing(text)
        for sec in sections.values():
            labels = dict(sec.labels)
            for t in sec.instrs:
                word = t.words[0] | (t.words[1] << 64)
                stats["instructions"] += 1
                inst = parse_instance(word, t.pc, t.text, labels, sec.name)
                if inst is None:
                    stats["unparsed"] += 1
                    continue
                if (word, t.pc, t.text) in seen:
                    continue
                seen.add((word, t.pc, t.text))
                by_key[(word & 0xFFF, inst.key)].append(inst)
    branches = {code for code, key in by_key if "tgt" in key[2]}
    opcodes = {code for code, _ in by_key}
    own = {i.word for insts in by_key.values() for i in insts}
    extra = sorted({w for w in borrowed if w & 0xFFF in opcodes and w & 0xFFF not in branches and w not in own})
    for word, printed in zip(extra, raw_disassemble(nvdisasm, arch, extra)):
        inst = None if printed is None else parse_instance(word, printed[0], printed[1], {}, "")
        if inst is not None:
            stats["borrowed"] += 1
            by_key[(word & 0xFFF, inst.key)].append(inst)
    keys = sorted(by_key, key=repr)
    reps = [_representative(by_key[k]) for k in keys]
    probes = probe(nvdisasm, arch, reps)
    spellings: dict[int, dict[tuple, _Spelling]] = defaultdict(dict)
    for k, pr in zip(keys, probes):
        insts = by_key[k]
        sp = _Spelling(insts, [None] * len(insts[0].holes))
        spellings[k[0]][k[1]] = sp
        if pr is None:
            sp.ok = False
            continue
        for j, h in enumerate(insts[0].holes):
            if h.kind == "flt":
                f = _float_field(insts, j, pr.floats.get(j, set()))
            else:
                f = field_from_probe(h.kind, pr.weights.get(j, {}))
                if f is not None and not all(_prints(f, i, j) for i in insts):
                    f = None
            if f is None and len({i.holes[j].printed for i in insts}) > 1:
                sp.ok = False  # varies, and nvdisasm did not show which bits hold it
            sp.fields[j] = f
    for k, pr in zip(keys, probes):
        if pr is not None:
            sp = spellings[k[0]][k[1]]
            sp.sensitive, sp.guarded, sp.reuse, sp.reuse_gated = bool(pr.sensitive), pr.guarded, pr.reuse, \
                pr.reuse_gated
            sp.probed = True
    _borrow_fields(spellings)
    _add_neighbors(spellings, keys, probes)
    unknown = _probe_values(nvdisasm, arch, spellings)
    opcodes = {code: learn_opcode(sps, unknown.get(code)) for code, sps in sorted(spellings.items())}
    table = ArchTable(arch, opcodes, _float_style(by_key.values()))
    table = _prune(table, by_key.values())
    return table, dict(stats)


def _add_neighbors(spellings: dict[int, dict[tuple, _Spelling]], keys: list[tuple[int, tuple]],
                   probes: list[_Probe | None]) -> None:
    """Spellings one modifier bit away from a learned one (ISETP.GE -> ISETP.LT, -R4 for R4),
    as nvdisasm printed them when probing: with the same holes in the same order, they take
    the learned spelling's fields where those print the probed word exactly."""
    for (code, key), pr in zip(keys, probes):
        sp = spellings[code][key]
        if pr is None or not sp.ok or "tgt" in key[2]:
            continue
        for v in pr.neighbors:
            if v.key[2] != key[2] or v.key in spellings[code] or v.word & 0xFFF != code:
                continue
            literal = [j for j, f in enumerate(sp.fields) if f is None]
            if any(v.holes[j].printed != sp.insts[0].holes[j].printed for j in literal):
                continue
            if all(f is None or _prints(f, v, j) for j, f in enumerate(sp.fields)):
                spellings[code][v.key] = _Spelling([v], list(sp.fields), True, sp.sensitive)


def _borrow_fields(spellings: dict[int, dict[tuple, _Spelling]]) -> None:
    """A hole whose every single-bit flip changes the spelling (`IMAD.SHL.U32 ... 0x4`: the next
    value is not a power of two) takes the field of the same opcode's other spellings that prints
    it in every instance, when exactly one does; its spelling then depends on values."""
    for sps in spellings.values():
        known = {f for sp in sps.values() if sp.ok for f in sp.fields if f is not None}
        for key, sp in sps.items():
            if sp.ok:
                continue
            fields = list(sp.fields)
            for j, f in enumerate(fields):
                if f is not None or len({i.holes[j].printed for i in sp.insts}) == 1:
                    continue
                kind = sp.insts[0].holes[j].kind
                fits = [g for g in known if g not in fields and (g.fmt == kind or kind == "hex" and g.fmt in ("hexu", "hexs"))
                        and all(_prints(g, i, j) for i in sp.insts)]
                if len(fits) != 1:
                    break
                fields[j] = fits[0]
            else:
                sp.fields, sp.ok, sp.sensitive = fields, True, True


def _probe_values(nvdisasm: Path, arch: str, spellings: dict[int, dict[tuple, _Spelling]]) -> dict[int, dict[int, list[int]]]:
    """For every spelling, ask nvdisasm how it spells the alias-prone values of each field (with
    the others as in a few training words: `_diverse`); a spelling that any of them spells
    otherwise depends on values (`sensitive`). A word spelled as a known spelling that prints it
    (`_reproduces`) is added to its `seen`; one spelled as a new spelling with the same holes
    becomes a spelling of its own (`IMAD.IADD`); the rest are returned per opcode and residual,
    so that their value classes decode nothing."""
    jobs: list[tuple[int, tuple, int]] = []
    for code, sps in spellings.items():
        for key, sp in sps.items():
            if not sp.ok:
                continue
            fields = sorted({f for f in sp.fields if f is not None and f.fmt in _INT_FORMATS},
                            key=lambda f: (f.lo, f.fmt))
            for rep in _diverse(sp.insts, fields):
                for f in fields:
                    jobs += [(code, key, _with_value(rep.word, f, v)) for v in _test_values(f)]
    texts = raw_disassemble(nvdisasm, arch, [w for _, _, w in jobs])
    unknown: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    masks: dict[int, int] = {}  # per opcode: an alias takes its spelling's fields, so these stay
    raw_keys: dict[int, dict[tuple, tuple]] = {}  # per opcode: raw spelling -> the first key that prints so
    for (code, key, word), printed in zip(jobs, texts):
        inst = _raw_instance(printed)
        if inst is None:
            continue
        sp = spellings[code][key]
        if code not in masks:
            mask = FIXED_MASK
            for f in (f for s2 in spellings[code].values() if s2.ok for f in s2.fields if f is not None):
                mask |= f.mask
            masks[code] = mask
            raw_keys[code] = {}
            for k in spellings[code]:
                raw_keys[code].setdefault(_raw_key(k), k)
        mask = masks[code]
        real = Instance(word, inst.pc, inst.text, inst.guard, inst.mnemonic, inst.operands, inst.holes,
                        inst.reuse_ops, "")
        same = raw_keys[code].get(inst.key)
        if same != key:
            # spelled otherwise for this value (`c[0x0][R2+0x28]` is `c[0x0][0x28]` with RZ, a flip of
            # one bit never reaches): its forms decode only the value classes seen spelled so
            sp.sensitive = True
        if same is not None and _reproduces(spellings[code][same], real):
            spellings[code][same].seen.append(word)
        elif same is None and "tgt" not in key[2] and inst.key[2] == key[2] and \
                all(f is None or _prints(f, real, j) for j, f in enumerate(sp.fields)):
            alias = _Spelling([real], list(sp.fields), True, True)
            spellings[code][inst.key] = alias
            raw_keys[code].setdefault(_raw_key(inst.key), inst.key)
        else:
            unknown[code][word & ~mask].append(word)
    return unknown


def _reproduces(sp: _Spelling, i: Instance) -> bool:
    """Whether the spelling's fields and literal holes print instance `i` as nvdisasm did. A probed
    word spelled with the same holes may still not be one of its words: sm_90's `IMAD.MOV.U32 R15,
    RZ, 0x8, RZ` took the spelling whose third operand is a 1-bit field learned from 0x0 and 0x1,
    and decoded as `0x0` until 2026-11-27."""
    return all(i.holes[j].printed == sp.insts[0].holes[j].printed if f is None else _prints(f, i, j)
               for j, f in enumerate(sp.fields))


#: training words per spelling whose fields' values are probed: one per distinct tuple of value
#: classes, up to this many (one representative left the others' classes fixed: `LOP3.LUT R0, R3,
#: 0x2, R0` declined, since the powers of two were probed only beside an RZ operand)
_VALUE_REPS = 4


def _diverse(insts: Sequence[Instance], fields: Sequence[Field]) -> list[Instance]:
    """Up to `_VALUE_REPS` instances with distinct value classes of `fields`, the representative first."""
    out, seen = [], set()
    for i in [_representative(insts), *insts]:
        c = tuple(value_class(f, f.value(i.word)) for f in fields)
        if c not in seen:
            seen.add(c)
            out.append(i)
            if len(out) == _VALUE_REPS:
                break
    return out


def _prints(f: Field, i: Instance, j: int) -> bool:
    """Whether field `f` of instance `i` holds what nvdisasm printed for hole `j`."""
    h = i.holes[j]
    v = f.value(i.word)
    if f.fmt in ("tgt", "tgtu"):
        return i.pc + 16 + ((_sext(v, f.bits) if f.fmt == "tgt" else v) << f.shift) == h.value
    if f.fmt in _WIDTH:
        return v == ((1 << f.bits) - 1 if h.value == _ALL_ONES else h.value)
    s = format_value(f, v, _LEARN_FLOATS)
    return s is not None and s.strip() == h.printed.strip()


def _sext(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) & 1 else v


def _float_style(groups: Iterable[list[Instance]]) -> FloatStyle:
    plain_max, exp_min, specials = 0.0, float("inf"), set()
    for insts in groups:
        for i in insts:
            for h in i.holes:
                if h.kind != "flt":
                    continue
                p = h.printed.strip()
                if p in ("+INF", "-INF", "+QNAN", "-QNAN"):
                    specials.add(p + " ")
                elif p == "-0":
                    specials.add(p)
                elif re.fullmatch(r"-?\d\.\d{20}e[+-]\d+", p):
                    exp_min = min(exp_min, abs(float(p)))
                else:
                    plain_max = max(plain_max, abs(float(p)))
    return FloatStyle(plain_max, exp_min, frozenset(specials))


def _prune(table: ArchTable, groups: Iterable[list[Instance]]) -> ArchTable:
    """Drop every form that decodes some training word to other text than nvdisasm's."""
    opcodes = dict(table.opcodes)
    for insts in groups:
        code = insts[0].word & 0xFFF
        op = opcodes[code]
        bad: set[Form] = set()
        for i in insts:
            d = decode_word(table, i.word, i.pc)
            if d is not None and not _same(d, i):
                if _DEBUG:
                    print("bad", i.text, "|", d.text, file=sys.stderr)
                bad.update(op.forms.get(i.word & ~op.mask, ()))
        if bad:
            forms = {r: tuple(f for f in fl if f not in bad) for r, fl in op.forms.items()}
            opcodes[code] = OpcodeTable(op.fields, op.mask, op.guarded, op.reuse, op.reuse_gated,
                                        {r: fl for r, fl in forms.items() if fl})
            table = ArchTable(table.arch, opcodes, table.floats)
    return table


def _same(d, i: Instance) -> bool:
    text = d.text
    if d.target is not None:
        label = next((h.printed for h in i.holes if h.kind == "tgt"), None)
        want = next((h.value for h in i.holes if h.kind == "tgt"), None)
        if label is None or want != d.target:
            return False
        text = text.replace("{target}", label)
    return text == i.text


# ---- the corpus ---------------------------------------------------------------------------------

def corpus_sources(repo: Path) -> list[Path]:
    """Every .cu file of the repository's examples, tests and benchmarks, less the held-out code
    (benchmarks/heldout: kept for independent checks only, its sources fetched into a checkout,
    never learned from or tested on; fetched, they also moved every other architecture's sixth)."""
    held_out = repo / "benchmarks" / "heldout"
    return sorted(p for d in ("examples", "tests", "benchmarks") for p in (repo / d).rglob("*.cu")
                  if not p.is_relative_to(held_out))


def compile_corpus(sources: Sequence[Path], arch: str, out: Path, flags: Sequence[Sequence[str]] = ((),),
                   jobs: int = 2) -> list[tuple[Path, str]]:
    """(cubin, nvdisasm -gi -hex -c listing) per source that compiles for `arch`."""
    from ..compile import compile_cuda
    from ..toolchain import locate_toolchain

    tc = locate_toolchain()
    out.mkdir(parents=True, exist_ok=True)

    def one(job: tuple[int, Path, Sequence[str]]) -> tuple[Path, str] | None:
        n, src, fl = job
        work = out / f"{n:03d}_{src.stem}"
        try:
            r = compile_cuda(src, arch=arch, user_flags=fl, toolchain=tc, workdir=work)
        except Exception:  # noqa: BLE001 - a source that cannot compile for this arch is skipped
            return None
        if not r.success or r.cubin_path is None:
            return None
        res = subprocess.run([str(tc.nvdisasm), "-gi", "-hex", "-c", str(r.cubin_path)], capture_output=True,
                             text=True, env=dict(tc.env))
        return (r.cubin_path, res.stdout) if res.returncode == 0 else None

    jobs_list = [(n, s, f) for n, (s, f) in enumerate((s, f) for s in sources for f in flags)]
    with ThreadPoolExecutor(jobs) as ex:
        return [r for r in ex.map(one, jobs_list) if r is not None]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", action="append", help=f"repeatable; default: {' '.join(DEFAULT_ARCHS)}")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "data" / "sass_encodings")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("sources", nargs="*", type=Path)
    args = ap.parse_args(argv)
    from ..toolchain import locate_toolchain

    repo = Path(__file__).resolve().parents[3]
    sources = args.sources or corpus_sources(repo)
    archs = args.arch or list(DEFAULT_ARCHS)
    nvdisasm = locate_toolchain().nvdisasm
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kernelscope-learn-") as tmp:
        listings = {arch: [text for _, text in compile_corpus(sources, arch, Path(tmp) / arch, FLAG_SETS, args.jobs)]
                    for arch in archs}
    words = {arch: _words(texts) for arch, texts in listings.items()}
    for arch in archs:
        borrowed = set().union(*(w for a, w in words.items() if a != arch))
        table, stats = learn_arch(arch, listings[arch], nvdisasm, borrowed)
        path = args.out / f"{arch}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(table_to_json(table), sort_keys=True).encode(), mtime=0))
        print(f"{arch}: {len(listings[arch])} cubins, {stats}, {len(table.opcodes)} opcodes, "
              f"{sum(len(o.forms) for o in table.opcodes.values())} residuals -> {path}", file=sys.stderr)
    return 0


def _words(listings: Iterable[str]) -> set[int]:
    out = set()
    for text in listings:
        for sec in parse_text_listing(text)[1].values():
            out.update(t.words[0] | (t.words[1] << 64) for t in sec.instrs)
    return out


#: sm_70 is missing: nvcc 13 no longer targets it.
DEFAULT_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
#: the flag sets the tests compile with, besides the default
FLAG_SETS: tuple[tuple[str, ...], ...] = ((), ("-G",), ("--use_fast_math",))


if __name__ == "__main__":
    sys.exit(main())
