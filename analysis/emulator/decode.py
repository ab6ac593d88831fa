"""Pre-decoding: a kernel (plus the __noinline__ functions it calls) as small parallel int arrays.

The engine's inner loop reads only these lists (llvm-mca's `InstrBuilder` does the same: an
`MCInst` is turned into a descriptor once). Everything that needs the `Instruction` model, the
ISA table or the address analysis happens here, once per emulation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..frontend import isa
from ..frontend.instructions import Instruction
from ..machine import integer_work
from ..profile import StallReason
from .units import RES_ID, RESOURCES

REASONS: tuple[StallReason, ...] = tuple(StallReason)
R = {r: i for i, r in enumerate(REASONS)}

# Instruction kinds the engine dispatches on.
K_OP, K_BRA, K_EXIT, K_CALL, K_RET, K_BAR, K_MEMBAR, K_WARPSYNC = range(8)
# Branch roles (SAAKE §4.4: known trip counts drive loops; other predicated paths fall through).
B_NONE, B_JUMP, B_BACK, B_EXIT, B_NOT_TAKEN = range(5)
# Memory routes.
M_NONE, M_GLOBAL, M_SHARED, M_CONSTANT, M_ATOMIC_GLOBAL, M_ATOMIC_SHARED = range(6)
#: a pseudo-resource index for the whole global route (LSU + L2 + DRAM backpressure)
GLOBAL_ROUTE = len(RESOURCES)

_ZERO_REGS = {"RZ", "URZ", "PT", "UPT"}


@dataclass(frozen=True)
class CallContexts:
    """Loop sampling's buckets (sampling.py) beyond the kernel's own loops:
    (call-site bucket, callee loop) -> bucket."""

    bucket: dict[tuple[int, int], int]
    order: tuple[tuple[int, int], ...]  # the pairs in bucket order (bucket = 1 + loops + position)

    def of(self, base: int, loop: int) -> int:
        """The bucket of `loop`'s steady state entered from a call made in bucket `base`."""
        return loop + 1 if base == 0 else self.bucket.get((base, loop), loop + 1)


@dataclass(frozen=True)
class LoopSpec:
    """One natural loop of the emulated code, in slots of the decoded image."""

    header: int
    latches: tuple[int, ...]  # slots of the back-edge branches
    body: frozenset[int]
    parent: int | None  # index of the enclosing loop
    trip: int  # full trip count (iterations of the SASS loop)
    info_index: int | None = None  # LoopInfo.index in the Program, when matched
    line: int | None = None


@dataclass(frozen=True)
class MemoryShape:
    """What one warp-level execution of a memory instruction costs (from `memory.py`)."""

    wavefronts: float = 1.0  # LSU / shared admissions (128 B each; shared: conflict replays)
    requests: float = 1.0  # 128 B units of the sectors the warp requests (sectors × 32 / 128)
    l2_hit_rate: float = 0.0  # of the sectors that reach L2 (stores: those not written back to DRAM)
    l1_hit_rate: float = 0.0  # of the sectors, served by L1 (caches.py)
    l1_miss_rate: float = 1.0  # of the executions, those with a sector from L2
    #: DRAM bytes per byte of L2 miss: above 1 where a miss fetches more than the sectors asked
    #: for (the L2 fetch granularity, caches.py)
    dram_scale: float = 1.0
    #: L2 slots per 128 B sent, relative to whole sectors: a partial-sector store costs more (caches.py)
    l2_cost: float = 1.0
    bytes_l1: float = 0.0  # bytes the warp requests at L1 / shared
    pattern: str = "coalesced"  # "coalesced", "strided", "broadcast", "uncoalesced", "unknown"
    #: an atomic whose address is the same for every thread of the grid: the lanes of one warp
    #: that update it, averaged over the block's warps (all serialize at the L2 slice owning the
    #: word; `memory.active_lanes`); 0 otherwise
    same_address_lanes: float = 0

    @property
    def l2_requests(self) -> float:
        """128 B units one execution that misses L1 sends to L2."""
        if self.l1_miss_rate <= 0:
            return 0.0
        return self.requests * (1.0 - self.l1_hit_rate) / self.l1_miss_rate


