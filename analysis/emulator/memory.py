"""Address patterns from SASS def-use chains: coalescing, bank conflicts, L2 reuse (SAAKE §4.4).

SAAKE identified uncoalesced accesses by hand; we do a small static analysis instead. An
address register is followed back through its reaching definitions (the latest earlier
definition in lexical order) while the operations are affine: S2R of SR_TID.* / SR_CTAID.*,
MOV, IMAD(.WIDE/.SHL/.MOV), IADD3, IADD, LEA, ISCADD, SHF.L/SHL. The result is the address as
coefficients of threadIdx.{x,y,z} and blockIdx.{x,y,z} (an unknown but non-zero coefficient
when it is multiplied by a kernel parameter), which gives, for the 32 lanes of a warp:

* global/local: the distinct 32 B sectors and 128 B lines touched → L2 requests and LSU
  wavefronts per warp instruction (coalesced: 4 sectors for 4 B/lane; one per lane when the
  stride is ≥ 32 B, SAAKE's "a transaction per thread");
* shared: 32 banks × 4 B; the replay factor is the largest number of distinct words in one bank;
* L2 reuse: an address that does not depend on a grid dimension is read by every block along
  it, so (when the user gives no hit rate) 1 − 1/(blocks sharing it) of its requests hit L2.

What the analysis cannot see is an assumption ("unknown" pattern), coalesced by default.

Where the emulator walked a warp through the kernel (`walk.py`), the addresses its lanes really
computed replace this analysis (`executed_shape`); an access whose lanes' addresses are not
known is `data_dependent`, with the distribution `data_dependent_shape` documents.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from ..frontend import isa
from ..frontend.instructions import Instruction
from .decode import MemoryShape
from .lanes import SHARED_WINDOW_HI, from_launch

# coefficient slots
TX, TY, TZ, BX, BY, BZ = range(6)
_SR = {"SR_TID.X": TX, "SR_TID.Y": TY, "SR_TID.Z": TZ, "SR_CTAID.X": BX, "SR_CTAID.Y": BY,
       "SR_CTAID.Z": BZ, "SR_LANEID": TX}
UNK = None  # a non-zero coefficient whose value is not a constant


@dataclass(frozen=True)
class Affine:
    coeffs: tuple[int | None, ...]  # per slot: 0, an int, or UNK
    const: int | None  # known constant part, None when it holds a parameter

    @property
    def is_const(self) -> bool:
        return self.const is not None and all(c == 0 for c in self.coeffs)

    @property
    def is_uniform(self) -> bool:  # the same for every lane of a warp
        return all(c == 0 for c in self.coeffs[:3])


ZERO = Affine((0,) * 6, 0)
PARAM = Affine((0,) * 6, None)  # a uniform value we do not know


def _const(v: int) -> Affine:
    return Affine((0,) * 6, v)


def _add(a: Affine | None, b: Affine | None) -> Affine | None:
    if a is None or b is None:
        return None
    cs = tuple(UNK if (x is UNK or y is UNK) and (x != 0 or y != 0) else (x or 0) + (y or 0)
               for x, y in zip(a.coeffs, b.coeffs))
    const = None if a.const is None or b.const is None else a.const + b.const
    return Affine(cs, const)


def _scale(a: Affine, k: int | None) -> Affine:
    cs = tuple(0 if c == 0 else (UNK if c is UNK or k is None else c * k) for c in a.coeffs)
    if k == 0:
        return ZERO
    return Affine(cs, None if a.const is None or k is None else a.const * k)


def _mul(a: Affine | None, b: Affine | None) -> Affine | None:
    if a is None or b is None:
        return None
    if a.is_const:
        return _scale(b, a.const)
    if b.is_const:
        return _scale(a, b.const)
    if all(c == 0 for c in a.coeffs):
        return _scale(b, None)
    if all(c == 0 for c in b.coeffs):
        return _scale(a, None)
    return None  # a product of two thread-dependent values is not affine


def _neg(a: Affine | None) -> Affine | None:
    return None if a is None else _scale(a, -1)


_IMM = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")
_REG = re.compile(r"^(-)?\|?(U?R\d+|U?RZ)")


class AddressAnalysis:
    """Affine values of registers at instructions of one function (memoised)."""

    def __init__(self, instructions: tuple[Instruction, ...], params: dict[int, int] | None = None) -> None:
        self.ins = instructions
        self.params = params or {}  # constant-bank offset -> known kernel-argument value
        self._defs: dict[str, list[int]] = {}
        for i, x in enumerate(instructions):
            for d in x.defs:
                self._defs.setdefault(d, []).append(i)
        self._memo: dict[tuple[str, int], Affine | None] = {}

    def reaching_def(self, reg: str, at: int) -> int | None:
        best = None
        for j in self._defs.get(reg, ()):
            if j < at:
                best = j
            else:
                break
        return best

    def value(self, reg: str, at: int, depth: int = 0) -> Affine | None:
        if reg in ("RZ", "URZ"):
            return ZERO
        if reg.startswith("UR"):
            j = self.reaching_def(reg, at)
            if j is None or depth > 24:
                return PARAM
            v = self._eval(j, depth + 1)
            return v if v is not None and v.is_uniform else PARAM
        j = self.reaching_def(reg, at)
        if j is None or depth > 24:
            return None
        key = (reg, j)
        if key not in self._memo:
            self._memo[key] = None  # cycle guard
            self._memo[key] = self._eval(j, depth + 1)
        return self._memo[key]

    def operand(self, op: str, at: int, depth: int) -> Affine | None:
        op = op.strip()
        if not op:
            return None
        if _IMM.match(op):
            return _const(int(op, 0))
        if op.startswith("c[") or op.startswith("-c[") or op.startswith("cx["):
            m = re.match(r"^-?c\[0x0\]\[(0x[0-9a-fA-F]+)\]$", op)
            if m and int(m.group(1), 16) in self.params:
                v = _const(self.params[int(m.group(1), 16)])
                return _neg(v) if op.startswith("-") else v
            return PARAM
        m = _REG.match(op)
        if m:
            v = self.value(m.group(2), at, depth)
            return _neg(v) if m.group(1) else v
        return None

    def _eval(self, j: int, depth: int) -> Affine | None:
        x = self.ins[j]
        op = x.opcode
        mods = x.modifiers
        srcs = _sources(x)
        if op in ("S2R", "S2UR", "CS2R"):
            sr = srcs[0] if srcs else ""
            if sr in _SR:
                cs = [0] * 6
                cs[_SR[sr]] = 1
                return Affine(tuple(cs), 0)
            return PARAM if op == "S2UR" else None
        info = isa.opcode_info(op)
        if op in ("LDC", "ULDC", "LDCU") and srcs:
            v = self.operand(srcs[0], j, depth)
            return v if v is not None and v.is_const else PARAM
        if info.klass is isa.InstrClass.UNIFORM:
            if op in ("UMOV", "UIADD3", "UIMAD", "ULEA", "USHF"):
                pass  # fall through to the affine rules below
            else:
                return PARAM
        if op in ("MOV", "MOV32I", "UMOV"):
            return self.operand(srcs[0], j, depth) if srcs else None
        if op in ("IMAD", "IMAD32I", "IMUL", "IMUL32I") and "HI" not in mods and len(srcs) >= 2:
            if "MOV" in mods and len(srcs) >= 3:
                return self.operand(srcs[2], j, depth)
            a, b = (self.operand(s, j, depth) for s in srcs[:2])
            prod = _mul(a, b)
            return _add(prod, self.operand(srcs[2], j, depth)) if len(srcs) >= 3 else prod
        if op in ("IADD3", "IADD", "IADD32I", "UIADD3"):
            if "X" in mods:
                return PARAM if all((v := self.operand(s, j, depth)) is not None and v.is_uniform
                                    for s in srcs) else None
            acc: Affine | None = ZERO
            for s in srcs:
                if _is_pred(s):
                    continue
                acc = _add(acc, self.operand(s, j, depth))
            return acc
        if op in ("LEA", "ISCADD") and "HI" not in mods and len(srcs) >= 3:
            a, b, sh = (self.operand(s, j, depth) for s in srcs[:3])
            if sh is None or not sh.is_const:
                return None
            return _add(_mul(a, _const(1 << sh.const)), b)
        if op in ("SHF", "SHL") and ("L" in mods or op == "SHL") and len(srcs) >= 2:
            a, sh = self.operand(srcs[0], j, depth), self.operand(srcs[1], j, depth)
            if sh is None or not sh.is_const:
                return None
            return _mul(a, _const(1 << sh.const))
        vals = [self.operand(s, j, depth) for s in srcs if not _is_pred(s)]
        if vals and all(v is not None and v.is_uniform and all(c == 0 for c in v.coeffs) for v in vals):
            return PARAM
        return None

    def address(self, x: Instruction) -> tuple[Affine | None, int]:
        """Affine address (bytes) of a memory instruction, and its immediate offset."""
        inner = _address_operand(x)
        if inner is None:
            return None, 0
        acc: Affine | None = ZERO
        offset = 0
        for part in re.split(r"\+", inner):
            part = part.strip()
            if not part:
                continue
            if _IMM.match(part):
                offset += int(part, 0)
                continue
            scale = 1
            m = re.match(r"^(U?R\d+|U?RZ)(?:\.64)?(?:\.U32)?(?:\.X(\d+))?", part)
            if not m:
                return None, 0
            if m.group(2):
                scale = int(m.group(2))
            acc = _add(acc, _mul(self.value(m.group(1), x.index), _const(scale)))
        return acc, offset


def _is_pred(op: str) -> bool:
    return bool(re.match(r"^!?U?P(\d+|T)$", op.strip()))


def _sources(x: Instruction) -> list[str]:
    """Operands after the destinations (register, predicate carry-outs)."""
    info = isa.opcode_info(x.opcode)
    ops = [o.replace(".reuse", "") for o in x.operands]
    n = info.n_dst
    out = ops[n:] if n else ops
    while out and _is_pred(out[0]) and (info.carry_out or info.pred_first or x.opcode in ("IADD3", "LEA")):
        out = out[1:]
    return out


def address_operand(x: Instruction) -> str | None:
    """The operand that holds the memory address (`[R2.64+0x10]`, `desc[UR4][R2.64]`). An async copy
    (LDGSTS: cp.async) names its shared destination first and reads the global one, its last."""
    ops = [op for op in x.operands if op.startswith("[") or op.startswith("desc[")]
    if not ops:
        return None
    return ops[-1] if x.opcode == "LDGSTS" else ops[0]


def _address_operand(x: Instruction) -> str | None:
    op = address_operand(x)
    groups = re.findall(r"\[([^\[\]]*)\]", op) if op is not None else []
    return groups[-1] if groups else None


# ---- cost per warp request -----------------------------------------------------------------


def lane_threads(block: tuple[int, int, int], warp_size: int = 32) -> list[tuple[int, int, int]]:
    bx, by, _ = block
    out = []
    for lane in range(warp_size):
        out.append((lane % bx, (lane // bx) % by, lane // (bx * by)))
    return out


def lane_addresses(addr: Affine, block: tuple[int, int, int], warp_size: int = 32) -> list[int] | None:
    """Byte offsets per lane relative to lane 0, or None when an unknown coefficient matters."""
    threads = lane_threads(block, warp_size)
    varies = [len({t[d] for t in threads}) > 1 for d in range(3)]
    for d in range(3):
        if varies[d] and addr.coeffs[d] is UNK:
            return None
    return [sum((addr.coeffs[d] or 0) * t[d] for d in range(3) if varies[d]) for t in threads]


#: Bytes the L1/shared data array returns to (or takes from) the register file per cycle and SM:
#: one wavefront. "The return bandwidth of L1 and shared memory is 128 bytes/cycle == 1
#: register/cycle ... LDS.128 requires 4 requests per instruction as it returns 4 registers"
#: (NVIDIA developer forum, t/77228). The roofline's L1/shared ceiling is the same 128 B/clk/SM
#: (`arch.SHARED_BYTES_PER_CLOCK_PER_SM`), so a warp request of 32 × `width` bytes takes at least
#: 32 × width / 128 wavefronts even when every lane reads the same word. (CC 7.x can pack uniform
#: addresses two lanes per register slot; not modeled, which keeps the model under its ceiling.)
WAVEFRONT_BYTES = 128


def data_wavefronts(width: int, warp_size: int = 32) -> int:
    """Wavefronts a full warp's `width`-byte-per-lane data needs on the 128 B/clk data path."""
    return max(1, -(-warp_size * width // WAVEFRONT_BYTES))


def global_shape(offsets: list[int] | None, width: int, hit_rate: float) -> MemoryShape:
    if offsets is None:  # the "unknown" assumption: coalesced
        sectors = max(1, len(range(0, 32 * width, 32)))
        return MemoryShape(wavefronts=float(data_wavefronts(width)), requests=sectors * 32 / 128,
                           l2_hit_rate=hit_rate, bytes_l1=32.0 * width, pattern="unknown")
    sec: set[int] = set()
    lines: set[int] = set()
    for a in offsets:
        for b in range(a, a + width, min(width, 32)):
            sec.add(b // 32)
            lines.add(b // 128)
        sec.add((a + width - 1) // 32)
    distinct = len(set(offsets))
    ideal = max(1, -(-len(offsets) * width // 32))
    pattern = ("broadcast" if distinct == 1 else "coalesced" if len(sec) <= ideal
               else "uncoalesced" if len(sec) >= len(offsets) else "strided")
    # one wavefront per 128 B line, and never fewer than the data path needs for 32 × width bytes
    return MemoryShape(wavefronts=float(max(data_wavefronts(width), len(lines))), requests=len(sec) * 32 / 128,
                       l2_hit_rate=hit_rate, bytes_l1=float(len(sec) * 32), pattern=pattern)


def shared_shape(offsets: list[int] | None, width: int, lanes: int = 32) -> MemoryShape:
    """Replays = max distinct 4 B words in one of 32 banks (same word: broadcast, no conflict).

    Wavefronts = max(replays, the data path's lanes × width / 128): a broadcast LDS.128 has no
    conflict but still returns 512 B, four 128 B wavefronts (see `WAVEFRONT_BYTES`). `lanes`: the
    lanes whose addresses the access reads (`isa.address_lanes`: 8 rows for an ldmatrix .x1).
    """
    if offsets is None:
        return MemoryShape(wavefronts=float(data_wavefronts(width, lanes)), requests=0.0,
                           bytes_l1=float(lanes * width), pattern="unknown")
    banks: dict[int, set[int]] = {}
    for a in offsets:
        for b in range(a // 4, (a + max(width, 4) - 1) // 4 + 1):
            banks.setdefault(b % 32, set()).add(b)
    replays = max(len(v) for v in banks.values())
    ideal = data_wavefronts(width, lanes)
    return MemoryShape(wavefronts=float(max(replays, ideal)), requests=0.0, bytes_l1=float(lanes * width),
                       pattern="coalesced" if replays <= ideal else "bank_conflict")


def executed_shared_shape(addresses: list[int], width: int) -> MemoryShape:
    """The shape of a shared access from its lanes' own addresses: the largest number of distinct
    4 B words in one bank (`shared_shape`), counted per group of lanes the hardware serves
    together: the whole warp up to 64 bits, each half-warp for 128 bits. Measured on the H100
    reports: a 128-bit load that every lane of a warp reads at one address (`As[ty][k..k+3]` with
    a 32-wide block; cuda-samples' matrixMul line 113, sgemm_tiled line 33) takes 2 wavefronts,
    one per half-warp, not the 4 its 512 B would need nor 1."""
    per = min(len(addresses), max(1, 256 // max(width, 4)))
    wavefronts = need = 0
    for i in range(0, len(addresses), per):
        banks: dict[int, set[int]] = {}
        for a in addresses[i:i + per]:
            for w in range(a // 4, (a + max(width, 4) - 1) // 4 + 1):
                banks.setdefault(w % 32, set()).add(w)
        wavefronts += max(len(v) for v in banks.values())
        need += -(-sum(len(v) for v in banks.values()) // 32)  # its distinct words spread over the banks
    # the bytes the data path carries: a broadcast's 512 B of registers are 2 wavefronts' 256 B, so
    # the traffic stays under the roofline's 128 B/clk/SM shared ceiling, as the hardware does
    carried = min(len(addresses) * width, wavefronts * WAVEFRONT_BYTES)
    return MemoryShape(wavefronts=float(wavefronts), requests=0.0, bytes_l1=float(carried),
                       pattern="coalesced" if wavefronts <= need else "bank_conflict")


def l2_reuse_rate(addr: Affine | None, grid: tuple[int, int, int], cap: float = 0.9) -> float:
    """Blocks along a grid dimension the address does not depend on read the same lines."""
    if addr is None:
        return 0.0
    sharing = 1
    for d, g in zip((BX, BY, BZ), grid):
        if addr.coeffs[d] == 0:
            sharing *= g
    return min(cap, 1.0 - 1.0 / sharing) if sharing > 1 else 0.0


def param_offsets(base: int, params: list[tuple[str, bool, str]], values: dict[str, int]) -> dict[int, int]:
    """Constant-bank offsets of kernel arguments whose values are known.

    Kernel arguments live in constant bank 0 from `base` (`ArchSpec.constant_bank.params`: 0x160
    on sm_70–sm_89, 0x210 on sm_90, 0x380 on sm_100/sm_120), each aligned to its size (the CUDA
    ABI; visible in any SASS listing as c[0x0][0x210]...). `params` is (name, is_pointer, type
    text) in declaration order; an unknown type stops the walk.
    """
    off = base
    out: dict[int, int] = {}
    for name, is_ptr, ty in params:
        t = ty.replace("const", "").replace("unsigned", "").strip()
        size = 8 if is_ptr or t in ("long", "long long", "size_t", "double", "int64_t", "uint64_t") else \
            4 if t in ("int", "float", "", "int32_t", "uint32_t") else None
        if size is None:
            break
        off = (off + size - 1) // size * size
        if name in values and not is_ptr and size == 4:
            out[off] = values[name]
        off += size
    return out


_THREAD_SOURCES = ("SR_TID", "SR_LANEID")
#: the lane within the warp: `threadIdx.x & 31` (also `% 32`, which ptxas turns into the mask)
_LANE_MASKS = frozenset({"0x1f", "31"})
_DIM = {"SR_TID.X": 0, "SR_TID.Y": 1, "SR_TID.Z": 2}


def _thread_sources(ins: tuple[Instruction, ...], aa: AddressAnalysis, reg: str, at: int,
                    depth: int = 0) -> frozenset[str]:
    """The thread or lane indices `reg` at `at` is computed from (`SR_TID.X`, `SR_TID.Y`,
    `SR_TID.Z`, `SR_LANEID`; followed through any operation, not only affine ones: a ballot's
    leader), and "lane" where a mask to the warp's width (`& 31`) is on the way."""
    if depth > 8 or reg in ("RZ", "URZ", "PT"):
        return frozenset()
    j = aa.reaching_def(reg, at)
    if j is None:
        return frozenset()
    x = ins[j]
    if x.opcode in ("S2R", "CS2R"):
        return frozenset(op for op in x.operands if op.startswith(_THREAD_SOURCES))
    out = frozenset().union(*(_thread_sources(ins, aa, u, j, depth + 1) for u in x.uses if u not in x.defs))
    if out and x.opcode == "LOP3" and _LANE_MASKS & {o.strip() for o in x.operands}:
        out |= {"lane"}
    return out


def _election(ins: tuple[Instruction, ...], aa: AddressAnalysis, pred: str, at: int,
              runs_if: bool) -> frozenset[str] | None:
    """The thread indices the instruction at `at` is elected on under this guard, if it runs only
    where an equality with a thread-derived value holds (`if (threadIdx.x == 0)`, the elected lane
    of a warp aggregation): `pred` must be `runs_if` for it to run. None if it is no election."""
    negated = pred.startswith("!")
    j = aa.reaching_def(pred.lstrip("!"), at)
    if j is None:
        return None
    x = ins[j]
    if x.opcode == "ISETP" and len(x.operands) >= 4:
        cmp = next((m for m in x.modifiers if m in ("EQ", "NE")), None)
        compared = [op.split(".")[0].lstrip("-|!") for op in x.operands[2:4]]
        masked = False
    elif x.opcode == "LOP3" and x.operands and x.operands[0] == pred.lstrip("!"):
        # `LOP3.LUT P0, RZ, R6, 0x1f, ...`: P0 = (the result != 0), e.g. `(threadIdx.x & 31) != 0`;
        # `LOP3.LUT P2, RZ, R3, R0, RZ, 0xfc`: (threadIdx.y | threadIdx.x) != 0
        cmp = "NE"
        compared = [op.split(".")[0].lstrip("-|!~") for op in x.operands[2:5]]
        masked = bool(_LANE_MASKS & set(compared))  # the test masks to the lane itself
    else:
        return None
    if cmp is None:
        return None
    sources = frozenset().union(*(_thread_sources(ins, aa, r, j) for r in compared if _REG.match(r)))
    if not sources:
        return None
    if masked:
        sources |= {"lane"}
    effective = runs_if != negated  # the instruction runs iff the comparison's result equals this
    return sources if (cmp == "EQ") == effective else None


def _updates_per_warp(sources: frozenset[str], block: tuple[int, int, int] | None, warp_size: int) -> float:
    """Lanes that run an instruction elected on `sources`, per warp of the block on average: one
    in every warp for a lane index; for thread indices, the threads of the block that share the
    elected value of those indices (`threadIdx.x == 0` in a 256-thread block: 1 thread, 1/8 per
    warp; `threadIdx.x == 0` in a 32 × 32 block: one per row, 1 per warp). Without the block's
    shape, one per warp."""
    if "lane" in sources or "SR_LANEID" in sources or block is None:
        return 1.0
    picked = {_DIM[s] for s in sources if s in _DIM}
    threads = block[0] * block[1] * block[2]
    selected = math.prod(block[d] for d in range(3) if d not in picked)
    return selected / max(1, -(-threads // warp_size))


def active_lanes(ins: tuple[Instruction, ...], aa: AddressAnalysis, i: int, warp_size: int = 32,
                 block: tuple[int, int, int] | None = None) -> float:
    """Lanes of a warp that execute instruction `i`, averaged over the block's warps (the emulator
    runs every warp through a guard): an election of one lane per warp or of one thread of the
    block (`_updates_per_warp`), else the whole warp. The guard is the instruction's own
    predicate, the nearest conditional forward branch that skips over it, or a predicated EXIT
    before it (`if (lane != 0) return;`)."""
    x = ins[i]
    if x.predicate is not None and (e := _election(ins, aa, x.predicate, i, True)) is not None:
        return _updates_per_warp(e, block, warp_size)
    targets = {b.branch_target for b in ins if b.branch_target is not None}
    for j in range(i - 1, -1, -1):
        b = ins[j]
        skips = b.opcode == "BRA" and b.branch_target is not None and b.branch_target > x.pc
        if b.predicate is not None and (skips or b.opcode in ("EXIT", "RET")):
            # a conditional branch over `i`, or an early exit before it: `i` runs where it is not taken
            if (e := _election(ins, aa, b.predicate, j, False)) is not None:
                return _updates_per_warp(e, block, warp_size)
            if skips:
                return warp_size  # the nearest enclosing branch decides
            continue
        if b.pc in targets or b.opcode in ("EXIT", "RET"):
            break  # a merge point: code before it does not guard `i` alone
    return warp_size


def memory_shapes(fn_name: str, instructions: tuple[Instruction, ...], block: tuple[int, int, int],
                  grid: tuple[int, int, int], l2_hit_rate: float | None,
                  warp_size: int = 32, params: dict[int, int] | None = None) -> dict[tuple[str, int], MemoryShape]:
    """MemoryShape per (function, pc) of every memory instruction of one function."""
    aa = AddressAnalysis(instructions, params)
    out: dict[tuple[str, int], MemoryShape] = {}
    for x in instructions:
        info = isa.opcode_info(x.opcode)
        if info.memory_space is None and x.opcode != "SHFL":
            continue
        if x.opcode == "SHFL":
            out[(fn_name, x.pc)] = MemoryShape(wavefronts=1.0, requests=0.0, pattern="coalesced")
            continue
        rows, width = isa.address_lanes(x, warp_size)
        addr, _ = aa.address(x)
        offs = lane_addresses(addr, block, warp_size) if addr is not None else None
        if offs is not None:
            offs = offs[:rows]
        space = info.memory_space
        if space == "shared":
            out[(fn_name, x.pc)] = shared_shape(offs, width, rows)
        elif space in ("global", "local", "generic"):
            if space == "local":
                # local memory is interleaved per thread by the hardware: coalesced "as long as all
                # threads in a warp access the same relative address" (Programming Guide, local
                # memory); an index that differs between lanes (a histogram's bin from the data)
                # puts each lane in its own line
                offs = [4 * i for i in range(warp_size)] if width <= 4 else [width * i for i in range(warp_size)]
                hit = 1.0 if l2_hit_rate is None else l2_hit_rate
                diverges = addr is None or not addr.is_uniform
            else:
                hit = l2_reuse_rate(addr, grid) if l2_hit_rate is None else l2_hit_rate
                diverges = False
            shape = data_dependent_shape("global", warp_size, width, hit) if diverges else global_shape(offs, width, hit)
            if info.klass is isa.InstrClass.ATOMIC and addr is not None and all(c == 0 for c in addr.coeffs):
                # the same word for every thread of the grid: its updates contend (units.py)
                shape = replace(shape, same_address_lanes=active_lanes(instructions, aa, x.index, warp_size, block))
            out[(fn_name, x.pc)] = shape
        elif space == "constant":
            out[(fn_name, x.pc)] = MemoryShape(wavefronts=1.0, requests=0.0, pattern="broadcast")
    return out


# ---- shapes from the executed lanes (walk.py) -------------------------------------------------

#: Expected largest bank load when n lanes each read a uniformly random 4 B word (n balls into 32
#: bins), by n: the shared-memory replays `data_dependent_shape` charges a data-dependent access.
#: Exact, from the occupancy distribution (`tests/emulator/test_lanes.py` recomputes them).
MAX_BANK_LOAD = {1: 1.0, 2: 1.03125, 4: 1.1807861, 8: 1.6646222, 16: 2.3923834, 32: 3.5329410}


def data_dependent_shape(space: str, lanes: int, width: int, hit_rate: float) -> MemoryShape:
    """The documented distribution of an access whose addresses depend on data the model does
    not have (a gather `x[col[j]]`, a histogram's bins): every active lane in its own 32 B sector
    and 128 B line for global memory (a gather's worst case, and what a random index over a large
    array gives); for shared memory, the expected largest bank load of `lanes` random words."""
    lanes = max(1, lanes)
    if space == "shared":
        near = min(MAX_BANK_LOAD, key=lambda n: abs(n - lanes))
        replays = MAX_BANK_LOAD[near] * max(1, -(-width // 4))
        return MemoryShape(wavefronts=float(max(data_wavefronts(width), replays)), requests=0.0,
                           bytes_l1=float(lanes * width), pattern="data_dependent")
    sectors = lanes * max(1, -(-width // 32))
    return MemoryShape(wavefronts=float(max(data_wavefronts(width), lanes)), requests=sectors * 32 / 128,
                       l2_hit_rate=hit_rate, bytes_l1=float(sectors * 32), pattern="data_dependent")


def executed_shape(space: str, executions: list, width: int, hit_rate: float) -> MemoryShape:
    """The shape of one memory instruction over the walked warp's executions of it
    (`walk.Access`): each execution's sectors, lines and bank conflicts from its lanes' addresses,
    averaged; an execution whose addresses are not known takes `data_dependent_shape`."""
    shapes = []
    for acc in executions:
        if acc.addresses is None:
            shapes.append(data_dependent_shape(space, acc.lanes, width, hit_rate))
        elif space == "shared":
            shapes.append(executed_shared_shape(list(acc.addresses), width))
        else:
            shapes.append(global_shape(list(acc.addresses), width, hit_rate))
    n = len(shapes)
    patterns = [s.pattern for s in shapes]
    pattern = "data_dependent" if "data_dependent" in patterns else max(set(patterns), key=patterns.count)
    return MemoryShape(wavefronts=sum(s.wavefronts for s in shapes) / n, requests=sum(s.requests for s in shapes) / n,
                       l2_hit_rate=hit_rate, bytes_l1=sum(s.bytes_l1 for s in shapes) / n, pattern=pattern)


@dataclass(frozen=True)
class LaneShapes:
    """What the walked warp says about the kernel's memory instructions (`walked_shapes`)."""

    shapes: dict[int, MemoryShape]  # slot -> shape, for the slots the walk reached
    followed: frozenset[int]  # slots whose every execution had known addresses
    relative: frozenset[int]  # of those, slots whose addresses hold an unknown uniform base
    data_dependent: dict[int, str]  # slot -> why its addresses are not known (the data decides)
    #: slot -> the argument its addresses need that the launch does not give (shape: the affine analysis's)
    from_launch: dict[int, str]
    unreached: frozenset[int]  # global/shared slots the walk did not execute
    unknown_branches: dict[int, str]
    truncated: bool
    #: generic slots whose every address fell in the shared window: shared accesses in the engine
    generic_shared: frozenset[int] = frozenset()


def in_shared_window(addresses) -> bool:
    """Every address is a generic pointer into the shared window (`SR_SWINHI` << 32)."""
    return all(int(v) >> 32 == SHARED_WINDOW_HI for v in addresses)


def walked_shapes(k, result) -> LaneShapes:
    """Memory shapes of the decoded kernel `k`'s global, generic, shared and local accesses from
    the walk `result` (`walk.walk`). A local access takes the lines its lanes' interleaved offsets
    fill (`walk.interleaved`) where the walk knew every lane's offset, else it keeps the address
    analysis's shape (`memory_shapes`: one line where the offset is provably the same for every
    lane, one sector per lane where it is not). An atomic keeps its same-address contention
    (`active_lanes`)."""
    shapes: dict[int, MemoryShape] = {}
    followed, relative, unreached = set(), set(), set()
    dd: dict[int, str] = {}
    args: dict[int, str] = {}
    generic_shared = set()
    for s, ins in enumerate(k.instr):
        info = isa.opcode_info(ins.opcode)
        space = info.memory_space
        if space == "local":
            execs = result.local.get(s)
            if execs and all(a.addresses is not None for a in execs):
                # a thread's index into its own array (a sinf's reduction table, a histogram
                # bin): lanes at one offset share lines, as the walked values say
                width = max(1, isa.access_bytes(ins) or 4)
                shapes[s] = executed_shape("global", execs, width, k.shape[s].l2_hit_rate)
            continue
        if space not in ("global", "generic", "shared") or ins.opcode in ("CCTL", "CCTLL"):
            continue
        execs = result.accesses.get(s)
        if not execs:
            unreached.add(s)
            continue
        old = k.shape[s]
        width = isa.address_lanes(ins)[1]
        if space == "generic" and all(a.addresses is not None and in_shared_window(a.addresses) for a in execs):
            space = "shared"  # a generic pointer into the shared window: banks, not sectors
            generic_shared.add(s)
        shape = executed_shape("shared" if space == "shared" else "global", execs, width, old.l2_hit_rate)
        missing = [a.reason for a in execs if a.addresses is None]
        if missing and all(from_launch(m) for m in missing):
            args[s] = missing[0]  # not data: an argument to give; the address analysis's shape stays
            continue
        shapes[s] = replace(shape, same_address_lanes=old.same_address_lanes)
        if missing:
            dd[s] = next((m for m in missing if not from_launch(m)), missing[0])
        else:
            followed.add(s)
            if any(a.relative for a in execs):
                relative.add(s)
    return LaneShapes(shapes, frozenset(followed), frozenset(relative), dd, args, frozenset(unreached),
                      dict(result.unknown_branches), result.truncated, frozenset(generic_shared))
