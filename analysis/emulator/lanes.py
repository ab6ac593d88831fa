"""The integer and predicate datapath of one warp, executed per lane (issue #32).

Each register is 32 lanes of uint32 (numpy), each predicate 32 booleans. A 64-bit value is the
register pair SASS names it by (`R6.64` is R6:R7). What a lane holds is one of three states:

* `KNOWN`: the value itself, from the launch (special registers, constant bank 0: the launch
  dimensions and the kernel's arguments, pointers as synthetic allocations) and the integer
  instructions executed on it;
* `UNIFORM`: the same unknown value in every lane (a kernel argument nobody gave, a load from
  one address) plus a known per-lane part. It is carried as a *stand-in*: a fresh value
  (`_stand_in`, 1 MiB aligned) that only additions, subtractions, left shifts and products
  with a known warp-uniform factor may touch, so that differences between lanes, which are
  all a memory shape needs, stay exact while the stand-in itself is never read as a value.
  Anything else applied to it gives a fresh stand-in when every input is warp-uniform (the
  result is then the same in every lane too), else `UNKNOWN`;
* `UNKNOWN`: a value that differs by lane and is not known (a gather's loaded index, a float
  converted to an integer). The register keeps a `reason` that says where it came from.

Nothing is guessed: an instruction the datapath does not execute makes its destination
`UNIFORM` (all inputs warp-uniform) or `UNKNOWN`, with the opcode as the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..frontend import isa
from ..frontend.instructions import Instruction
from ..machine.arch import ConstantBank

KNOWN, UNIFORM, UNKNOWN = 0, 1, 2
WARP = 32
_M32 = np.uint64(0xFFFFFFFF)
_ZERO = np.zeros(WARP, np.uint32)
_ZST = np.zeros(WARP, np.int8)
_ZST.flags.writeable = False
_ALL = np.ones(WARP, bool)
_ALL.flags.writeable = False
_NONE = np.zeros(WARP, bool)  # no lane (a predicate never written, a guard nobody doubts)
_NONE.flags.writeable = False
UNKNOWN_LANES = np.full(WARP, UNKNOWN, np.int8)  # copied: np.full costs four times a copy
UNKNOWN_LANES.flags.writeable = False


def any_lane(a: np.ndarray) -> bool:
    """`a.any()`, at a quarter of its cost on 32 lanes (ndarray.any goes through Python)."""
    return np.count_nonzero(a) > 0


def all_lanes(a: np.ndarray) -> bool:
    """`a.all()` (see `any_lane`)."""
    return np.count_nonzero(a) == a.size

#: synthetic allocations for pointer arguments: 4 GiB apart (never overlapping), 256 B aligned
#: as cudaMalloc's are (CUDA C Programming Guide, "Device Memory Accesses": at least 256 B)
POINTER_BASE = 0x7F00_0000_0000
POINTER_STRIDE = 1 << 32
#: the generic-address window of shared memory (`SR_SWINHI` << 32): a machine constant whose value
#: does not matter to a shape, only that a generic pointer into shared memory can be told apart
#: from the synthetic global allocations above
SHARED_WINDOW_HI = 1


@dataclass
class Value:
    """32 lanes of one 32-bit register."""

    v: np.ndarray  # uint32[32]
    st: np.ndarray  # int8[32]: KNOWN, UNIFORM or UNKNOWN
    reason: str = ""

    @property
    def worst(self) -> int:
        return max(self.st.tolist())


def known(v) -> Value:
    if isinstance(v, int):
        return Value(_constant(v & 0xFFFFFFFF), _ZST)
    return Value(np.broadcast_to(np.asarray(v, dtype=np.uint64) & _M32, (WARP,)).astype(np.uint32), _ZST)


@lru_cache(maxsize=4096)
def _constant(v: int) -> np.ndarray:
    """The 32 lanes of one immediate, made once (read-only: values are never changed in place)."""
    a = np.full(WARP, v, np.uint32)
    a.flags.writeable = False
    return a


def unknown(reason: str) -> Value:
    return Value(_ZERO.copy(), UNKNOWN_LANES.copy(), reason)


_UNWRITTEN = known(0)  # what a register holds before the kernel writes it (`WarpState.reg`)


@dataclass
class Launch:
    """What the launch gives one warp: its block and thread indices, the launch dimensions,
    and constant bank 0 (offset -> (bytes, value or None, name))."""

    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    ctaid: tuple[int, int, int]
    warp: int  # warp index in the block
    bank0: dict[int, tuple[int, int | None, str]] = field(default_factory=dict)

    def tid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """threadIdx.{x,y,z} per lane, and which lanes exist (a partial last warp)."""
        bx, by, bz = self.block
        t = np.arange(WARP, dtype=np.int64) + self.warp * WARP
        live = t < bx * by * bz
        return ((t % bx).astype(np.uint32), ((t // bx) % by).astype(np.uint32),
                (t // (bx * by)).astype(np.uint32), live)


def signature_types(demangled: str) -> list[str] | None:
    """The parameter types of a demangled kernel name, `void gemm<float>(unsigned long, float const*)`:
    what a template parameter `T` of the source stands for in this instance."""
    close = demangled.rfind(")")
    depth, start = 0, None
    for i in range(close, -1, -1):
        c = demangled[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                start = i
                break
    if start is None:
        return None
    inner, out, depth, cur = demangled[start + 1:close], [], 0, ""
    for c in inner:
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def bank0_layout(bank: ConstantBank, params: list[tuple[str, bool, str]], values: dict[str, int],
                 block: tuple[int, int, int], grid: tuple[int, int, int],
                 signature: list[str] | None = None) -> dict[int, tuple[int, int | None, str]]:
    """Constant bank 0 as the launch fills it: blockDim and gridDim where the arch's compiler
    reads `%ntid` / `%nctaid` (0x0 and 0xc up to sm_90, 0x360 and 0x370 from sm_100), then the
    kernel's arguments from `bank.params`, each aligned to its size (the CUDA ABI). A pointer is
    a synthetic allocation; an integer is its value where the launch gives it, else None. A
    parameter of a type the walk cannot size (a struct) ends the layout: the words after it are
    not known."""
    out: dict[int, tuple[int, int | None, str]] = {}
    for d in range(3):
        out[bank.block_dim + 4 * d] = (4, block[d], "blockDim." + "xyz"[d])
        out[bank.grid_dim + 4 * d] = (4, grid[d], "gridDim." + "xyz"[d])
    off, n_ptr = bank.params, 0
    if signature is not None and len(signature) == len(params):
        # the instance's own types: a template parameter (`T const* A`) sized as instantiated
        params = [(name, ty.rstrip().endswith("*") or "*" in ty, ty.replace("*", "").strip())
                  for (name, _p, _t), ty in zip(params, signature)]
    for name, is_ptr, ty in params:
        t = re.sub(r"\b(const|volatile|unsigned|signed|__restrict__|restrict)\b", "", ty).strip()
        t = " ".join(t.split())
        size = 8 if is_ptr or t in ("long", "long long", "size_t", "int64_t", "uint64_t", "double", "long int",
                                    "ptrdiff_t", "intptr_t", "uintptr_t", "long long int") else \
            4 if t in ("int", "float", "", "int32_t", "uint32_t", "uint", "unsigned int") else \
            2 if t in ("short", "half", "__half", "int16_t", "uint16_t") else \
            1 if t in ("char", "bool", "int8_t", "uint8_t") else None
        if size is None:
            break
        off = (off + size - 1) // size * size
        if is_ptr:
            out[off] = (8, POINTER_BASE + n_ptr * POINTER_STRIDE, name)
            n_ptr += 1
        elif t in ("float", "double", "half", "__half"):
            out[off] = (size, None, name)
        else:
            out[off] = (size, values.get(name), name)
        off += size
    return out


_IMM = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")
_PRED = re.compile(r"^!?U?P(\d+|T)$")
_CONST = re.compile(r"^(-|~)?c\[(0x[0-9a-fA-F]+)\]\[(.+)\]$")
_REGOP = re.compile(r"^([-~!])?(\|)?(U?R\d+|U?RZ)(\|)?((?:\.\w+)*)$")


@lru_cache(maxsize=8192)
def immediate(op: str) -> int | None:
    """An integer immediate operand's value, signed as written (`-0x1` is -1); None for any other."""
    op = op.strip().replace(".reuse", "")
    return int(op, 0) if _IMM.match(op) else None


def fixed_constant(op: str) -> tuple[int, int] | None:
    """(bank, byte offset) of a constant-bank operand at a fixed offset (`c[0x0][0x230]`); None for
    any other (a register index, a negated word, not a constant)."""
    m = _CONST.match(op.strip().replace(".reuse", ""))
    if m is None or m.group(1):
        return None
    off = immediate(m.group(3))
    return None if off is None else (int(m.group(2), 16), off)


@lru_cache(maxsize=8192)
def _parse(op: str) -> tuple[str, object]:
    """An operand's text read once: ("imm", value), ("const", (sign, bank, index)), ("reg", match),
    ("pt", 0 or 1) or ("other", None)."""
    op = op.strip().replace(".reuse", "")
    if (v := immediate(op)) is not None:
        return "imm", v & 0xFFFFFFFF
    m = _CONST.match(op)
    if m:
        return "const", (m.group(1), int(m.group(2), 16), m.group(3))
    m = _REGOP.match(op)
    if m:
        return "reg", m
    if op in ("PT", "!PT"):
        return "pt", 1 if op == "PT" else 0
    return "other", None


def is_pred(op: str) -> bool:
    return bool(_PRED.match(op.strip()))


