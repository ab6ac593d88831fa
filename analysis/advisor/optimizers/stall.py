"""GPA Table II, stall-elimination optimizers: each matches stalls a code change can remove (Eq. 2)."""

from __future__ import annotations


from collections import defaultdict
from collections.abc import Sequence

from ...emulator.memory import AddressAnalysis, active_lanes
from ...frontend import isa
from ...frontend.instructions import SassFunction
from ...profile import StallReason as R
from .. import estimators
from ..advice import Advice
from ..blame import ARITHMETIC, LOCAL, SYNC, latency_class
from .static import is_fp64
from .base import (COMPUTE_UNITS, MEMORY_UNITS, MatchContext, Optimizer, atomics_fill_the_queue, back_edges,
                   describe_edge, file_index, hotspots, kernel_line, kernel_lines, line_list, pct, provenance_note,
                   requests_relieve)

#: Arithmetic whose results come back late: the SFU, conversions, FP64 and integer division's
#: reciprocal sequence (GPA Fig. 8's strength-reduction hints).
_LONG_ARITH = frozenset({"mio", "either"})


class RegisterReuse(Optimizer):
    """GPA: memory dependency stalls on local-memory loads/stores (spills, local arrays)."""

    name, title = "register_reuse", "Keep local-memory data in registers"
    relieves = MEMORY_UNITS

    def match(self, ctx: MatchContext) -> list[Advice]:
        facts = [f for f in ctx.facts if f.kind in ("spill", "local_memory")]
        if ctx.blame is not None and ctx.profile is not None:
            edges = ctx.blame.edges_where(lambda e: e.category == LOCAL)
            m = sum(e.samples for e in edges)
            if m <= 0:
                return []
            lines = sorted({e.def_line for e in edges if e.def_line}, key=lambda ln: -sum(
                e.samples for e in edges if e.def_line == ln))
            est = estimators.stall_elimination(ctx.total, m)
            top = hotspots(edges)[0]
            msg = (f"{pct(m / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) wait on local memory: "
                   f"{describe_edge(top)}. Local memory lives in DRAM behind L1; it holds register spills and "
                   f"arrays indexed by run-time values. Index private arrays with compile-time constants (unroll "
                   f"the loops that index them), move them to shared memory, or lower register pressure. "
                   f"Est. {est.speedup:.2f}× (GPA Eq. 2).")
            return [self.advice(ctx, lines=lines, importance=m / ctx.total, estimate=est, message=msg,
                                hotspots=hotspots(edges))]
        if not facts:
            return []
        lm = [i for i in ctx.instructions if latency_class(i) == "l1tex" and
              (i.memory_space == "local" or i.opcode in ("LDL", "STL"))]
        m = ctx.weight(lm)
        if m <= 0 or ctx.denominator <= 0:
            return []
        est = estimators.stall_elimination(ctx.denominator, m)
        f = facts[0]
        msg = (f"{f.detail} ({len(lm)} local-memory instructions). Each access goes through L1 to DRAM. Keep the data "
               f"in registers: constant indices, fewer live values, or shared memory. "
               f"Est. {est.speedup:.2f}× (GPA Eq. 2 over static issue counts).")
        return [self.advice(ctx, lines=sorted({x.line for x in facts}), importance=m / ctx.denominator,
                            estimate=est, message=msg)]


def _index_only(ctx: MatchContext, line: int) -> bool:
    """A line computing only a thread index from the built-ins, no division or call (`source.index_lines`)."""
    return ctx.source is not None and line in ctx.source.index_lines


def _divides(ctx: MatchContext, lines: list[int]) -> bool:
    """A division or modulo on `lines` whose divisor does not fold to a power of two (those compile
    to shifts and masks)."""
    return ctx.source is not None and any(d.line in lines and not d.power_of_two for d in ctx.source.divisions)


