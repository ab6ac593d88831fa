"""How the arithmetic of an inner loop is fed: the operands each FMA needs from memory (register
tiling) and the unit that does the FMAs (tensor cores). Starlight Table 1's "increase arithmetic
intensity", matched on the SASS of the loop and estimated by GPA Eq. 2 over the blamed cost of
the instructions the change removes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...frontend import isa
from ...frontend.instructions import Instruction
from ...machine.arch import Resource
from .. import estimators
from ..advice import Advice
from .base import (COMPUTE_UNITS, MatchContext, Optimizer, back_edges, kernel_lines, line_list, pct,
                   provenance_note)

#: multiply-adds, by the precision a tensor core takes them in
_FMA = {"FFMA": "fp32", "HFMA2": "fp16", "FFMA2": "fp32"}
#: a kernel that already issues matrix instructions
_MMA = ("HMMA", "IMMA", "HGMMA", "IGMMA", "DMMA", "BMMA", "QGMMA", "UTCHMMA", "UTCQMMA")
#: the thread tile the register-tiling text proposes (leimao's and CUTLASS's SIMT GEMMs use 8 × 8):
#: each shared word loaded then feeds 8 FMAs, 2/8 words per FMA
TILE = 8
#: an FMA that takes more than this many shared words has almost no reuse in registers
MAX_WORDS_PER_FMA = 0.5


@dataclass(frozen=True)
class InnerLoop:
    """One innermost SASS loop (a backward branch and what it jumps back over)."""

    instructions: tuple[Instruction, ...]

    @property
    def fmas(self) -> list[Instruction]:
        return [i for i in self.instructions if i.opcode in _FMA]

    @property
    def shared_loads(self) -> list[Instruction]:
        return [i for i in self.instructions if i.opcode in ("LDS", "LDSM") or
                (i.opcode == "LD" and i.memory_space == "shared")]

    @property
    def loads(self) -> list[Instruction]:
        return [i for i in self.instructions if isa.access_direction(i) is isa.Access.LOAD
                and i.memory_space in ("shared", "global", "generic")]

    def shared_words(self) -> int:
        """4-byte words the loop's shared loads bring per thread and iteration (LDS.128: four)."""
        return sum(max(1, (isa.access_bytes(i) or 4) // 4) for i in self.shared_loads)

    def accumulating(self) -> list[Instruction]:
        """FMAs that add into the register they write (`FFMA R4, R8, R9, R4`): a dot product's
        running sums, the shape of a matrix multiply's (or a convolution's) inner loop, where both
        multiplicands come from the loop's loads."""
        loaded = {r for i in self.loads for r in i.defs}
        return [i for i in self.fmas if len(i.uses) >= 3 and i.defs and i.defs[0] == i.uses[-1]
                and any(r in loaded for r in i.uses[:2])]


def inner_loops(instructions: tuple[Instruction, ...]) -> list[InnerLoop]:
    """The innermost loops of the kernel's SASS: a branch back to an earlier PC, over no other."""
    spans = back_edges(instructions)
    inner = [(h, t) for h, t in spans if not any((h2, t2) != (h, t) and h <= h2 and t2 <= t for h2, t2 in spans)]
    return [InnerLoop(tuple(instructions[h:t + 1])) for h, t in inner]


class RegisterTiling(Optimizer):
    """An inner loop whose FMAs each take their operands from shared memory: a thread that computes a
    tile of outputs reuses every loaded value from registers (thread tiling)."""

    name, title, group = "register_tiling", "Compute a tile of outputs per thread", "roofline"
    relieves = frozenset({"shared", "lsu"})  # fewer shared loads per FMA

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.denominator <= 0:
            return []
        out = []
        for loop in inner_loops(ctx.instructions):
            fmas, lds = loop.fmas, loop.shared_loads
            if not fmas or not lds or not loop.accumulating():
                continue
            words = loop.shared_words() / len(fmas)
            if words <= MAX_WORDS_PER_FMA:
                continue  # each loaded word already feeds two FMAs or more
            # A TILE × TILE thread tile loads TILE + TILE words for TILE² FMAs: the loop's shared loads
            # shrink to that over what they are now (GPA Eq. 2 with the fraction removed)
            fraction = 1.0 - (2.0 / TILE) / words
            m = ctx.weight(lds)
            if m / ctx.denominator < 0.05:
                continue
            est = estimators.stall_elimination(ctx.denominator, m, fraction)
            if est.speedup <= 1.0:
                continue
            share = m / ctx.denominator
            lines = kernel_lines(lds) or [0]
            msg = (f"The loop at {line_list(lines)} loads "
                   f"{words:.2f} shared-memory words per FMA ({loop.shared_words()} words for {len(fmas)} FMAs per "
                   f"iteration): each loaded value feeds {1 / words:.1f} FMA{'s' if 1 / words >= 1.5 else ''}. "
                   f"{pct(share)} of this kernel's {'samples' if ctx.profile else 'issue slots'} "
                   f"({provenance_note(ctx)}) are on these shared loads. Keep values that are reused in registers: "
                   f"let each thread compute a {TILE}×{TILE} tile of outputs (or {TILE} along one dimension), "
                   f"loading a column of A and a row of B into registers once per k and forming their outer product, "
                   f"so each loaded word feeds {TILE} FMAs. Est. {est.speedup:.2f}× (GPA Eq. 2: {fraction:.0%} of "
                   f"the loop's shared loads removed).")
            out.append(self.advice(ctx, lines=lines, importance=share, estimate=est, message=msg,
                                   detail=str(lines[0]), changes=lds))
        return out[:1] if len(out) <= 1 else sorted(out, key=lambda a: -a.importance)[:1]


def tensor_ratio(ctx: MatchContext) -> float | None:
    """The device's dense FP16 tensor rate over its FP32 FMA rate (FLOP/s), from the arch data file."""
    if ctx.arch is None or ctx.device is None:
        return None
    pipe = ctx.arch.instructions.get(Resource.fp32)
    rate = pipe.rate_per_sm if pipe is not None else None
    if not rate:
        return None
    fp32 = (ctx.device.fp32_tflops * 1e12 if ctx.device.fp32_tflops else
            rate * 2 * ctx.device.sm_count * ctx.device.clock_hz)
    return ctx.device.tensor_fp16_dense_tflops * 1e12 / fp32


class TensorCores(Optimizer):
    """A matrix multiply's inner product on the FMA pipe of a GPU with tensor cores."""

    name, title, group = "tensor_cores", "Use tensor cores (mma / wmma)", "roofline"
    relieves = COMPUTE_UNITS

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.denominator <= 0 or any(i.opcode.startswith(_MMA) for i in ctx.instructions):
            return []
        ratio = tensor_ratio(ctx)
        if ratio is None or ratio <= 1.0:
            return []
        acc = [i for lp in inner_loops(ctx.instructions) for i in lp.accumulating()]
        # a dot product of loaded operands with several running sums (or a single one streamed over a
        # tile): the shape `mma` computes 16×8×16 of per warp instruction
        if not acc:
            return []
        m = ctx.weight(acc)
        share = m / ctx.denominator
        if share < 0.1:
            return []  # the FMAs are not what the kernel spends its time on (shared_memory_tiling's 10 %)
        # GPA Eq. 2: the FMAs' cost (their issue and the dependency stalls blamed on them) done at the
        # tensor rate, 1/ratio of it left
        fraction = 1.0 - 1.0 / ratio
        est = estimators.stall_elimination(ctx.denominator, m, fraction)
        precision = {_FMA[i.opcode] for i in acc}
        lines = kernel_lines(acc) or [0]
        msg = (f"{len(acc)} {'/'.join(sorted(precision)).upper()} FMAs accumulate a dot product of loaded operands "
               f"in the loop at {line_list(lines)}: "
               f"{pct(share)} of this kernel's {'samples' if ctx.profile else 'issue slots'} "
               f"({provenance_note(ctx)}) are on them. That is a matrix multiply on the FMA pipe; this GPU's tensor "
               f"cores do FP16/BF16 (TF32) multiply-adds {ratio:.0f}× faster with FP32 accumulation. Stage tiles in "
               f"shared memory and use `wmma::mma_sync` (or `mma.sync` / cuBLAS) if lower-precision inputs are "
               f"accurate enough. Est. {est.speedup:.2f}× (GPA Eq. 2: the FMAs' cost at the tensor rate).")
        return [self.advice(ctx, lines=lines, importance=share, estimate=est, message=msg, changes=acc)]