class WarpState:
    """Registers, uniform registers and predicates of one warp, lane by lane."""

    def __init__(self, launch: Launch, stand_ins: list[int]) -> None:
        self.launch = launch
        self.regs: dict[str, Value] = {}
        self.preds: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # name -> (value, known)
        self.pred_reason: dict[str, str] = {}  # why a predicate is not known, where it is not
        self.tx, self.ty, self.tz, self.live = launch.tid()
        self._stand_ins = stand_ins  # shared by a walk: each stand-in is fresh

    # -- stand-ins for unknown uniform values --------------------------------------------------
    def stand_in(self, reason: str) -> Value:
        k = len(self._stand_ins) + 1
        self._stand_ins.append(k)
        return Value(np.full(WARP, (k << 20) & 0xFFFFFFFF, np.uint32), np.full(WARP, UNIFORM, np.int8), reason)

    # -- registers -----------------------------------------------------------------------------
    def reg(self, name: str) -> Value:
        if name in ("RZ", "URZ"):
            return known(0)
        r = self.regs.get(name)
        # a register the kernel reads before writing it holds bits no result depends on: ptxas
        # keeps predicates live across a loop in a register it never cleared, clearing and setting
        # one bit at a time (`LOP3.LUT R64, R64, 0xffffffdf, RZ, 0xc0` then `@P3 LOP3 ... 0x20 ...
        # 0xfc`) and testing only those bits. The walk starts at the kernel's entry, so such a
        # register reads as 0, which decides nothing the hardware's garbage would not
        return r if r is not None else _UNWRITTEN

    def write(self, name: str, val: Value, mask: np.ndarray) -> None:
        if name in ("RZ", "URZ") or not name:
            return
        old = self.regs.get(name)
        if all_lanes(mask):
            self.regs[name] = Value(val.v.copy(), val.st.copy(), val.reason)
            return
        old = old if old is not None else _UNWRITTEN  # the lanes that do not write keep it (`reg`)
        v, st = old.v.copy(), old.st.copy()
        v[mask], st[mask] = val.v[mask], val.st[mask]
        self.regs[name] = Value(v, st, val.reason if val.worst else old.reason)

    def pred(self, op: str) -> tuple[np.ndarray, np.ndarray]:
        op = op.strip()
        neg = op.startswith("!")
        name = op.lstrip("!")
        if name in ("PT", "UPT"):
            v, k = _ALL, _ALL
        else:
            v, k = self.preds.get(name) or (_NONE, _NONE)
        return (~v if neg else v.copy()), k.copy()

    def write_pred(self, name: str, v: np.ndarray, k: np.ndarray, mask: np.ndarray) -> None:
        if name in ("PT", "UPT"):
            return
        ov, ok = self.preds.get(name) or (_NONE, _NONE)
        ov, ok = ov.copy(), ok.copy()
        ov[mask], ok[mask] = v[mask], k[mask]
        self.preds[name] = (ov, ok)

    # -- operands ------------------------------------------------------------------------------
    def operand(self, op: str) -> Value:
        """A 32-bit source operand: register (with -, ~, |.|, .H0/.H1 halves), immediate,
        constant-bank word."""
        kind, parts = _parse(op)
        if kind == "imm":
            return known(parts)
        if kind == "const":
            sign, bank, index = parts
            val = self.const_word(bank, index)
            return _negate(val) if sign == "-" else _invert(val) if sign == "~" else val
        if kind == "reg":
            m = parts
            val = self.reg(m.group(3))
            mods = m.group(5) or ""
            if ".H1" in mods:
                val = _op1(val, lambda a: a >> 16, linear=False)
            elif ".H0" in mods or ".B0" in mods:
                val = _op1(val, lambda a: a & 0xFFFF, linear=False)
            if m.group(2):
                val = _op1(val, lambda a: np.abs(a.view(np.int32)).view(np.uint32), linear=False)
            if m.group(1) == "-":
                val = _negate(val)
            elif m.group(1) in ("~", "!"):
                val = _invert(val)
            return val
        if kind == "pt":
            return known(parts)
        return unknown(f"operand `{op}` is not an integer the datapath reads")

    def const_word(self, bank: int, index: str, hi: bool = False) -> Value:
        """A 32-bit word of a constant bank: `c[0x0][0x210]`, `c[0x0][R2+0x10]`."""
        if bank != 0:
            return self.stand_in(f"constant bank {bank} (`__constant__` data) is not read")
        parts = [p.strip() for p in index.split("+") if p.strip()]
        base, regs = 0, []
        for p in parts:
            if _IMM.match(p):
                base += int(p, 0)
            else:
                regs.append(self.operand(p))
        if regs:
            idx = regs[0]
            for r in regs[1:]:
                idx = _binary(self, idx, r, lambda a, b: a + b, "add")
            if idx.worst == KNOWN:
                vals = [self._bank_word(base + int(i)) for i in idx.v]
                if all(x is not None for x in vals):
                    return known(np.array(vals, dtype=np.uint64))
            return unknown("an indexed constant-bank read")
        w = self._bank_word(base)
        if w is None:
            name = self._bank_name(base)
            return self.stand_in(f"kernel argument `{name}` is not known" if name else
                                 f"constant bank 0 word {base:#x} is not known")
        return known(w)

    def _bank_word(self, off: int) -> int | None:
        for start, (size, value, _name) in self.launch.bank0.items():
            if start <= off < start + size:
                if value is None:
                    return None
                return ((value & ((1 << (8 * size)) - 1)) >> (8 * (off - start))) & 0xFFFFFFFF
        return None

    def _bank_name(self, off: int) -> str | None:
        for start, (size, _value, name) in self.launch.bank0.items():
            if start <= off < start + size:
                return name
        return None

    def pair(self, op: str) -> tuple[Value, Value]:
        """A 64-bit operand: a register pair, a 64-bit constant, or an immediate."""
        op = op.strip().replace(".reuse", "")
        m = _CONST.match(op)
        if m:
            off = m.group(3)
            if _IMM.match(off):
                lo = self.const_word(int(m.group(2), 16), off)
                hi = self.const_word(int(m.group(2), 16), hex(int(off, 0) + 4))
                return lo, hi
        m = _REGOP.match(op)
        if m and m.group(3) not in ("RZ", "URZ"):
            name = m.group(3)
            num = int(re.sub(r"\D", "", name))
            prefix = "UR" if name.startswith("UR") else "R"
            lo, hi = self.reg(name), self.reg(f"{prefix}{num + 1}")
            if m.group(1) == "-":
                return _neg64(lo, hi)
            return lo, hi
        lo = self.operand(op)
        return lo, _op1(lo, lambda a: np.where(a.view(np.int32) < 0, 0xFFFFFFFF, 0).astype(np.uint32), linear=False) \
            if op.startswith("-") else known(0)

    def special(self, name: str) -> Value:
        L = self.launch
        table = {"SR_TID.X": self.tx, "SR_TID.Y": self.ty, "SR_TID.Z": self.tz,
                 "SR_CTAID.X": L.ctaid[0], "SR_CTAID.Y": L.ctaid[1], "SR_CTAID.Z": L.ctaid[2],
                 "SR_NTID.X": L.block[0], "SR_NTID.Y": L.block[1], "SR_NTID.Z": L.block[2],
                 "SR_NCTAID.X": L.grid[0], "SR_NCTAID.Y": L.grid[1], "SR_NCTAID.Z": L.grid[2],
                 "SR_LANEID": np.arange(WARP, dtype=np.uint32),
                 "SR_VIRTUALSMID": None,
                 # a launch without clusters: the CTA is its cluster's only one (sm_90 shared windows)
                 "SR_CgaCtaId": 0, "SR_CGACTAID": 0, "SRZ": 0,
                 "SR_SWINHI": SHARED_WINDOW_HI, "SR_SWINLO": 0,
                 "SR_LTMASK": (1 << np.arange(WARP, dtype=np.uint64)) - 1,
                 "SR_LEMASK": (1 << (np.arange(WARP, dtype=np.uint64) + 1)) - 1,
                 "SR_EQMASK": 1 << np.arange(WARP, dtype=np.uint64),
                 "SR_GTMASK": ~((1 << (np.arange(WARP, dtype=np.uint64) + 1)) - 1),
                 "SR_GEMASK": ~((1 << np.arange(WARP, dtype=np.uint64)) - 1)}
        v = table.get(name)
        if v is None:
            return unknown(f"special register {name}") if name not in _UNIFORM_SR else \
                self.stand_in(f"special register {name}")
        return known(np.asarray(v, dtype=np.uint64))


#: special registers that are the same for every lane of a warp but not known before it runs
_UNIFORM_SR = frozenset({"SR_CLOCKLO", "SR_CLOCKHI", "SR_GLOBALTIMERLO", "SR_GLOBALTIMERHI", "SR_SMID",
                         "SR_VIRTUALSMID", "SR_WARPID", "SR_NWARPID"})


# ---- combining lanes --------------------------------------------------------------------------


def _uniform(vals: list[Value], active: np.ndarray) -> bool:
    """Whether every value is the same in every active lane (then so is any function of them)."""
    if not any_lane(active):
        return True
    for x in vals:
        st, v = x.st[active], x.v[active]
        if any_lane(st == UNKNOWN) or any_lane(st != st[0]) or any_lane(v != v[0]):
            return False
    return True


def _reason(vals: list[Value]) -> str:
    """Why a result is not known: an unknown input's reason before a stand-in's."""
    return next((x.reason for x in vals if x.worst == UNKNOWN and x.reason), "") or \
        next((x.reason for x in vals if x.worst and x.reason), "")