class StrengthReduction(Optimizer):
    """GPA: execution-dependency stalls on long-latency arithmetic (SFU, conversions, FP64, division)."""

    name, title = "strength_reduction", "Replace long-latency arithmetic"
    relieves = COMPUTE_UNITS

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.blame is None or ctx.total <= 0:
            return []
        # FP64 work on a line with a double literal or a double math call is that fix's (one fix, one
        # item: double_precision_constant / double_math_function change the same instructions)
        fp64_lines = {f.line for f in ctx.facts if f.kind in ("fp64_conversion", "fp64_math")}
        edges = ctx.blame.edges_where(lambda e: e.category == ARITHMETIC and e.reason in (R.wait, R.short_scoreboard)
                                      and latency_class(ctx.instructions[e.def_index]) in _LONG_ARITH
                                      and not (is_fp64(ctx.instructions[e.def_index])
                                               and kernel_line(ctx.instructions[e.def_index]) in fp64_lines))
        by_line: dict[int, float] = defaultdict(float)
        for e in edges:
            if (ln := kernel_line(ctx.instructions[e.def_index])) is not None:
                by_line[ln] += e.samples  # inlined math: the call site in the kernel, not the header
        # Integer division: the whole reciprocal/correction sequence is the cost (GPA Fig. 8 hint 1).
        counted = {e.def_index for e in edges}
        fn = SassFunction(mangled_name=ctx.kernel, name=ctx.kernel_name, is_kernel=True, instructions=ctx.instructions)
        for lo, hi in isa.find_int_division_sequences(fn):
            for ins in ctx.instructions[lo:hi + 1]:
                if ins.index not in counted and (ln := kernel_line(ins)) is not None:
                    by_line[ln] += ctx.cost_by_index.get(ins.index, 0.0)
        # Precondition: the line must be hot, and a line whose only arithmetic is the global index
        # (`blockIdx.x*blockDim.x+threadIdx.x`, one IMAD) has nothing to reduce.
        by_line = {ln: s for ln, s in by_line.items() if s / ctx.total >= 0.01 and not _index_only(ctx, ln)}
        m = sum(by_line.values())
        if m <= 0 or m / ctx.total < 0.01:
            return []
        lines = sorted(by_line, key=lambda ln: -by_line[ln])
        divides = _divides(ctx, lines)
        est = estimators.stall_elimination(ctx.total, m)
        ops = sorted({ctx.instructions[e.def_index].opcode for e in edges}) or ["integer division"]
        msg = (f"{pct(m / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) wait on long-latency "
               f"arithmetic ({', '.join(ops)}) at line {lines[0]}"
               + (f"; the hottest: {describe_edge(hotspots(edges)[0])}" if edges else "") + ". Look for a cheaper "
               + ("equivalent: multiply by a reciprocal instead of dividing (the divisor is not a constant power of "
                  "two, which the compiler would already shift), " if divides else "equivalent: ") +
               f"use float constants and float math "
               f"functions in float code so no FP64 conversion is needed, or hoist the computation out of the loop. "
               f"Est. {est.speedup:.2f}× (GPA Eq. 2).")
        return [self.advice(ctx, lines=lines, importance=m / ctx.total, estimate=est, message=msg,
                            hotspots=hotspots(edges))]


class FunctionSplit(Optimizer):
    """GPA: instruction-fetch stalls (the kernel's code does not fit the instruction cache)."""

    name, title = "function_split", "Shrink the hot code path"

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.profile is None or ctx.total <= 0:
            return []
        rows = [(ins, ctx.samples_at(ins, [R.no_instruction])) for ins in ctx.instructions]
        m = sum(s for _, s in rows)
        if m / ctx.total < 0.05:
            return []
        lines = sorted({kernel_line(i) for i, s in rows if s > 0 and kernel_line(i)},
                       key=lambda ln: -sum(s for i, s in rows if kernel_line(i) == ln))
        est = estimators.stall_elimination(ctx.total, m)
        msg = (f"{pct(m / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) are instruction-fetch stalls "
               f"(no instruction) over {len(ctx.instructions)} SASS instructions. The hot path does not stay in the "
               f"instruction cache: split rarely taken work into a separate kernel or a non-inlined function, and "
               f"avoid unrolling cold loops. Est. {est.speedup:.2f}× (GPA Eq. 2).")
        return [self.advice(ctx, lines=lines[:5] or [0], importance=m / ctx.total, estimate=est, message=msg)]


#: Files whose inlined code is CUDA's math library.
_MATH_FILES = ("math_functions", "crt/", "device_functions", "sm_20_intrinsics", "cuda_fp16")
_MATH_CALLS = frozenset({"sin", "cos", "tan", "exp", "exp2", "exp10", "log", "log2", "log10", "pow", "sqrt", "rsqrt",
                         "erf", "erfc", "tanh", "sinh", "cosh", "atan", "atan2", "asin", "acos", "cbrt", "hypot",
                         "sinf", "cosf", "tanf", "expf", "exp2f", "exp10f", "logf", "log2f", "log10f", "powf", "erff",
                         "tanhf", "atanf", "atan2f", "asinf", "acosf", "cbrtf", "hypotf", "sincosf", "sincos",
                         "normf", "fmod", "fmodf"})