@dataclass
class DecodedKernel:
    """The code image: kernel slots first, then each called function's slots."""

    fn: list[str] = field(default_factory=list)  # mangled function of each slot
    pc: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    res: list[int] = field(default_factory=list)  # issue resource (RES_ID) or GLOBAL_ROUTE
    pipe: list[int] = field(default_factory=list)  # the arch class whose latency/gap applies
    mem: list[int] = field(default_factory=list)
    shape: list[MemoryShape] = field(default_factory=list)
    uses: list[tuple[int, ...]] = field(default_factory=list)
    defs: list[tuple[int, ...]] = field(default_factory=list)
    stall: list[int] = field(default_factory=list)
    waits: list[tuple[int, ...]] = field(default_factory=list)
    wbar: list[int] = field(default_factory=list)
    rbar: list[int] = field(default_factory=list)
    result_reason: list[int] = field(default_factory=list)
    is_store: list[bool] = field(default_factory=list)
    branch_role: list[int] = field(default_factory=list)
    target: list[int] = field(default_factory=list)
    loop_of: list[int] = field(default_factory=list)  # innermost loop or -1
    loop_chain: list[tuple[int, ...]] = field(default_factory=list)  # innermost first
    branch_loop: list[int] = field(default_factory=list)  # loop a B_BACK/B_EXIT refers to
    flops: list[dict[str, float]] = field(default_factory=list)  # per thread, by precision
    instr: list[Instruction] = field(default_factory=list)
    loops: list[LoopSpec] = field(default_factory=list)
    n_regs: int = 0
    entry: int = 0
    #: the call contexts of loops in callees (`sampling.call_contexts`), structural: filled once
    call_contexts: CallContexts | None = None

    def __len__(self) -> int:
        return len(self.kind)


_FLOP_PRECISION = {isa.InstrClass.FP32: "fp32", isa.InstrClass.FP64: "fp64", isa.InstrClass.FP16: "fp16",
                   isa.InstrClass.TENSOR: "tensor", isa.InstrClass.INT: "int"}


def _result_reason(ins: Instruction) -> int:
    """Which Nsight stall a consumer of this instruction's result shows (ncu warp-state docs)."""
    info = isa.opcode_info(ins.opcode)
    if not isa.is_variable_latency(ins):
        return R[StallReason.wait]
    if info.memory_space in ("global", "local", "generic") or info.klass is isa.InstrClass.ATOMIC:
        return R[StallReason.long_scoreboard]
    return R[StallReason.short_scoreboard]  # MIO: shared, MUFU, conversions, constants, S2R


def _kind(ins: Instruction) -> int:
    op = ins.opcode
    if op in ("BRA", "JMP", "BRX", "JMX", "BRXU", "JMXU"):
        return K_BRA
    if op in ("EXIT", "KILL"):
        return K_EXIT
    if op == "CALL":
        return K_BRA if isa.call_is_jump(ins) else K_CALL
    if op == "RET":
        return K_RET
    if op == "BAR" and not ins.modifiers[:1] == ("ARV",):
        return K_BAR
    if op in ("MEMBAR", "FENCE", "ERRBAR"):
        return K_MEMBAR
    if op in ("WARPSYNC", "BSYNC"):
        return K_WARPSYNC
    return K_OP


def _pipe_class(ins: Instruction) -> str:
    return isa.pipe(ins).value


def callee_name(ins: Instruction, names: list[str]) -> str | None:
    """The function a CALL targets, read from its operand text (`CALL.ABS.NOINC `(_Z6helperf)`)."""
    for op in ins.operands:
        for n in names:
            if n and n in op:
                return n
    m = re.search(r"\(([^)]+)\)", ins.text)
    if m and m.group(1) in names:
        return m.group(1)
    return None