def _op1(a: Value, f, linear: bool) -> Value:
    st = a.st.copy() if linear else np.where(a.st == KNOWN, KNOWN, UNKNOWN).astype(np.int8)
    r = np.asarray(f(a.v)).astype(np.int64).astype(np.uint64) & _M32
    return Value(r.astype(np.uint32), st, a.reason)


def _negate(a: Value) -> Value:
    return Value((np.uint32(0) - a.v).astype(np.uint32), a.st.copy(), a.reason)


def _invert(a: Value) -> Value:
    return Value((~a.v).astype(np.uint32), np.where(a.st == KNOWN, KNOWN, UNKNOWN).astype(np.int8), a.reason)


def _neg64(lo: Value, hi: Value) -> tuple[Value, Value]:
    x = _join(lo, hi)
    n = (np.uint64(0) - x)
    st = np.maximum(lo.st, hi.st)
    return Value((n & _M32).astype(np.uint32), st.copy(), lo.reason or hi.reason), \
        Value((n >> np.uint64(32)).astype(np.uint32), st.copy(), lo.reason or hi.reason)


def _join(lo: Value, hi: Value) -> np.ndarray:
    return (hi.v.astype(np.uint64) << np.uint64(32)) | lo.v.astype(np.uint64)


def _binary(ws: WarpState, a: Value, b: Value, f, kind: str) -> Value:
    """a ∘ b lane by lane, with the stand-in rules of the module docstring."""
    out = np.asarray(f(a.v.astype(np.uint64), b.v.astype(np.uint64)), dtype=np.uint64) & _M32
    st = np.maximum(a.st, b.st)
    if kind == "mul":
        # a product is linear in a stand-in only when the other factor is known and warp-uniform
        for x, y in ((a, b), (b, a)):
            if any_lane(x.st == UNIFORM) and not (y.worst == KNOWN and all_lanes(y.v == y.v[0])):
                st = np.where(st == UNIFORM, UNKNOWN, st)
    elif kind != "add":
        st = np.where(st == UNIFORM, UNKNOWN, st)
    return Value(out.astype(np.uint32), st.astype(np.int8), _reason([a, b]))


#: the reasons that mean "the launch did not say" (an argument nobody gave), not "the data decides"
ARGUMENT_REASONS = ("kernel argument `", "constant bank 0 word")


def from_launch(reason: str) -> bool:
    """Whether an unknown value is unknown only because the launch's arguments were not given."""
    return reason.startswith(ARGUMENT_REASONS)


class NotExecuted(Exception):
    """The datapath has no semantics for this instruction (its destinations become unknown)."""


# ---- instructions -----------------------------------------------------------------------------


def _srcs(x: Instruction) -> tuple[list[str], list[str]]:
    """(destination operands, source operands) with `.reuse` flags removed."""
    ops = [o.replace(".reuse", "").strip() for o in x.operands]
    info = isa.opcode_info(x.opcode)
    n = info.n_dst
    dst = ops[:n]
    rest = ops[n:]
    # predicate destinations: carry-outs after a register destination (IADD3 R4, P0, P1, ...),
    # or a predicate destination first (LOP3.LUT P0, R2, ...)
    if dst and is_pred(dst[0]) and x.opcode not in ("ISETP", "UISETP", "PLOP3", "UPLOP3", "FSETP", "DSETP",
                                                     "HSETP2", "VOTE", "VOTEU", "R2P", "PSETP"):
        if rest and not is_pred(rest[0]):
            dst = dst + [rest.pop(0)]
    while rest and is_pred(rest[0]) and (info.carry_out or x.opcode in ("IADD3", "LEA", "UIADD3", "ULEA")):
        dst.append(rest.pop(0))
    return dst, rest