def _is_fp64_opcode(opcode: str) -> bool:
    return isa.opcode_info(opcode).klass is isa.InstrClass.FP64


def _math_lines(source) -> set[int]:
    """The file's lines that call a CUDA math-library function."""
    return {c.span.first_line for c in source.calls if c.callee.split("::")[-1] in _MATH_CALLS}


class FastMath(Optimizer):
    """GPA: stalls inside CUDA math-library functions (precise sin/exp/pow/…)."""

    name, title = "fast_math", "Use fast math intrinsics"
    relieves = COMPUTE_UNITS

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.profile is None or ctx.total <= 0:
            return []
        # -use_fast_math and the intrinsics are single precision: FP64 code and calls into FP64
        # library functions (the double `pow`) are not theirs to speed up
        fp64_calls = {c.index for c in ctx.call_sites if any(_is_fp64_opcode(op) for op in c.opcodes)}
        math_lines = file_index(ctx.source, "math_lines", _math_lines) if ctx.source is not None else None
        # code inlined from the math headers *on a line that calls a math function*: the same headers
        # also define the `__half` operators and intrinsics, which fast math does not change (an FP16
        # GEMM is not math-library code)
        in_math = [i for i in ctx.instructions if i.location is not None and i.inline_chain
                   and any(t in i.location.file for t in _MATH_FILES)
                   and (math_lines is None or kernel_line(i) in math_lines)
                   and not _is_fp64_opcode(i.opcode) and i.index not in fp64_calls]
        math_lines = math_lines or set()
        if not in_math and math_lines:
            in_math = [i for i in ctx.instructions if kernel_line(i) in math_lines and latency_class(i) != "l1tex"
                       and not _is_fp64_opcode(i.opcode) and i.index not in fp64_calls]
        stalls = [x for x in R if x != R.selected]
        m = ctx.weight(in_math, stalls)
        if m <= 0 or m / ctx.total < 0.02:
            return []
        by_line: dict[int, float] = defaultdict(float)
        for i in in_math:
            if (ln := kernel_line(i)) is not None:
                by_line[ln] += ctx.samples_at(i, stalls)
        lines = sorted(by_line, key=lambda ln: -by_line[ln])
        est = estimators.stall_elimination(ctx.total, m)
        msg = (f"{pct(m / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) are stalls inside CUDA math "
               f"library code ({len(in_math)} instructions inlined from precise math functions). Where the accuracy "
               f"allows, use the intrinsics (__expf, __sinf, __powf, __fdividef) or compile with -use_fast_math. "
               f"Est. {est.speedup:.2f}× (GPA Eq. 2).")
        return [self.advice(ctx, lines=lines[:5], importance=m / ctx.total, estimate=est, message=msg)]


class WarpBalance(Optimizer):
    """GPA: synchronization stalls — warps wait at a barrier for the slowest warp of the block."""

    name, title = "warp_balance", "Balance work between barriers"
    relieves = frozenset({"barrier"})

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.blame is None or ctx.total <= 0:
            return []
        edges = ctx.blame.edges_where(lambda e: e.category == SYNC)
        selfs = [s for s in ctx.blame.self_blame if s.reason in (R.barrier, R.membar)]
        by_line: dict[int, float] = defaultdict(float)
        for e in edges:
            by_line[e.def_line or 0] += e.samples
        for s in selfs:
            by_line[s.line or 0] += s.samples
        m = sum(by_line.values())
        if m / ctx.total < 0.03:
            return []
        lines = sorted((ln for ln in by_line if ln), key=lambda ln: -by_line[ln])
        est = estimators.stall_elimination(ctx.total, m)
        msg = (f"{pct(m / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) are warps waiting at "
               f"__syncthreads() (line {lines[0] if lines else '?'}). The block waits for its slowest warp: give warps "
               f"equal work between barriers, drop barriers that order nothing, or split the phases so fewer warps "
               f"take part (Starlight Table 1: remove sync / split computation). Est. {est.speedup:.2f}× (GPA Eq. 2).")
        return [self.advice(ctx, lines=lines or [0], importance=m / ctx.total, estimate=est, message=msg,
                            hotspots=hotspots(edges))]