def decode(functions: list[tuple[str, tuple[Instruction, ...]]],
           loops: list[LoopSpec] | None,
           shapes: dict[tuple[str, int], MemoryShape],
           calls: dict[tuple[str, int], str] | None = None) -> DecodedKernel:
    """Build the image. `functions[0]` is the kernel; `loops` use slots of this image.

    `shapes` gives the memory cost per (function, pc); missing entries mean one coalesced
    request. `calls` maps a CALL's (function, pc) to the callee's mangled name.
    """
    k = DecodedKernel()
    regs: dict[str, int] = {}

    def reg(name: str) -> int | None:
        base = name.split(".")[0].lstrip("!-|~")
        if not base or base in _ZERO_REGS:
            return None
        if base not in regs:
            regs[base] = len(regs)
        return regs[base]

    starts: dict[str, int] = {}
    for fname, ins_list in functions:
        starts[fname] = len(k.kind)
        int_ops = integer_work.integer_ops(ins_list)  # the INT32 roofline's work, overhead left out
        for ins, int_op in zip(ins_list, int_ops):
            k.fn.append(fname)
            k.pc.append(ins.pc)
            k.instr.append(ins)
            kind = _kind(ins)
            k.kind.append(kind)
            info = isa.opcode_info(ins.opcode)
            pipe = _pipe_class(ins)
            space = info.memory_space
            if info.klass is isa.InstrClass.ATOMIC:
                mem = M_ATOMIC_SHARED if space == "shared" else M_ATOMIC_GLOBAL
            elif space in ("global", "local", "generic"):
                mem = M_GLOBAL
            elif space == "shared":
                mem = M_SHARED
            elif space == "constant" and ins.opcode == "LDC":
                mem = M_CONSTANT
            elif ins.opcode == "SHFL":
                mem = M_SHARED
            else:
                mem = M_NONE
            k.mem.append(mem)
            k.pipe.append(RES_ID[pipe])
            k.res.append(GLOBAL_ROUTE if mem in (M_GLOBAL, M_ATOMIC_GLOBAL) else RES_ID[pipe])
            k.shape.append(shapes.get((fname, ins.pc), MemoryShape()) if mem != M_NONE else MemoryShape())
            k.uses.append(tuple(r for r in (reg(u) for u in ins.uses) if r is not None))
            k.defs.append(tuple(r for r in (reg(d) for d in ins.defs) if r is not None))
            c = ins.control
            k.stall.append(max(1, c.stall) if c is not None else 1)
            k.waits.append(c.waits_on if c is not None else ())
            k.wbar.append(c.write_barrier if c is not None and c.write_barrier is not None and c.write_barrier < 6 else -1)
            k.rbar.append(c.read_barrier if c is not None and c.read_barrier is not None and c.read_barrier < 6 else -1)
            k.result_reason.append(_result_reason(ins))
            k.is_store.append(info.access in (isa.Access.STORE, isa.Access.ATOMIC))
            fl = int_op if info.klass is isa.InstrClass.INT else isa.flops(ins)
            prec = _FLOP_PRECISION.get(info.klass)
            k.flops.append({prec: fl} if fl and prec else {})
    k.n_regs = max(1, len(regs))

    # control flow: targets as slots
    n = len(k.kind)
    pc_to_slot = {(k.fn[s], k.pc[s]): s for s in range(n)}
    k.target = [-1] * n
    names = [f for f, _ in functions]
    for s in range(n):
        ins = k.instr[s]
        if k.kind[s] == K_CALL:
            callee = (calls or {}).get((k.fn[s], ins.pc)) or callee_name(ins, names[1:])
            if callee in starts:
                k.target[s] = starts[callee]
            elif ins.branch_target is not None:
                k.target[s] = pc_to_slot.get((k.fn[s], ins.branch_target), -1)
        elif k.kind[s] == K_BRA and ins.branch_target is not None:
            k.target[s] = pc_to_slot.get((k.fn[s], ins.branch_target), -1)

    k.loops = list(loops) if loops is not None else find_loops(k)
    _assign_loops(k)
    return k


def find_loops(k: DecodedKernel) -> list[LoopSpec]:
    """Natural loops from back edges, per function, in lexical ranges (used when no CFG loops are given).

    ptxas lays a loop out contiguously (header first, latch last), so the body of a back edge
    latch -> header is the slot range [header, latch]; nesting is range containment.
    """
    by_header: dict[int, list[int]] = {}
    for s, kd in enumerate(k.kind):
        t = k.target[s]
        if kd == K_BRA and 0 <= t <= s and k.fn[t] == k.fn[s]:
            by_header.setdefault(t, []).append(s)
    raw = sorted(((h, tuple(sorted(ls))) for h, ls in by_header.items()), key=lambda x: (x[0], -x[1][-1]))
    ranges = [(h, ls[-1]) for h, ls in raw]
    out: list[LoopSpec] = []
    for i, (h, ls) in enumerate(raw):
        lo, hi = h, ls[-1]
        parent = None
        for j, (plo, phi) in enumerate(ranges):
            if j != i and plo <= lo and hi <= phi and (plo, phi) != (lo, hi):
                if parent is None or (ranges[parent][1] - ranges[parent][0]) > (phi - plo):
                    parent = j
        out.append(LoopSpec(header=h, latches=ls, body=frozenset(range(lo, hi + 1)), parent=parent, trip=1))
    return out