def _mask(ws: WarpState, x: Instruction, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lanes that write, lanes whose guard is unknown) among `active`."""
    if x.predicate is None:
        return active, _NONE
    v, k = ws.pred(x.predicate)
    return active & v & k, active & ~k


def _signed(a: np.ndarray) -> np.ndarray:
    return a.astype(np.uint32).view(np.int32).astype(np.int64)


def execute(ws: WarpState, x: Instruction, active: np.ndarray) -> None:
    """Run `x` for the `active` lanes of the warp (its own predicate applied), or mark what it
    writes unknown where the datapath has no semantics for it."""
    mask, unsure = _mask(ws, x, active)
    guarded = unsure is not _NONE and any_lane(unsure)  # some lane's guard is not known
    writes = mask | unsure if guarded else mask
    if x.opcode in _FLOAT_OPS and _dead_input(ws, x, writes):
        # float math on a loaded value (most of a kernel's float work): unknown, without the arithmetic
        why = next(ws.regs[u].reason for u in x.uses if u in ws.regs and ws.regs[u].worst == UNKNOWN)
        for d in x.defs:
            if d.startswith("P") or d.startswith("UP"):
                ws.write_pred(d, np.zeros(WARP, bool), np.zeros(WARP, bool), writes)
                ws.pred_reason[d] = float_decides(x, why)
            else:
                ws.write(d, Value(_ZERO.copy(), UNKNOWN_LANES.copy(), why), writes)
        return
    try:
        outs = _semantics(ws, x, writes)
    except NotExecuted as e:
        outs = _fallback(ws, x, writes, str(e))
    guard_why = ws.pred_reason.get((x.predicate or "").lstrip("!"), "") if guarded else ""
    for name, val in outs:
        if isinstance(val, tuple):  # a predicate (value, known)
            v, k = val
            if guarded:
                k = k & ~unsure
            ws.write_pred(name, v, k, writes)
            if not all_lanes(k[writes]):
                # why it is not known: its inputs' reason, so a guarded result can say it too
                why = guard_why or _input_reason(ws, x)
                ws.pred_reason[name] = float_decides(x, why) if x.opcode in FLOAT_COMPARES else why or \
                    f"a predicate the datapath does not know ({x.opcode} at pc {x.pc:#x})"
        else:
            if guarded:
                val = Value(val.v, np.where(unsure, UNKNOWN, val.st).astype(np.int8),
                            val.reason or guard_why or f"written under the unknown guard of {x.opcode} at pc {x.pc:#x}")
            ws.write(name, val, writes)


#: compares of floating-point values (FCHK: whether a division needs its slow path): a predicate
#: they leave unknown is a float deciding control flow
FLOAT_COMPARES = frozenset({"FSETP", "DSETP", "HSETP2", "FCHK"})


def float_decides(x: Instruction, why: str) -> str:
    """The reason a floating-point compare's predicate is not known (issue #32: where a float
    decides control flow, say so): the compare and its inputs' reason. An argument nobody gave
    keeps its own reason, which says how to give it."""
    if from_launch(why):
        return why
    where = f"line {x.line}" if x.line is not None else f"pc {x.pc:#x}"
    return f"a floating-point value decides it ({x.opcode} at {where})" + (f"; {why}" if why else "")


def _input_reason(ws: WarpState, x: Instruction) -> str:
    regs = [ws.regs[u] for u in x.uses if u in ws.regs]
    preds = [ws.pred_reason[u] for u in x.uses if u in ws.pred_reason and not all_lanes(ws.preds.get(u, (None, _ALL))[1])]
    return _reason(regs) or next(iter(preds), "")


_FLOAT_OPS = frozenset({"FADD", "FADD32I", "FMUL", "FMUL32I", "FFMA", "FFMA32I", "FMNMX", "FSETP",
                        "DADD", "DMUL", "DFMA", "DSETP", "F2F"})


def _dead_input(ws: WarpState, x: Instruction, active: np.ndarray) -> bool:
    """Whether a register `x` reads is unknown in every active lane."""
    if not any_lane(active):
        return False
    guard = (x.predicate or "").lstrip("!")
    whole = all_lanes(active)  # then "unknown in every lane" is the lanes' least state (UNKNOWN is the top one)
    for u in x.uses:
        r = ws.regs.get(u)
        if r is not None and u != guard and (min(r.st.tolist()) == UNKNOWN if whole else all_lanes(r.st[active] == UNKNOWN)):
            return True
    return False


def _fallback(ws: WarpState, x: Instruction, active: np.ndarray, why: str) -> list:
    """An instruction the datapath does not execute: warp-uniform inputs give a fresh stand-in,
    anything else is unknown with `why`."""
    dst, srcs = _srcs(x)
    vals: list[Value] = []
    for s in srcs:
        if is_pred(s) or s.startswith("["):
            continue
        if s.startswith("SR_"):
            vals.append(unknown(s))
            continue
        vals.append(ws.operand(s))
    uses_mem = isa.opcode_info(x.opcode).memory_space is not None
    out: list = []
    regs = [d for d in x.defs if not re.match(r"^U?P\d+$", d)]
    preds = [d for d in x.defs if re.match(r"^U?P\d+$", d)]
    uniform = not uses_mem and _uniform(vals, active) and x.opcode not in ("SHFL",)
    for d in regs:
        out.append((d, ws.stand_in(why) if uniform else unknown(why)))
    for p in preds:
        out.append((p, (np.zeros(WARP, bool), np.zeros(WARP, bool))))
    return out


def _w(dst: str) -> str:
    return dst.split(".")[0]


def _pair_names(dst: str) -> tuple[str, str]:
    name = _w(dst)
    num = int(re.sub(r"\D", "", name))
    prefix = "UR" if name.startswith("UR") else "R"
    return name, f"{prefix}{num + 1}"


def _semantics(ws: WarpState, x: Instruction, active: np.ndarray) -> list:
    op = x.opcode
    base = op[1:] if op.startswith("U") and op not in ("UMOV",) and op[1:] in _EXEC else op
    if op in ("S2R", "S2UR", "CS2R"):
        dst, srcs = _srcs(x)
        if op == "CS2R" and "32" not in x.modifiers and srcs and srcs[0] == "SRZ":
            lo, hi = _pair_names(dst[0])
            return [(lo, known(0)), (hi, known(0))]
        return [(_w(dst[0]), ws.special(srcs[0] if srcs else ""))]
    if base not in _EXEC:
        raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    return _EXEC[base](ws, x, active)


def _mov(ws, x, active):
    dst, s = _srcs(x)
    if "64" in x.modifiers:
        lo, hi = ws.pair(s[0])
        a, b = _pair_names(dst[0])
        return [(a, lo), (b, hi)]
    return [(_w(dst[0]), ws.operand(s[0]))]


def _ldc(ws, x, active):
    dst, s = _srcs(x)
    m = _CONST.match(s[0])
    if m is None:
        raise NotExecuted(f"`{x.full_opcode}` operand")
    bank, index = int(m.group(2), 16), m.group(3)
    width = isa.memory_width_bytes(x.modifiers) if any(w in x.modifiers for w in ("64", "128", "U8", "S8", "U16",
                                                                                   "S16")) else 4
    if width >= 8:  # LDC.64, LDCU.64, LDCU.128: consecutive words into consecutive registers
        name = _w(dst[0])
        num = int(re.sub(r"\D", "", name))
        prefix = "UR" if name.startswith("UR") else "R"
        out = []
        for w in range(width // 4):
            word = re.sub(r"(0x[0-9a-fA-F]+|\d+)$", lambda mm: hex(int(mm.group(1), 0) + 4 * w), index) \
                if re.search(r"(0x[0-9a-fA-F]+|\d+)$", index) else index + f"+{4 * w:#x}"
            out.append((f"{prefix}{num + w}", ws.const_word(bank, word)))
        return out
    v = ws.const_word(bank, index)
    if width < 4:
        bits = 8 * width
        sign = "S" in "".join(x.modifiers)
        f = (lambda a: ((a & ((1 << bits) - 1)) ^ (1 << (bits - 1))) - (1 << (bits - 1))) if sign else \
            (lambda a: a & ((1 << bits) - 1))
        v = _op1(v, lambda a: np.asarray(f(a.astype(np.int64)), dtype=np.int64).astype(np.uint64), linear=False)
    return [(_w(dst[0]), v)]


def _imad(ws, x, active):
    dst, s = _srcs(x)
    mods = x.modifiers
    signed = "U32" not in mods
    if "MOV" in mods:
        return [(_w(dst[0]), ws.operand(s[2] if len(s) >= 3 else s[-1]))]
    a, b = ws.operand(s[0]), ws.operand(s[1])
    if "WIDE" in mods:
        c_lo, c_hi = ws.pair(s[2]) if len(s) >= 3 else (known(0), known(0))
        if signed:
            p = (_signed(a.v) * _signed(b.v)).astype(np.uint64)
        else:
            p = a.v.astype(np.uint64) * b.v.astype(np.uint64)
        # a 64-bit product plus a 64-bit addend, with the carry in and out that a 64 x 64-bit
        # multiply chains them by (sm_90 and later divide a 64-bit loop counter by 3 with
        # `UIMAD.WIDE.U32 UR16, UP0, ...` then `UIMAD.WIDE.U32.X ..., UP0`): numpy's uint64 wraps,
        # so a carry is a sum smaller than its addend
        r = p + _join(c_lo, c_hi)
        out_carry = r < p
        st = np.maximum(_binary(ws, a, b, lambda u, v: u * v, "mul").st, np.maximum(c_lo.st, c_hi.st))
        if "X" in mods:
            for q in (o for o in s[3:] if is_pred(o)):
                qv, qk = ws.pred(q)
                before = r
                r = r + qv.astype(np.uint64)
                out_carry |= r < before
                st = np.where(qk, st, UNKNOWN).astype(np.int8)
        why = _reason([a, b, c_lo, c_hi])
        lo, hi = _pair_names(dst[0])
        out = [(lo, Value((r & _M32).astype(np.uint32), st.copy(), why)),
               (hi, Value((r >> np.uint64(32)).astype(np.uint32), st.copy(), why))]
        return out + [(q, (out_carry, st <= UNIFORM)) for q in dst[1:] if is_pred(q)]
    if "HI" in mods:
        # the addend is a 64-bit pair (Rc, Rc+1): the high word of a·b + (Rc+1:Rc). The integer
        # division sequence zeroes Rc (`HFMA2.MMA R4, -RZ, RZ, 0, 0`) and keeps its estimate in Rc+1:
        # `IMAD.HI.U32 R5, R5, R9, R4` is R5 + hi(R5·R9), its Newton step
        c_lo, c_hi = ws.pair(s[2]) if len(s) >= 3 and not is_pred(s[2]) else (known(0), known(0))
        c = _join(c_lo, c_hi)
        if signed:
            p = (_signed(a.v) * _signed(b.v)).astype(np.uint64)
        else:
            p = a.v.astype(np.uint64) * b.v.astype(np.uint64)
        r = ((p + c) >> np.uint64(32)) & _M32
        st = np.maximum(np.maximum(a.st, b.st), np.maximum(c_lo.st, c_hi.st))
        st = np.where(st == UNIFORM, UNKNOWN, st)
        return [(_w(dst[0]), Value(r.astype(np.uint32), st.astype(np.int8), _reason([a, b, c_lo, c_hi])))]
    c = ws.operand(s[2]) if len(s) >= 3 and not is_pred(s[2]) else known(0)
    prod = _binary(ws, a, b, lambda u, v: u * v, "mul")
    r = _binary(ws, prod, c, lambda u, v: u + v, "add")
    if "X" in mods:
        carry = [p for p in s[3:] if is_pred(p)]
        r = _add_carries(ws, r, carry)
    return [(_w(dst[0]), r)]


def _add_carries(ws: WarpState, r: Value, carries: list[str]) -> Value:
    v = r.v.astype(np.uint64)
    st = r.st.copy()
    for p in carries:
        pv, pk = ws.pred(p)
        v = v + pv.astype(np.uint64)
        st = np.where(pk, st, UNKNOWN).astype(np.int8)
    return Value((v & _M32).astype(np.uint32), st, r.reason)


def _iadd64(ws, x, active):
    """`IADD3.64` / `UIADD3.64` / `IADD.64` (sm_100+): a sum of 64-bit register pairs."""
    dst, s = _srcs(x)
    pairs = [ws.pair(o) for o in s if not is_pred(o)]
    total = np.zeros(WARP, np.uint64)
    for lo, hi in pairs:
        total = total + _join(lo, hi)
    st = np.maximum.reduce([np.maximum(lo.st, hi.st) for lo, hi in pairs]).astype(np.int8)
    why = _reason([v for p in pairs for v in p])
    a, b = _pair_names(dst[0])
    return [(a, Value((total & _M32).astype(np.uint32), st.copy(), why)),
            (b, Value((total >> np.uint64(32)).astype(np.uint32), st.copy(), why))]


def _iadd3(ws, x, active):
    dst, s = _srcs(x)
    if "64" in x.modifiers:
        return _iadd64(ws, x, active)
    regs = [o for o in s if not is_pred(o)]
    carries = [o for o in s if is_pred(o)]
    vals = [ws.operand(o) for o in regs]
    total = np.zeros(WARP, np.uint64)
    for o, val in zip(regs, vals):
        raw = val.v.astype(np.uint64)
        total = total + raw
    st = np.maximum.reduce([v.st for v in vals]) if vals else _ZST.copy()
    why = _reason(vals)
    # carry-outs: the 34-bit sum of the operands as the adder sees them (a negated operand is
    # its two's complement, so `a - b` carries out when a >= b, as 64-bit subtraction needs)
    if "X" in x.modifiers:
        for p in carries:
            pv, pk = ws.pred(p)
            total = total + pv.astype(np.uint64)
            st = np.where(pk, st, UNKNOWN).astype(np.int8)
    out = [(_w(dst[0]), Value((total & _M32).astype(np.uint32), st.astype(np.int8), why))]
    carry = total >> np.uint64(32)
    for i, p in enumerate(d for d in dst[1:] if is_pred(d)):
        # a stand-in's carry is its stand-in's: an unknown base plus an offset is taken not to
        # cross a 4 GiB boundary (a pointer's high word moves only with the offset's sign)
        k = st <= UNIFORM
        out.append((p, (carry >= np.uint64(i + 1), k)))
    return out


def _viadd(ws, x, active):
    dst, s = _srcs(x)
    a, b = ws.operand(s[0]), ws.operand(s[1])
    return [(_w(dst[0]), _binary(ws, a, b, lambda u, v: u + v, "add"))]


def _lea(ws, x, active):
    dst, s = _srcs(x)
    regs = [o for o in s if not is_pred(o)]
    carries = [o for o in s if is_pred(o)]
    sh = int(regs[-1], 0) if _IMM.match(regs[-1]) else None
    if sh is None:
        raise NotExecuted("LEA with a register shift")
    if "HI" in x.modifiers:
        a = ws.operand(regs[0])
        b = ws.operand(regs[1])
        if len(regs) >= 4:
            c = ws.operand(regs[2])
        elif "SX32" in x.modifiers:
            c = _op1(a, lambda v: np.where(v.view(np.int32) < 0, 0xFFFFFFFF, 0).astype(np.uint32), linear=False)
        else:
            c = known(0)
        wide = _join(a, c)
        hi = ((wide << np.uint64(sh)) >> np.uint64(32)) & _M32 if sh else c.v.astype(np.uint64)
        total = hi + b.v.astype(np.uint64)
        st = np.maximum.reduce([a.st, b.st, c.st])
        # the high word of a scaled 64-bit offset: linear in a stand-in only through b
        st = np.where((np.maximum(a.st, c.st) == UNIFORM), UNKNOWN, st).astype(np.int8)
        if "X" in x.modifiers:
            for p in carries:
                pv, pk = ws.pred(p)
                total = total + pv.astype(np.uint64)
                st = np.where(pk, st, UNKNOWN).astype(np.int8)
        st = _relax_uniform(st, [a, b, c], active)
        return [(_w(dst[0]), Value((total & _M32).astype(np.uint32), st, _reason([a, b, c])))]
    a, b = ws.operand(regs[0]), ws.operand(regs[1])
    total = ((a.v.astype(np.uint64) << np.uint64(sh)) & _M32) + b.v.astype(np.uint64)
    st = np.maximum(a.st, b.st).astype(np.int8)
    if "X" in x.modifiers:
        for p in carries:
            pv, pk = ws.pred(p)
            total = total + pv.astype(np.uint64)
            st = np.where(pk, st, UNKNOWN).astype(np.int8)
    out = [(_w(dst[0]), Value((total & _M32).astype(np.uint32), st, _reason([a, b])))]
    for p in (d for d in dst[1:] if is_pred(d)):
        out.append((p, (total >> np.uint64(32) >= 1, st <= UNIFORM)))
    return out


def _relax_uniform(st: np.ndarray, vals: list[Value], active: np.ndarray) -> np.ndarray:
    """A result unknown only through stand-ins, from warp-uniform inputs, is itself warp-uniform."""
    if any_lane(st == UNKNOWN) and _uniform(vals, active):
        return np.where(st == UNKNOWN, UNIFORM, st).astype(np.int8)
    return st


def _shf(ws, x, active):
    dst, s = _srcs(x)
    mods = x.modifiers
    lo, sh, hi = ws.operand(s[0]), ws.operand(s[1]), ws.operand(s[2]) if len(s) > 2 else known(0)
    if sh.worst != KNOWN:
        raise NotExecuted("a shift by an unknown amount")
    wide = _join(lo, hi)
    amount = sh.v.astype(np.uint64)
    limit = 64 if any(m in mods for m in ("U64", "S64")) else 32
    amount = amount & np.uint64(limit - 1) if "W" in mods else np.minimum(amount, np.uint64(limit))
    signed = "S32" in mods or "S64" in mods
    if "L" in mods:
        r = np.where(amount >= 64, np.uint64(0), wide << np.minimum(amount, np.uint64(63)))
        linear = "HI" not in mods
    else:
        if signed:
            sw = wide.view(np.int64) if limit == 64 else \
                ((_signed(hi.v) << 32) | lo.v.astype(np.int64))
            r = (sw >> np.minimum(amount, np.uint64(63)).astype(np.int64)).astype(np.uint64)
        else:
            r = np.where(amount >= 64, np.uint64(0), wide >> np.minimum(amount, np.uint64(63)))
        linear = False
    out = (r >> np.uint64(32)) if "HI" in mods else r
    st = np.maximum(lo.st, hi.st)
    if not linear or any_lane(hi.st != KNOWN):
        st = np.where(st == UNIFORM, UNKNOWN, st)
    st = _relax_uniform(st.astype(np.int8), [lo, hi], active)
    return [(_w(dst[0]), Value((out & _M32).astype(np.uint32), st.astype(np.int8), _reason([lo, hi])))]


def _shl(ws, x, active):
    dst, s = _srcs(x)
    a, sh = ws.operand(s[0]), ws.operand(s[1])
    if sh.worst != KNOWN:
        raise NotExecuted("a shift by an unknown amount")
    if x.opcode.endswith("SHL"):
        r = _binary(ws, a, sh, lambda u, v: np.where(v >= 32, 0, u << np.minimum(v, np.uint64(31))), "mul")
        return [(_w(dst[0]), r)]
    if "U32" in x.modifiers or x.opcode == "USHR":
        f = (lambda u, v: np.where(v >= 32, 0, u >> np.minimum(v, np.uint64(31))))
    else:
        f = (lambda u, v: (_signed(u.astype(np.uint32)) >> np.minimum(v, np.uint64(31)).astype(np.int64)).astype(np.uint64))
    return [(_w(dst[0]), _uniform_or(ws, _binary(ws, a, sh, f, "other"), [a, sh], active))]


def _uniform_or(ws: WarpState, r: Value, inputs: list[Value], active: np.ndarray) -> Value:
    """`r`, or a fresh stand-in where it is unknown only because of stand-ins in warp-uniform inputs."""
    if any_lane(r.st == UNKNOWN) and _uniform(inputs, active) and not any(any_lane(i.st[active] == UNKNOWN) for i in inputs):
        return ws.stand_in(r.reason)
    return r


def _lut(a, b, c, lut: int):
    r = np.zeros_like(a)
    for i in range(8):
        if lut >> i & 1:
            r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return r


def _lop3(ws, x, active):
    dst, s = _srcs(x)
    regs = [o for o in s if not is_pred(o)]
    if len(regs) < 4 or not _IMM.match(regs[3]):
        raise NotExecuted("LOP3 without its LUT")
    a, b, c = (ws.operand(o) for o in regs[:3])
    lut = int(regs[3], 0)
    r = _lut(a.v, b.v, c.v, lut).astype(np.uint32)
    st = np.maximum.reduce([a.st, b.st, c.st])
    st = np.where(st == UNIFORM, UNKNOWN, st).astype(np.int8)
    val = _uniform_or(ws, Value(r, st, _reason([a, b, c])), [a, b, c], active)
    out = []
    for d in dst:
        if is_pred(d):
            out.append((d, (r != 0, val.st == KNOWN)))
        else:
            out.append((_w(d), val))
    return out


def _lop(ws, x, active):
    dst, s = _srcs(x)
    regs = [o for o in s if not is_pred(o)]
    a, b = ws.operand(regs[0]), ws.operand(regs[1])
    f = {"AND": lambda u, v: u & v, "OR": lambda u, v: u | v, "XOR": lambda u, v: u ^ v,
         "PASS_B": lambda u, v: v}
    kind = next((m for m in x.modifiers if m in f), None)
    if kind is None:
        raise NotExecuted(f"`{x.full_opcode}`")
    r = _uniform_or(ws, _binary(ws, a, b, f[kind], "other"), [a, b], active)
    return [(_w(d), r) for d in dst if not is_pred(d)]


def _plop3(ws, x, active):
    dst, s = _srcs(x)
    preds = [o for o in x.operands[2:] if is_pred(o)]
    imms = [o for o in x.operands[2:] if _IMM.match(o)]
    if len(preds) < 3 or not imms:
        raise NotExecuted("PLOP3")
    (av, ak), (bv, bk), (cv, ck) = (ws.pred(p) for p in preds[:3])
    k = ak & bk & ck
    out = []
    for d, lut in zip(x.operands[:2], imms):
        r = _lut(av.astype(np.uint8), bv.astype(np.uint8), cv.astype(np.uint8), int(lut, 0)) & 1
        out.append((d.strip(), (r.astype(bool), k)))
    return out


def _prmt(ws, x, active):
    dst, s = _srcs(x)
    a, sel, b = (ws.operand(o) for o in s[:3])
    if x.modifiers:  # the byte-select modes (.F4E, .B4E, ...) are not executed
        raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    wide = _join(a, b)
    r = np.zeros(WARP, np.uint64)
    for i in range(4):
        n = (sel.v.astype(np.uint64) >> np.uint64(4 * i)) & np.uint64(0xF)
        byte = (wide >> ((n & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
        byte = np.where(n & np.uint64(8), np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
        r |= byte << np.uint64(8 * i)
    st = np.maximum.reduce([a.st, sel.st, b.st])
    st = np.where(st == UNIFORM, UNKNOWN, st).astype(np.int8)
    return [(_w(dst[0]), _uniform_or(ws, Value(r.astype(np.uint32), st, _reason([a, sel, b])), [a, sel, b], active))]


def _sel(ws, x, active):
    dst, s = _srcs(x)
    # FSEL's operands are floats: a literal is its float32 bits (`FSEL R7, R9, 1.875, P0` picks
    # the high word of the double 1.0), a `-` flips the sign bit
    if x.opcode == "FSEL":
        a, b = _float_operand(ws, s[0]), _float_operand(ws, s[1])
    else:
        a, b = ws.operand(s[0]), ws.operand(s[1])
    pv, pk = ws.pred(s[2])
    v = np.where(pv, a.v, b.v).astype(np.uint32)
    st = np.where(pv, a.st, b.st)
    st = np.where(pk, st, UNKNOWN).astype(np.int8)
    if not all_lanes(pk[active]) and _uniform([a, b], active) and a.worst < UNKNOWN and b.worst < UNKNOWN:
        return [(_w(dst[0]), ws.stand_in("a select on an unknown predicate"))]
    return [(_w(dst[0]), Value(v, st, _reason([a, b]) or "a select on an unknown predicate"))]


_CMP = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
        "GE": np.greater_equal}
_BOOL = {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}


def _isetp(ws, x, active):
    ops = [o.replace(".reuse", "").strip() for o in x.operands]
    mods = x.modifiers
    cmp = next((m for m in mods if m in _CMP), None)
    comb = next((m for m in mods if m in _BOOL), "AND")
    if cmp is None:
        if "T" in mods or "F" in mods:
            r = np.full(WARP, "T" in mods)
            pv, pk = ws.pred(ops[4]) if len(ops) > 4 else (_ALL.copy(), _ALL.copy())
            return [(ops[0], (_BOOL[comb](r, pv), pk))]
        raise NotExecuted(f"`{x.full_opcode}`")
    a, b = ws.operand(ops[2]), ws.operand(ops[3])
    pc_v, pc_k = ws.pred(ops[4]) if len(ops) > 4 else (_ALL.copy(), _ALL.copy())
    unsigned = "U32" in mods
    av = a.v.astype(np.int64) if unsigned else _signed(a.v)
    bv = b.v.astype(np.int64) if unsigned else _signed(b.v)
    r = _CMP[cmp](av, bv)
    if "EX" in mods:
        lo_v, lo_k = ws.pred(ops[5]) if len(ops) > 5 else (_ALL.copy(), _ALL.copy())
        eq = av == bv
        if cmp in ("EQ",):
            r = eq & lo_v
        elif cmp == "NE":
            r = ~eq | lo_v
        else:
            strict = _CMP[cmp.replace("E", "T") if cmp in ("GE", "LE") else cmp](av, bv) & ~eq
            r = strict | (eq & lo_v)
        pc_k = pc_k & lo_k
    k = (a.st == KNOWN) & (b.st == KNOWN) & pc_k
    out = [(ops[0], (_BOOL[comb](r, pc_v), k))]
    if len(ops) > 1 and is_pred(ops[1]) and ops[1] not in ("PT", "UPT"):
        out.append((ops[1], (_BOOL[comb](~r, pc_v), k)))
    return out


def _imnmx(ws, x, active):
    dst, s = _srcs(x)
    a, b = ws.operand(s[0]), ws.operand(s[1])
    pv, pk = ws.pred(s[2]) if len(s) > 2 and is_pred(s[2]) else (_ALL.copy(), _ALL.copy())
    unsigned = "U32" in x.modifiers
    av = a.v.astype(np.int64) if unsigned else _signed(a.v)
    bv = b.v.astype(np.int64) if unsigned else _signed(b.v)
    r = np.where(pv, np.minimum(av, bv), np.maximum(av, bv)).astype(np.int64).astype(np.uint64) & _M32
    st = np.maximum(a.st, b.st)
    st = np.where(st == UNIFORM, UNKNOWN, st)
    st = np.where(pk, st, UNKNOWN).astype(np.int8)
    return [(_w(dst[0]), _uniform_or(ws, Value(r.astype(np.uint32), st, _reason([a, b])), [a, b], active))]


def _flo(ws, x, active):
    dst, s = _srcs(x)
    a = ws.operand(s[-1])
    signed = "U32" not in x.modifiers
    v = a.v.astype(np.int64)
    if signed:
        v = np.where(_signed(a.v) < 0, (~a.v).astype(np.int64) & 0xFFFFFFFF, v)
    idx = np.where(v == 0, -1, np.floor(np.log2(np.maximum(v, 1))).astype(np.int64))
    if "SH" in x.modifiers:
        idx = np.where(idx < 0, -1, 31 - idx)
    st = np.where(a.st == UNIFORM, UNKNOWN, a.st).astype(np.int8)
    return [(_w(dst[0]), _uniform_or(ws, Value((idx & 0xFFFFFFFF).astype(np.uint32), st, a.reason), [a], active))]


def _popc(ws, x, active):
    dst, s = _srcs(x)
    a = ws.operand(s[-1])
    r = np.array([bin(int(v)).count("1") for v in a.v], dtype=np.uint32)
    st = np.where(a.st == UNIFORM, UNKNOWN, a.st).astype(np.int8)
    return [(_w(dst[0]), _uniform_or(ws, Value(r, st, a.reason), [a], active))]


def _brev(ws, x, active):
    dst, s = _srcs(x)
    a = ws.operand(s[-1])
    r = np.array([int(f"{int(v):032b}"[::-1], 2) for v in a.v], dtype=np.uint32)
    st = np.where(a.st == UNIFORM, UNKNOWN, a.st).astype(np.int8)
    return [(_w(dst[0]), _uniform_or(ws, Value(r, st, a.reason), [a], active))]


def _iabs(ws, x, active):
    dst, s = _srcs(x)
    a = ws.operand(s[-1])
    r = np.abs(_signed(a.v)).astype(np.uint64) & _M32
    st = np.where(a.st == UNIFORM, UNKNOWN, a.st).astype(np.int8)
    return [(_w(dst[0]), _uniform_or(ws, Value(r.astype(np.uint32), st, a.reason), [a], active))]


def _sgxt(ws, x, active):
    dst, s = _srcs(x)
    a, n = ws.operand(s[0]), ws.operand(s[1])
    if n.worst != KNOWN:
        raise NotExecuted("SGXT by an unknown width")
    bits = int(n.v[0])
    v = a.v.astype(np.int64) & ((1 << bits) - 1) if bits < 32 else a.v.astype(np.int64)
    if "U32" not in x.modifiers and 0 < bits < 32:
        v = np.where(v >> (bits - 1) & 1, v - (1 << bits), v)
    st = np.where(a.st == UNIFORM, UNKNOWN, a.st).astype(np.int8)
    return [(_w(dst[0]), _uniform_or(ws, Value((v & 0xFFFFFFFF).astype(np.uint32), st, a.reason), [a], active))]


def _bmsk(ws, x, active):
    dst, s = _srcs(x)
    pos, width = ws.operand(s[0]), ws.operand(s[1])
    p, w = pos.v.astype(np.uint64), width.v.astype(np.uint64)
    r = (((np.uint64(1) << np.minimum(w, np.uint64(32))) - np.uint64(1)) << p) & _M32
    st = np.maximum(pos.st, width.st)
    st = np.where(st == UNIFORM, UNKNOWN, st).astype(np.int8)
    return [(_w(dst[0]), Value(r.astype(np.uint32), st, _reason([pos, width])))]


def _i2f(ws, x, active):
    """A 32-bit integer as a float32, or an integer (32-bit, or a 64-bit pair: `.S64`/`.U64`) as
    a double (`.F64`, into a register pair): `ceil((double)n / 512)` is `I2F.F64`, `DMUL`,
    `F2I.F64.CEIL`."""
    dst, s = _srcs(x)
    mods = x.modifiers
    wide = "S64" in mods or "U64" in mods
    # a half, or a 64-bit integer as a float (rounded twice through float64, not once)
    if "F16" in mods or (wide and "F64" not in mods):
        raise NotExecuted(f"`{x.full_opcode}`")
    if wide:
        lo, hi = ws.pair(s[-1])
        inputs = [lo, hi]
        v = _join(lo, hi)
        src = v.astype(np.float64) if "U64" in mods else v.view(np.int64).astype(np.float64)
    else:
        a = ws.operand(s[-1])
        inputs = [a]
        src = (a.v.astype(np.int64) if "U32" in mods else _signed(a.v)).astype(np.float64)
    if "F64" in mods:
        if wide and any(m in mods for m in ("RP", "RM", "RZ")):
            raise NotExecuted(f"`{x.full_opcode}`")  # a 64-bit integer rounded other than to nearest
        return _f64_result(ws, dst[0], src, inputs, active)
    r = _rounded(src, mods).view(np.uint32)
    st = np.where(a.st == UNIFORM, UNKNOWN, a.st).astype(np.int8)
    return [(_w(dst[0]), _uniform_or(ws, Value(r.astype(np.uint32), st, a.reason), [a], active))]


def _rounded(exact: np.ndarray, modifiers) -> np.ndarray:
    """float64 values as float32 in the instruction's rounding mode (`.RP` up, `.RM` down, `.RZ`
    toward zero, else to nearest): the integer division sequence rounds its divisor up
    (`I2F.U32.RP`) so that its reciprocal is never too large."""
    r = exact.astype(np.float32)
    up, down = np.nextafter(r, np.float32(np.inf)), np.nextafter(r, np.float32(-np.inf))
    if "RP" in modifiers:
        r = np.where(r.astype(np.float64) < exact, up, r)
    elif "RM" in modifiers:
        r = np.where(r.astype(np.float64) > exact, down, r)
    elif "RZ" in modifiers:
        r = np.where(np.abs(r.astype(np.float64)) > np.abs(exact), np.where(exact > 0, down, up), r)
    return r.astype(np.float32)


#: MUFU's functions on float32 (CUDA C Programming Guide, "Intrinsic Functions": the SFU's
#: approximations, within 1-2 ulp; executed here correctly rounded, which the integer division
#: sequence's correction steps absorb: its quotient is exact either way)
_MUFU = {"RCP": lambda f: 1.0 / f, "RSQ": lambda f: 1.0 / np.sqrt(f), "SQRT": np.sqrt, "EX2": np.exp2,
         "LG2": np.log2, "SIN": np.sin, "COS": np.cos, "TANH": np.tanh}


#: the high-word seeds of a double's reciprocal and reciprocal square root
_MUFU64H = {"RCP64H": lambda d: 1.0 / d, "RSQ64H": lambda d: 1.0 / np.sqrt(d)}


def _mufu64h(ws, x, active, fn):
    """`MUFU.RCP64H`/`.RSQ64H`: the high word of 1/d (1/sqrt d) for the double d whose high word
    is the operand (its low word taken as 0). The SFU's seed is good to about 23 bits; this one
    is the exact result's high word, and the Newton steps ptxas follows it with (DFMA, executed
    with one rounding) converge to the same correctly rounded quotient. A double division by a
    value that is not a power of two, `ceil((double)n / 3.0)`, is executed so."""
    dst, s = _srcs(x)
    lit = _float_literal(s[0].strip())
    if lit is not None:  # the literal is the double whose high word the SFU reads
        a = known(int(np.array(lit, np.float64).view(np.uint64)) >> 32)
    else:
        a = _float_operand(ws, s[0])
    d = (a.v.astype(np.uint64) << np.uint64(32)).view(np.float64)
    with np.errstate(all="ignore"):
        hi = (np.asarray(fn(d), np.float64).view(np.uint64) >> np.uint64(32)).astype(np.uint32)
    st = np.where(a.st == KNOWN, KNOWN, UNKNOWN).astype(np.int8)
    return [(_w(dst[0]), Value(hi, st, a.reason))]


def _mufu(ws, x, active):
    """MUFU.RCP/RSQ/SQRT/EX2/LG2/SIN/COS/TANH of a float32, and the `.RCP64H`/`.RSQ64H` seeds
    of a double's (`_mufu64h`)."""
    dst, s = _srcs(x)
    wide = next((_MUFU64H[m] for m in x.modifiers if m in _MUFU64H), None)
    if wide is not None and len(s) == 1:
        return _mufu64h(ws, x, active, wide)
    fn = next((_MUFU[m] for m in x.modifiers if m in _MUFU), None)
    if fn is None or len(s) != 1:
        raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    a = _float_operand(ws, s[0])
    with np.errstate(all="ignore"):
        r = fn(_f32(a)).astype(np.float32)  # beyond float32's range: inf, as the SFU gives
    return [(_w(dst[0]), _float_result(ws, r, [a], active))]