#: a reduction tree's steps within one warp: lg2(32) of them need no shared memory and no barrier
_WARP_STEPS = 5


def _shared_tree(ctx: MatchContext) -> list[Instruction]:
    """The instructions of a block's reduction through shared memory: each SASS loop whose body has
    a barrier, shared loads and shared stores and no global access (`for (s = n/2; s > 0; s >>= 1)
    { if (tid < s) sh[tid] += sh[tid + s]; __syncthreads(); }`), and the unrolled steps after the
    kernel's last global load (shared accesses and barriers, `volatile` last-warp steps too), each
    only where the kernel then stores one result per block. None where the kernel already shuffles."""
    ins = ctx.instructions
    if ctx.profile is None or ctx.arch is None or any(i.opcode == "SHFL" for i in ins):
        return []
    glob = [i for i in ins if i.memory_space in ("global", "generic")]
    block = tuple(ctx.profile.launch.block)
    warps = -(-ctx.profile.launch.threads_per_block // ctx.arch.warp_size)
    aa = AddressAnalysis(ins)

    def one_result_after(index: int) -> bool:
        """The global stores after `index` are one per block (`if (tid == 0) out[b] = sh[0]`,
        `memory.active_lanes`). A loop of the same shape whose every thread then stores its element
        (a Hillis-Steele scan, a bitonic sort) or a tile staged through shared memory (a transpose)
        is no reduction: it has no steps a warp's shuffles take from the block."""
        stores = [g for g in glob if g.index > index and isa.access_direction(g) is not isa.Access.LOAD]
        return bool(stores) and all(active_lanes(ins, aa, g.index, ctx.arch.warp_size, block) * warps <= 1
                                    for g in stores)

    tree: dict[int, Instruction] = {}
    for head, latch in back_edges(ins):
        body = ins[head:latch + 1]
        ops = {i.opcode for i in body}
        if ({"BAR", "LDS", "STS"} <= ops and not any(head <= g.index <= latch for g in glob)
                and one_result_after(latch)):
            tree.update({i.index: i for i in body if i.opcode in ("BAR", "LDS", "STS")})
    loads = [g for g in glob if isa.access_direction(g) is isa.Access.LOAD]
    if loads:
        last = max(g.index for g in loads)
        after = [i for i in ins[last + 1:] if i.opcode in ("BAR", "LDS", "STS")]
        if {"BAR", "LDS", "STS"} <= {i.opcode for i in after} and one_result_after(last):
            tree.update({i.index: i for i in after})
    return [tree[k] for k in sorted(tree)]


class WarpShuffle(Optimizer):
    """A block reduction through shared memory and barriers: its steps within a warp can exchange
    registers with `__shfl_down_sync` instead (no shared store, no barrier), and only the warps'
    partial results cross shared memory once. Not one of GPA's optimizers (its warp balance
    matches barrier stalls alone); estimated by GPA Eq. 2 over the tree's barriers and shared
    stores (their issue and the waits blamed on them), the fraction of the tree's steps that fall
    within a warp: the shared loads become shuffles, which cost about what they cost."""

    name, title = "warp_shuffle", "Reduce within warps with shuffles"
    relieves = frozenset({"barrier", "shared"})

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.blame is None or ctx.total <= 0 or ctx.profile is None or ctx.arch is None:
            return []
        tree = _shared_tree(ctx)
        removed = [i for i in tree if i.opcode in ("BAR", "STS")]
        threads = ctx.profile.launch.threads_per_block
        if not removed or threads < 2 * ctx.arch.warp_size:
            return []  # a one-warp block: its tree is within a warp already (no cross-warp step to keep)
        steps = max(1, (threads - 1).bit_length())  # lg2 of the block: the tree's steps
        f = min(1.0, _WARP_STEPS / steps)
        m = ctx.weight(removed)
        share = m / ctx.total
        est = estimators.stall_elimination(ctx.total, m, f)
        if share < 0.01 or est.speedup < 1.01:
            return []
        lines = kernel_lines(tree) or [0]
        msg = (f"The block reduces through shared memory: {len(removed)} barriers and shared stores on "
               f"{line_list(lines)} take {pct(share)} of this kernel's "
               f"samples ({provenance_note(ctx)}) with their waits. Reduce within each warp with "
               f"`__shfl_down_sync` (registers, no barrier), then combine the {-(-threads // ctx.arch.warp_size)} "
               f"warps' results through shared memory once: {_WARP_STEPS} of the {steps} steps of a {threads}-thread "
               f"block need no shared store and no barrier. Est. {est.speedup:.2f}× (GPA Eq. 2 over the barriers' and "
               f"stores' cost, f = {_WARP_STEPS}/{steps}).")
        return [self.advice(ctx, lines=lines, importance=share, estimate=est, message=msg, changes=removed)]


class MemoryTransactionReduction(Optimizer):
    """GPA: memory-throttle stalls — the LSU/MIO queues are full of requests."""

    name, title = "memory_transaction_reduction", "Issue fewer memory transactions"
    relieves = MEMORY_UNITS

    def relieved(self, ctx: MatchContext, changes: Sequence[Instruction]) -> frozenset[str]:
        return requests_relieve(ctx, changes)

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.blame is None or ctx.total <= 0:
            return []
        throttles = (R.lg_throttle, R.mio_throttle, R.tex_throttle)
        if atomics_fill_the_queue(ctx):
            # the queue is full of updates of one word: fewer or wider requests of the waiting
            # instructions change nothing; contended_atomics charges these stalls to the atomics
            throttles = (R.mio_throttle, R.tex_throttle)
        # Some throttling is normal in a streaming kernel; below 10 % of samples it is not a finding.
        # The entry's stack-pointer load is the compiler's, not a request the source can drop
        # (an empty kernel of 1024-thread blocks is half MIO throttle on it).
        selfs = [s for s in ctx.blame.self_blame
                 if s.reason in throttles and not isa.sets_stack_pointer(ctx.instructions[s.index])]
        by_line: dict[int, float] = defaultdict(float)
        for s in selfs:
            if s.line:
                by_line[kernel_line(ctx.instructions[s.index]) or s.line] += s.samples
        m = sum(by_line.values())
        if m / ctx.total < 0.1:
            return []
        lines = sorted(by_line, key=lambda ln: -by_line[ln])
        est = estimators.stall_elimination(ctx.total, m)
        waiting = [ctx.instructions[s.index] for s in selfs if s.line]
        msg = (f"{pct(m / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) are memory-throttle stalls "
               f"(the load/store queue is full), worst at line {lines[0]}. {_fewer_requests(ctx, lines, waiting)} "
               f"Est. {est.speedup:.2f}× (GPA Eq. 2).")
        return [self.advice(ctx, lines=lines, importance=m / ctx.total, estimate=est, message=msg, changes=waiting)]


def _fewer_requests(ctx: MatchContext, lines: list[int], waiting: list[Instruction]) -> str:
    """The one remedy the throttled requests call for (issue 34: not "vectorize, coalesce, shared
    memory" at once): coalescing where lanes stride, wider requests where they are 32-bit, fewer
    shared-memory requests where those fill the MIO queue, else reuse of what is already wide."""
    strided = sorted({f.line for f in ctx.facts if f.kind == "uncoalesced_access" and f.line in lines})
    if strided:
        return (f"Line{'s' if len(strided) > 1 else ''} {', '.join(map(str, strided[:3]))} access memory with a stride "
                f"between lanes, so each warp request splits into many transactions: make neighbouring lanes access "
                f"neighbouring words (swap the index roles, or stage the tile through shared memory).")
    worst = [i for i in waiting if kernel_line(i) == lines[0]] or waiting
    shared = [i for i in worst if i.memory_space == "shared"]
    global_ = [i for i in worst if i.memory_space in ("global", "generic")]
    if len(shared) > len(global_):
        ops = "/".join(sorted({i.opcode for i in shared}))
        return (f"The {len(shared)} shared-memory requests ({ops}) at line {lines[0]} fill the MIO queue: load wider "
                f"({ops}.128, four words per request) or keep values that are reused in registers.")
    narrow = [i for i in global_ if not {"64", "128"} & set(i.modifiers)]
    if narrow:
        ops = "/".join(sorted({i.opcode for i in narrow}))
        return (f"The {len(narrow)} 32-bit global {ops} at line {lines[0]} move one word per lane each: make them "
                f"128-bit (float4/int4, four elements per request) so a quarter as many requests wait in the queue.")
    return (f"The requests at line {lines[0]} are already wide and coalesced: issue fewer of them by reusing what "
            f"is loaded (registers, or shared memory for values several threads read).")