def _assign_loops(k: DecodedKernel) -> None:
    n = len(k.kind)
    loops = k.loops
    depth = []
    for L in loops:
        d, p = 0, L.parent
        while p is not None:
            d, p = d + 1, loops[p].parent
        depth.append(d)
    k.loop_of = [-1] * n
    k.loop_chain = [()] * n
    for s in range(n):
        inside = [i for i, L in enumerate(loops) if s in L.body]
        inside.sort(key=lambda i: -depth[i])
        k.loop_chain[s] = tuple(inside)
        k.loop_of[s] = inside[0] if inside else -1
    k.branch_role = [B_NONE] * n
    k.branch_loop = [-1] * n
    for s in range(n):
        if k.kind[s] != K_BRA:
            continue
        t = k.target[s]
        ins = k.instr[s]
        cond = ins.predicate is not None
        if t < 0:
            k.branch_role[s] = B_NOT_TAKEN  # indirect: fall through (no target to follow)
            continue
        back = next((i for i in k.loop_chain[s] if loops[i].header == t and s in loops[i].latches), None)
        if back is not None:
            k.branch_role[s], k.branch_loop[s] = B_BACK, back
            continue
        exited = next((i for i in k.loop_chain[s] if t not in loops[i].body), None)
        if exited is not None and cond:
            k.branch_role[s], k.branch_loop[s] = B_EXIT, exited
        elif exited is not None and t == s:
            k.branch_role[s] = B_NOT_TAKEN
        elif not cond and t != s:
            k.branch_role[s] = B_JUMP
        elif cond and _guard_passes(k, s, t):
            k.branch_role[s] = B_JUMP
        else:
            k.branch_role[s] = B_NOT_TAKEN


def exit_ends_iteration(k: DecodedKernel, s: int) -> bool:
    """Whether the loop exit at slot `s` is the iteration's last test: the next slot is its loop's
    unconditional back edge (`@P0 CALL.REL.NOINC exit; BRA head`, how ptxas closes register-blocked
    loops from sm_80). Such an exit is reached after the whole body, so it leaves on the loop's
    last trip; an exit at the head is reached once more, before a body that does not run."""
    nxt = s + 1
    return (k.branch_role[s] == B_EXIT and nxt < len(k) and k.kind[nxt] == K_BRA
            and k.branch_role[nxt] == B_BACK and k.branch_loop[nxt] == k.branch_loop[s]
            and k.instr[nxt].predicate is None)


def reachable(k: DecodedKernel, flipped: frozenset[int] = frozenset()) -> frozenset[int]:
    """The slots the engine can run from the entry under the branch roles: a loop inside a math
    slow path the model skips, or behind a guard it assumes passes, is never run (its trip count
    is no assumption of the result). A conditional forward branch in `flipped` goes the other way."""
    seen, todo, n = set(), [k.entry], len(k.kind)
    while todo:
        s = todo.pop()
        if s in seen or not 0 <= s < n:
            continue
        seen.add(s)
        kind, t, role = k.kind[s], k.target[s], k.branch_role[s]
        if s in flipped and role in (B_JUMP, B_NOT_TAKEN):
            role = B_NOT_TAKEN if role == B_JUMP else B_JUMP
        predicated = k.instr[s].predicate is not None
        if kind == K_BRA:
            if role in (B_JUMP, B_BACK, B_EXIT):
                todo.append(t)
            if role != B_JUMP:
                todo.append(s + 1)
        elif kind == K_CALL:
            todo += [t, s + 1]
        elif kind in (K_EXIT, K_RET):
            if predicated:
                todo.append(s + 1)
        else:
            todo.append(s + 1)
    return frozenset(seen)


#: undecided branches a kernel's `guessed_slots` looks at, at most (each is one pass over the code)
GUESSED_BRANCHES_MAX = 64


def guessed_slots(k: DecodedKernel, branches: Iterable[int]) -> frozenset[int]:
    """The slots the engine runs only because one of `branches` (conditional branches the model
    could not decide) goes the way it took: falling through, as a branch no rule decides does, or
    taken over what `_early_out` calls an early-out path (an `if`/`else` whose one side holds a
    loop looks like one). Reachable as they are, not with that branch the other way; a side both
    ways reach (after the two paths join) is not among them. A bare-return guard and a math slow
    path jumped over are assumptions of their own (guards pass; `math_slow_path`)."""
    live = reachable(k)

    def guessed(b: int) -> bool:
        if b not in live or k.kind[b] != K_BRA or k.instr[b].predicate is None:
            return False
        if k.branch_role[b] == B_NOT_TAKEN:
            return True
        t = k.target[b]
        return (k.branch_role[b] == B_JUMP and not _returns_at_once(k, b, t) and not _skips_slow_path(k, b, t)
                and not skips_trig_reduction(k, b))

    out: set[int] = set()
    for s in sorted(filter(guessed, branches))[:GUESSED_BRANCHES_MAX]:
        out |= live - reachable(k, frozenset({s}))
    return frozenset(out)


#: instructions that only mark reconvergence or order memory on the way out: no work of the kernel's
_NO_WORK = frozenset({"NOP", "BSSY", "BSYNC", "WARPSYNC", "MEMBAR", "ERRBAR", "CGAERRBAR"})