def _f2i(ws, x, active):
    dst, s = _srcs(x)
    double = "F64" in x.modifiers  # from a double in a register pair
    if double:
        f, (lo, hi) = _f64_operand(ws, s[-1])
        a = Value(lo.v, np.maximum(lo.st, hi.st), lo.reason or hi.reason)
    else:
        a = ws.operand(s[-1])
    if a.worst != KNOWN:
        if _uniform([a], active) and a.worst < UNKNOWN:
            return [(_w(dst[0]), ws.stand_in("a floating-point value converted to an integer"))]
        return [(_w(dst[0]), unknown(a.reason or "a floating-point value converted to an integer"))]
    if any(m in x.modifiers for m in ("F16", "S64", "U64")):  # a half, or into a 64-bit pair
        raise NotExecuted(f"`{x.full_opcode}`")
    if not double:
        f = a.v.view(np.float32).astype(np.float64)
    return [(_w(dst[0]), known(_to_integer(f, x.modifiers)))]


def _to_integer(f: np.ndarray, modifiers) -> np.ndarray:
    """F2I's result from float64 lanes: rounded as the modifier says (truncated by default),
    saturated to the 32-bit destination's range, NaN as 0."""
    f = np.floor(f) if "FLOOR" in modifiers else np.ceil(f) if "CEIL" in modifiers else \
        np.rint(f) if "NEAREST" in modifiers or "RN" in modifiers else np.trunc(f)
    lo, hi = (0, 2 ** 32 - 1) if "U32" in modifiers else (-2 ** 31, 2 ** 31 - 1)
    return (np.clip(np.nan_to_num(f), lo, hi).astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)


def _vote(ws, x, active):
    ops = [o.strip() for o in x.operands]
    if "ANY" not in x.modifiers and "ALL" not in x.modifiers:
        raise NotExecuted(f"`{x.full_opcode}`")
    preds = [o for o in ops[1:] if is_pred(o)]
    pv, pk = ws.pred(preds[-1])
    ok = all_lanes(pk[active])
    ballot = int(sum(1 << i for i in range(WARP) if active[i] and pv[i]))
    out: list = []
    if not is_pred(ops[0]):
        out.append((_w(ops[0]), known(ballot) if ok else ws.stand_in("a ballot of an unknown predicate")))
    pdst = [o for o in ops[: len(ops) - 1] if is_pred(o)]
    if pdst:
        res = (ballot != 0) if "ANY" in x.modifiers else all(pv[i] for i in range(WARP) if active[i])
        out.append((pdst[0], (np.full(WARP, res), np.full(WARP, ok))))
    return out


def _hfma2(ws, x, active):
    """`HFMA2.MMA Rd, -RZ, RZ, a, b`: ptxas's move of a 32-bit constant, written as two fp16
    halves (high first) added to a zero product."""
    dst, s = _srcs(x)
    if len(s) == 4 and s[0].lstrip("-") == "RZ" and s[1].lstrip("-") == "RZ":
        try:
            hi, lo = (int(np.float16(float(h)).view(np.uint16)) for h in s[2:4])
        except ValueError:
            raise NotExecuted(f"`{x.full_opcode}` results are not executed") from None
        return [(_w(dst[0]), known((hi << 16) | lo))]
    raise NotExecuted(f"`{x.full_opcode}` results are not executed")