def _guard_passes(k: DecodedKernel, s: int, t: int) -> bool:
    """Whether the conditional branch at `s` to `t` is taken because its fall-through side is what
    a passing guard skips: a forward branch within its function over a loop-free early-out path
    (`_early_out`) or a math slow path (`_skips_slow_path`), over a bare return
    (`_returns_at_once`), or over the float trigonometric functions' inline Payne-Hanek reduction
    (`skips_trig_reduction`)."""
    if not s < t or k.fn[t] != k.fn[s]:
        return False
    loop_free = not any(s < L.header < t for L in k.loops)
    return ((loop_free and (_early_out(k, s, t) or _skips_slow_path(k, s, t))) or _returns_at_once(k, s, t)
            or skips_trig_reduction(k, s))


#: how far back `skips_trig_reduction` looks for the guard's compare: sincosf tests it again after
#: the first reduction, ~90 slots after the compare (nvcc 13.0); bounded so that every conditional
#: branch of a long function costs a few hundred steps at most, not the function's length
TRIG_GUARD_REACH = 256


def skips_trig_reduction(k: DecodedKernel, s: int) -> bool:
    """Whether the conditional branch at `s` is taken for |x| below the float trigonometric
    functions' reduction threshold (`isa.trig_reduction_guard`): it jumps over their inline
    Payne-Hanek path, which the fast path is assumed to make unneeded, as for the slow-path
    calls. Its predicate's last writer before it, in code order and at most TRIG_GUARD_REACH
    slots back, is the guard's FSETP."""
    pred = k.instr[s].predicate
    if pred is None:
        return False
    reg = pred.lstrip("!")
    for j in range(s - 1, max(-1, s - 1 - TRIG_GUARD_REACH), -1):
        if k.fn[j] != k.fn[s]:
            return False
        if reg in k.instr[j].defs:
            large = isa.trig_reduction_guard(k.instr[j])
            # taken for small |x|: `@!P` of a large-|x| test, or `@P` of a small-|x| one
            return large is not None and large == pred.startswith("!")
    return False


def _returns_at_once(k: DecodedKernel, s: int, t: int) -> bool:
    """Whether the fall-through side of the conditional forward branch at `s` leaves the function
    without doing anything: unconditional jumps and reconvergence marks up to an `EXIT`/`RET`
    (a `-G` build's `if (i >= n) return;` is `@P0 BRA <work>; BRA <exit>`). Falling through there
    would emulate none of the function's work; the guard is assumed to pass, as everywhere."""
    j = s + 1
    for _ in range(16):  # a jump chain, not a path search
        if not 0 <= j < len(k.kind) or j == t or k.instr[j].predicate is not None:
            return False
        kind = k.kind[j]
        if kind in (K_EXIT, K_RET):
            return True
        if kind == K_BRA:
            j = k.target[j]
        elif k.instr[j].opcode in _NO_WORK:
            j += 1
        else:
            return False
    return False


def _skips_slow_path(k: DecodedKernel, s: int, t: int) -> bool:
    """Whether the conditional forward branch at `s` jumps over a call to a math-library slow path
    (`isa.math_slow_path`): the fall-through side holds that call and only the moves of its
    arguments and result and reconvergence marks (no memory access, loop, barrier or other
    call). The fast path is taken: operands are assumed in the range it handles, as a bounds
    guard is assumed to pass. (A branch *to* the slow path falls through like any other.)"""
    calls = [j for j in range(s + 1, t) if k.kind[j] == K_CALL]
    return bool(calls) and all(isa.math_slow_path(k.instr[j]) for j in calls) and all(
        k.mem[j] == M_NONE and k.kind[j] in (K_OP, K_BRA, K_CALL, K_WARPSYNC) for j in range(s + 1, t))


def _early_out(k: DecodedKernel, s: int, t: int) -> bool:
    """Whether the conditional forward branch at `s` skips an early-out path to reach the work.

    Guards are assumed to pass, so a conditional branch falls through, except where the
    fall-through side is the guard's failing path: loop-free code that leaves (an unpredicated
    EXIT/RET or a jump past the target, e.g. `K <= 0: store zeros, exit`) while the target
    side holds a loop. Falling through there would emulate the kernel's empty case only.
    """
    leaves = any(k.instr[j].predicate is None and (k.kind[j] in (K_EXIT, K_RET) or
                                                   (k.kind[j] == K_BRA and k.target[j] >= t))
                 for j in range(s + 1, t))
    return leaves and any(L.header >= t and k.fn[L.header] == k.fn[s] for L in k.loops)