_FLOAT = re.compile(r"^([-+]?)(\|?)([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|INF|QNAN|NAN))(\|?)$")


def _float_literal(op: str) -> float | None:
    """A float instruction's decimal literal (`1.875`, `-INF`, `105615` is 105615.0) as a Python
    float; None for a register, a constant or a hex word."""
    m = _FLOAT.match(op)
    if not m or op.lstrip("-+|").startswith("0x"):
        return None
    f = float(m.group(3).lstrip("+").replace("QNAN", "nan"))
    return -f if m.group(1) == "-" else f


def _signed_core(op: str) -> tuple[bool, bool, str]:
    """A float operand's `-` and `|x|`, and the register or constant they apply to."""
    neg = op.startswith("-")
    core = op.lstrip("-")
    absolute = core.startswith("|") and core.endswith("|")
    return neg, absolute, core.strip("|")


def _float_operand(ws: WarpState, op: str) -> Value:
    """A 32-bit float operand: a register or constant word with `-` / `|x|` applied to the sign
    bit, or a decimal literal."""
    op = op.strip().replace(".reuse", "")
    lit = _float_literal(op)
    if lit is not None:
        return known(int(np.array(lit, np.float32).view(np.uint32)))
    neg, absolute, core = _signed_core(op)
    val = ws.operand(core) if not _IMM.match(core) else known(int(core, 0) & 0xFFFFFFFF)
    v = val.v.copy()
    if absolute:
        v &= np.uint32(0x7FFFFFFF)
    if neg:
        v ^= np.uint32(0x80000000)
    st = np.where(val.st == KNOWN, KNOWN, UNKNOWN).astype(np.int8) if (absolute or neg) else val.st
    return Value(v, st, val.reason)


def _f32(v: Value) -> np.ndarray:
    return v.v.view(np.float32).astype(np.float64)


def _float_result(ws: WarpState, r: np.ndarray, inputs: list[Value], active: np.ndarray) -> Value:
    bits = np.asarray(r, np.float64).astype(np.float32).view(np.uint32)
    st = np.maximum.reduce([i.st for i in inputs])
    st = np.where(st == UNIFORM, UNKNOWN, st).astype(np.int8)
    why = _reason(inputs) or "a floating-point value computed from unknown inputs"
    return _uniform_or(ws, Value(bits.astype(np.uint32), st, why), inputs, active)


def _fp32(ws, x, active):
    """FADD, FMUL, FFMA (fused: the product of two floats is exact in float64, then one rounding),
    FMNMX on the lanes' float bits; rounding modifiers other than the default are not executed."""
    dst, s = _srcs(x)
    if any(m in x.modifiers for m in ("RM", "RP", "RZ", "SAT")):
        raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    vals = [_float_operand(ws, o) for o in s if not is_pred(o)]
    op = x.opcode.rstrip("32I")
    with np.errstate(all="ignore"):
        if op == "FADD":
            r = _f32(vals[0]) + _f32(vals[1])
        elif op == "FMUL":
            r = _f32(vals[0]) * _f32(vals[1])
        elif op == "FFMA":
            r = _f32(vals[0]) * _f32(vals[1]) + _f32(vals[2])
        elif op == "FMNMX":
            pv, pk = ws.pred(s[2]) if len(s) > 2 else (_ALL.copy(), _ALL.copy())
            r = np.where(pv, np.fmin(_f32(vals[0]), _f32(vals[1])), np.fmax(_f32(vals[0]), _f32(vals[1])))
            if not all_lanes(pk[active]):
                raise NotExecuted("FMNMX on an unknown predicate")
        else:
            raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    if "FTZ" in x.modifiers:
        r = np.where(np.abs(r) < np.finfo(np.float32).tiny, 0.0, r)
    return [(_w(dst[0]), _float_result(ws, r, vals, active))]


_FCMP = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
         "GE": np.greater_equal}


def _fsetp(ws, x, active):
    return _setp(ws, x, _f32_lanes)


def _dsetp(ws, x, active):
    return _setp(ws, x, _f64_lanes)


def _f32_lanes(ws: WarpState, op: str) -> tuple[np.ndarray, np.ndarray]:
    a = _float_operand(ws, op)
    return _f32(a), a.st == KNOWN


def _f64_lanes(ws: WarpState, op: str) -> tuple[np.ndarray, np.ndarray]:
    f, (lo, hi) = _f64_operand(ws, op)
    return f, (lo.st == KNOWN) & (hi.st == KNOWN)


def _setp(ws: WarpState, x, lanes) -> list:
    """FSETP's and DSETP's predicates, their operands read by `lanes` (float64 lanes and where
    they are known): `U` compares are true on NaN, the others false; the result combined with
    the last predicate."""
    ops = [o.replace(".reuse", "").strip() for o in x.operands]
    cmp = next((m for m in x.modifiers if m.rstrip("U") in _FCMP or m in ("NUM", "NAN")), None)
    if cmp is None or len(ops) < 4:
        raise NotExecuted(f"`{x.full_opcode}`")
    (fa, ka), (fb, kb) = lanes(ws, ops[2]), lanes(ws, ops[3])
    comb = next((m for m in x.modifiers if m in _BOOL), "AND")
    nan = np.isnan(fa) | np.isnan(fb)
    if cmp == "NUM":
        r = ~nan
    elif cmp == "NAN":
        r = nan
    else:
        with np.errstate(invalid="ignore"):
            r = _FCMP[cmp.rstrip("U")](fa, fb) if cmp not in ("NEU",) else ~np.equal(fa, fb)
        r = (r | nan) if cmp.endswith("U") and cmp != "NEU" else r & ~nan if not cmp.endswith("U") else r
    pc_v, pc_k = ws.pred(ops[4]) if len(ops) > 4 else (_ALL.copy(), _ALL.copy())
    k = ka & kb & pc_k
    out = [(ops[0], (_BOOL[comb](r, pc_v), k))]
    if len(ops) > 1 and is_pred(ops[1]) and ops[1] not in ("PT", "UPT"):
        out.append((ops[1], (_BOOL[comb](~r, pc_v), k)))
    return out


# ---- double precision: the conversions and the few operations that size work ------------------

def _f64_operand(ws: WarpState, op: str) -> tuple[np.ndarray, tuple[Value, Value]]:
    """A double operand: a register pair or 64-bit constant with `-` / `|x|`, or a decimal
    literal (`DMUL R2, R2, 0.001953125`); its lanes as float64 and the pair it came from."""
    op = op.strip().replace(".reuse", "")
    lit = _float_literal(op)
    if lit is not None:
        bits = int(np.array(lit, np.float64).view(np.uint64))
        return np.full(WARP, lit), (known(bits & 0xFFFFFFFF), known(bits >> 32))
    neg, absolute, core = _signed_core(op)
    lo, hi = ws.pair(core)
    f = _join(lo, hi).view(np.float64).copy()
    if absolute:
        f = np.abs(f)
    if neg:
        f = -f
    if absolute or neg:  # a sign applied to a stand-in is no longer a stand-in
        lo, hi = (Value(v.v, np.where(v.st == KNOWN, KNOWN, UNKNOWN).astype(np.int8), v.reason) for v in (lo, hi))
    return f, (lo, hi)


def _f64_result(ws: WarpState, dst: str, r: np.ndarray, inputs: list[Value], active: np.ndarray) -> list:
    """A double's lanes written to the register pair `dst` names, known where every input is."""
    bits = np.asarray(r, np.float64).view(np.uint64)
    st = np.maximum.reduce([i.st for i in inputs])
    st = np.where(st == UNIFORM, UNKNOWN, st).astype(np.int8)
    why = _reason(inputs) or "a floating-point value computed from unknown inputs"
    a, b = _pair_names(dst)
    lo = Value((bits & _M32).astype(np.uint32), st, why)
    hi = Value((bits >> np.uint64(32)).astype(np.uint32), st.copy(), why)
    return [(a, _uniform_or(ws, lo, inputs, active)), (b, _uniform_or(ws, hi, inputs, active))]


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a·b + c with one rounding (DFMA), lane by lane: exact rationals, then the nearest double
    (`float` of a Fraction rounds correctly); non-finite lanes as float64 gives them."""
    with np.errstate(all="ignore"):
        out = a * b + c
    for i in range(WARP):
        if np.isfinite(a[i]) and np.isfinite(b[i]) and np.isfinite(c[i]):
            try:
                out[i] = float(Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i])))
            except OverflowError:
                pass  # beyond the double range: inf, as a·b + c gave
    return out


def _fp64(ws, x, active):
    """DADD, DMUL, DFMA, rounded to nearest (other rounding modes are not executed). A division
    by a constant that is not a power of two (MUFU.RCP64H and its Newton steps) is not executed."""
    dst, s = _srcs(x)
    if any(m in x.modifiers for m in ("RM", "RP", "RZ")):
        raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    ops = [o for o in s if not is_pred(o)]
    vals = [_f64_operand(ws, o) for o in ops]
    fs = [f for f, _ in vals]
    inputs = [v for _, pair in vals for v in pair]
    with np.errstate(all="ignore"):
        if x.opcode == "DADD":
            r = fs[0] + fs[1]
        elif x.opcode == "DMUL":
            r = fs[0] * fs[1]
        elif x.opcode == "DFMA" and len(fs) == 3:
            r = _fma64(*fs) if all(i.worst == KNOWN for i in inputs) else fs[0] * fs[1] + fs[2]
        else:
            raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    return _f64_result(ws, dst[0], r, inputs, active)


def _f2f(ws, x, active):
    """`F2F.F64.F32` (a float widened: exact) and `F2F.F32.F64` (a double rounded to float)."""
    dst, s = _srcs(x)
    mods = [m for m in x.modifiers if m in ("F64", "F32", "F16")]
    if mods == ["F64", "F32"]:
        a = _float_operand(ws, s[-1])
        return _f64_result(ws, dst[0], _f32(a), [a], active)
    if mods == ["F32", "F64"]:
        f, (lo, hi) = _f64_operand(ws, s[-1])
        return [(_w(dst[0]), _float_result(ws, _rounded(f, x.modifiers), [lo, hi], active))]
    raise NotExecuted(f"`{x.full_opcode}` results are not executed")


def _r2ur(ws, x, active):
    dst, s = _srcs(x)
    return [(_w(dst[0]), ws.operand(s[0]))]


def _pr_byte(x: Instruction, reg: str) -> int:
    """The byte of the register P2R/R2P pack the predicates into: `.B1`..`.B3` on the opcode
    (`P2R.B1`) or on the register operand (`R2P PR, R4.B2, 0x7f`); byte 0 without either."""
    for m in (*x.modifiers, *reg.split(".")[1:]):
        if m in ("B1", "B2", "B3"):
            return int(m[1])
    return 0


def _p2r(ws, x, active):
    """`P2R Rd, PR, Ra, mask`: P0..P6 as bits 0..6 (of the byte named), the mask's bits taken
    from the predicates and the others kept from Ra. nvcc spills a predicate that must live
    across a call or a long loop this way, then tests the bit again with ISETP."""
    dst, s = _srcs(x)
    uprs = s[0].startswith("UPR")
    if len(s) < 3 or not _IMM.match(s[2]):
        raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    mask, shift = int(s[2], 0) & 0x7F, 8 * _pr_byte(x, s[1])
    a = ws.operand(s[1].split(".")[0])
    bits, k = np.zeros(WARP, np.uint32), np.ones(WARP, bool)
    for i in range(7):
        if mask >> i & 1:
            v, pk = ws.pred(f"UP{i}" if uprs else f"P{i}")
            bits |= v.astype(np.uint32) << np.uint32(i)
            k &= pk
    field = np.uint32(mask << shift)
    v = (a.v & ~field) | ((bits << np.uint32(shift)) & field)
    st = np.where(k, a.st, UNKNOWN).astype(np.int8)
    st = np.where(st == UNIFORM, UNKNOWN, st).astype(np.int8)
    return [(_w(dst[0]), Value(v.astype(np.uint32), st, a.reason or ("" if all_lanes(k) else
                                                                     "a predicate P2R packs is not known")))]


def _r2p(ws, x, active):
    """`R2P PR, Ra, mask`: P_i = bit i of Ra (of the byte named) for the mask's bits; the other
    predicates keep their values."""
    dst, s = _srcs(x)
    if len(s) < 2 or not _IMM.match(s[1]):
        raise NotExecuted(f"`{x.full_opcode}` results are not executed")
    mask, shift = int(s[1], 0) & 0x7F, 8 * _pr_byte(x, s[0])
    a = ws.operand(s[0].split(".")[0])
    k = a.st == KNOWN
    prefix = "UP" if dst[0].startswith("UPR") else "P"
    return [(f"{prefix}{i}", (((a.v >> np.uint32(shift + i)) & 1).astype(bool), k.copy()))
            for i in range(7) if mask >> i & 1]


_EXEC = {
    "MOV": _mov, "MOV32I": _mov, "UMOV": _mov, "R2UR": _r2ur, "LDC": _ldc, "ULDC": _ldc, "LDCU": _ldc,
    "IMAD": _imad, "IMAD32I": _imad, "IMUL": _imad, "IMUL32I": _imad,
    "IADD3": _iadd3, "IADD": _iadd3, "IADD32I": _iadd3, "VIADD": _viadd,
    "LEA": _lea, "ISCADD": _lea, "SHF": _shf, "SHL": _shl, "SHR": _shl,
    "LOP3": _lop3, "LOP": _lop, "LOP32I": _lop, "PLOP3": _plop3, "PRMT": _prmt, "SEL": _sel, "FSEL": _sel,
    "ISETP": _isetp, "IMNMX": _imnmx, "VIMNMX": _imnmx, "FLO": _flo, "POPC": _popc, "BREV": _brev,
    "IABS": _iabs, "SGXT": _sgxt, "BMSK": _bmsk, "I2F": _i2f, "I2FP": _i2f, "F2I": _f2i, "VOTE": _vote, "VOTEU": _vote,
    "HFMA2": _hfma2, "FADD": _fp32, "FADD32I": _fp32, "FMUL": _fp32, "FMUL32I": _fp32, "FFMA": _fp32,
    "FFMA32I": _fp32, "FMNMX": _fp32, "FSETP": _fsetp, "MUFU": _mufu,
    "DADD": _fp64, "DMUL": _fp64, "DFMA": _fp64, "DSETP": _dsetp, "F2F": _f2f,
    "P2R": _p2r, "R2P": _r2p,
}
