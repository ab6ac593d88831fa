"""GPA §IV instruction blamer: attribute each dependency stall to the instructions that cause it.

A warp stalled on `long_scoreboard` at instruction j waits for some earlier instruction i
(the load); the sample is j's, the blame is i's. For every stalled instruction j this module

1. slices backward (intra-function, immediate sources only) through the operands j reads:
   registers, predicates and the control-code barriers B0–B5, treated as *virtual registers*
   (GPA Fig. 3): a write/read barrier set by i is a def of `B<n>`, a wait mask on j is a use;
2. keeps searching past predicated defs until the union of their guards covers j's guard
   (GPA Fig. 4, "predicated-definition coverage");
3. prunes cold edges (GPA §IV): by opcode (memory stalls blame memory instructions, sync
   stalls blame sync instructions), by dominator (an unpredicated instruction k between i and
   j on every path reads the same operand: the stall would have shown at k), and by latency
   (every path is longer, in instructions, than i's latency upper bound);
4. apportions j's samples over the surviving incoming edges by GPA Eq. 1 (issue ratio ×
   path ratio, the longer path getting less);
5. classifies each edge (GPA Fig. 5): global/local/constant memory, shared memory,
   arithmetic or write-after-read (WAR) execution dependency, and synchronization.

Samples of other reasons (throttles, not selected, fetch, …) are caused by the instruction
that shows them (GPA §IV) and stay there as `SelfBlame`.

The module works on any `KernelProfile`, modeled or measured; it never looks at provenance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..frontend import isa
from ..frontend.cfg import CFG, build_cfg
from ..frontend.instructions import Instruction, SassFunction
from ..profile import KernelProfile, PCSample, StallReason

if TYPE_CHECKING:  # the program builder is optional for hand-built fragments
    from ..frontend.program import FunctionProgram

# ---------------------------------------------------------------------------------------------
# Which stall an instruction's result can cause. The opcode facts come from `isa` (the one
# opcode table); this maps them to Nsight Compute's warp states: long scoreboard = the L1TEX
# return path, short scoreboard = MIO, wait = a fixed-latency result.
# ---------------------------------------------------------------------------------------------

#: Categories of GPA Fig. 5 (plus synchronization for barrier stalls).
GLOBAL, LOCAL, CONSTANT = "global memory", "local memory", "constant memory"
SHARED, ARITHMETIC, WAR, SYNC = "shared memory", "arithmetic", "WAR", "synchronization"
#: not in GPA Fig. 5: warps at EXIT waiting for their writes to drain (see `_EXPLAINS`); its own
#: class, so that no latency-hiding or load optimizer counts it
DRAIN = "memory drain"
MEMORY_CATEGORIES = frozenset({GLOBAL, LOCAL, CONSTANT})

#: Upper bounds of latency, in issue slots, for latency-based pruning (GPA §IV: "for variable
#: latency instructions, we use their upper bounds … the TLB miss latency" — Jia et al. 2018
#: measured L1 TLB misses beyond 1000 cycles on Volta; fixed-latency results need at most the
#: 15-cycle stall count the control code can encode).
LATENCY_BOUND = {"l1tex": 1024, "constant": 1024, "shared": 128, "mio": 128, "either": 128,
                 "fixed": 15, "sync": 1024}

#: FP64 and conversions run on the MIO pipe on consumer parts and on fixed-latency pipes on HPC
#: parts, so they may explain either short-scoreboard or wait stalls.
_EITHER_PIPES = frozenset({isa.Pipe.FP64, isa.Pipe.CONVERSION})


def latency_class(ins: Instruction) -> str:
    """Which return path an instruction's result takes: l1tex, constant, shared, mio, either, fixed, sync."""
    if isa.is_sync(ins):
        return "sync"
    space = ins.memory_space
    if space == "shared":
        return "shared"
    if space == "constant":
        return "constant"
    if space is not None:  # global, local, generic; isa files texture/surface fetches under global
        return "l1tex"
    if isa.pipe(ins) in _EITHER_PIPES:
        return "either"
    return "mio" if isa.is_variable_latency(ins) else "fixed"


#: Which latency classes may cause which dependency stall (GPA §IV, opcode-based pruning).
_EXPLAINS: dict[StallReason, frozenset[str]] = {
    StallReason.long_scoreboard: frozenset({"l1tex", "constant"}),
    StallReason.short_scoreboard: frozenset({"shared", "mio", "either", "constant"}),
    StallReason.wait: frozenset({"fixed", "either"}),
    StallReason.barrier: frozenset({"sync"}),
    # a warp at EXIT waits for its outstanding global writes (stores, reductions) to drain: the
    # writes cause the stall, as a load causes a long-scoreboard stall (an extension of GPA §IV,
    # which leaves drain with the EXIT; there it names a closing brace as the costly line)
    StallReason.drain: frozenset({"l1tex"}),
}
#: The stall reasons GPA attributes to other instructions; all others are self-caused.
DEPENDENCY_STALLS = frozenset(_EXPLAINS)


def category(ins: Instruction, war: bool = False) -> str:
    """GPA Fig. 5 class of a dependency whose source is `ins`."""
    if war:
        return WAR
    cls = latency_class(ins)
    if cls == "sync":
        return SYNC
    if cls == "constant":
        return CONSTANT
    if cls == "shared":
        return SHARED
    if cls == "l1tex":
        return LOCAL if ins.memory_space == "local" else GLOBAL
    return ARITHMETIC


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlameEdge:
    """A def → use pair with the samples of one stall reason at the use blamed on the def."""

    def_index: int
    use_index: int
    def_pc: int
    use_pc: int
    def_line: int | None
    use_line: int | None
    def_opcode: str
    use_opcode: str
    operands: tuple[str, ...]  # what links them: "R4", "P0", "B1" (virtual barrier), "SYNC"
    reason: StallReason
    category: str
    distance: int  # shortest path, in instructions from def to use (adjacent = 1)
    path_length: int  # longest explored path; Eq. 1's path ratio uses it (GPA §IV heuristic 2)
    samples: float  # blamed stall samples (Eq. 1)


@dataclass(frozen=True)
class PrunedEdge:
    def_index: int
    use_index: int
    operand: str
    reason: StallReason
    rule: str  # "opcode", "dominator", "latency"


@dataclass(frozen=True)
class SelfBlame:
    """Samples the stalled instruction causes itself (throttles, fetch, …) or that no edge explains."""

    index: int
    pc: int
    line: int | None
    opcode: str
    reason: StallReason
    samples: float
    unexplained: bool = False  # a dependency stall whose source was not found (or all edges pruned)


@dataclass(frozen=True)
class BlameResult:
    function: str
    edges: tuple[BlameEdge, ...]
    pruned: tuple[PrunedEdge, ...]
    self_blame: tuple[SelfBlame, ...]
    total_samples: float  # T of GPA §V-B: all samples of this function
    active_samples: float  # A: issued (selected) samples
    truncated_searches: int = 0  # slices that hit the exploration budget
    #: steps the backward slices took, all together: what the blame cost (the analysis's budget
    #: charges it, budget.SLICE_STEP_COST), a function of the instructions and samples alone
    slice_steps: int = 0

    @property
    def stall_samples(self) -> float:
        return self.total_samples - self.active_samples

    def by_category(self) -> dict[str, float]:
        acc: dict[str, float] = {}
        for e in self.edges:
            acc[e.category] = acc.get(e.category, 0.0) + e.samples
        return acc

    def blamed_on(self, index: int) -> float:
        """Stall samples blamed on the instruction at `index` as a dependency source."""
        return sum(e.samples for e in self.edges if e.def_index == index)

    def edges_where(self, pred: Callable[[BlameEdge], bool]) -> tuple[BlameEdge, ...]:
        return tuple(e for e in self.edges if pred(e))


# ---------------------------------------------------------------------------------------------
# Flow: the function's CFG (`cfg.py`) at instruction granularity
# ---------------------------------------------------------------------------------------------


def function_cfg(instrs: Sequence[Instruction], function: str = "") -> CFG:
    """The CFG of a bare instruction sequence (hand-built fragments have no `FunctionProgram`)."""
    return build_cfg(SassFunction(mangled_name=function, name=function, is_kernel=True, instructions=tuple(instrs)))


def instruction_predecessors(instrs: Sequence[Instruction]) -> tuple[tuple[int, ...], ...]:
    """Predecessors of every instruction (by index) in the function's control-flow graph."""
    return function_cfg(instrs).instruction_predecessors()


# ---------------------------------------------------------------------------------------------
# Predicate coverage (GPA Fig. 4)
# ---------------------------------------------------------------------------------------------

ALWAYS = "_"


def _guard(pred: str | None) -> str:
    return ALWAYS if pred in (None, "PT", "UPT") else pred


def covers(union: frozenset[str], use_guard: str) -> bool:
    """P contains p' iff p' ∈ P or _ ∈ P, where {p_i} ∪ {!p_i} = _ (GPA §IV)."""
    if ALWAYS in union or use_guard in union:
        return True
    return any(p.startswith("!") and p[1:] in union for p in union)


# ---------------------------------------------------------------------------------------------
# Backward slicing
# ---------------------------------------------------------------------------------------------


def _barrier_defs(ins: Instruction) -> dict[str, bool]:
    """Virtual barrier registers written by `ins`, each mapped to "is only a read barrier" (WAR)."""
    c = ins.control
    if c is None:
        return {}
    out: dict[str, bool] = {}
    if c.read_barrier is not None:
        out[f"B{c.read_barrier}"] = True
    if c.write_barrier is not None:
        out[f"B{c.write_barrier}"] = False
    return out


#: the virtual register a drain stall reads: every global/local write defines it
WRITES = "WRITES"


def _is_write(ins: Instruction) -> bool:
    info = isa.opcode_info(ins.opcode)
    return info.access in (isa.Access.STORE, isa.Access.ATOMIC) and ins.memory_space in ("global", "local", "generic")


def _vdefs(ins: Instruction) -> set[str]:
    return (set(ins.defs) | set(_barrier_defs(ins)) | ({"SYNC"} if isa.is_sync(ins) else set())
            | ({WRITES} if _is_write(ins) else set()))


def _vuses(ins: Instruction) -> set[str]:
    waits = {f"B{b}" for b in ins.control.waits_on} if ins.control is not None else set()
    return set(ins.uses) | waits


@dataclass
class _Found:
    min_d: int
    max_d: int
    unshadowed: bool


class _Operands:
    """What a slice asks of every instruction, by operand: built once per function, each operand's
    flags on its first slice. A slice steps through thousands of (instruction, path) pairs, and a
    flag read there is cheaper than a set lookup and a predicate test (issue 35: ~590,000 steps
    over 590 slices on a 736-instruction softmax)."""

    __slots__ = ("guards", "vdefs", "vuses", "unpredicated", "last", "others", "_flags")

    def __init__(self, instrs: Sequence[Instruction], preds: Sequence[Sequence[int]], vdefs: Sequence[set[str]],
                 vuses: Sequence[set[str]]) -> None:
        self.guards = [_guard(i.predicate) for i in instrs]
        self.vdefs, self.vuses = vdefs, vuses
        self.unpredicated = [i.predicate is None for i in instrs]
        # each instruction's predecessors as the search takes them: the last one first, at once
        self.last = [p[-1] if p else -1 for p in preds]
        self.others = [tuple(p[:-1]) for p in preds]
        self._flags: dict[str, tuple[bytes, bytes]] = {}

    def flags(self, operand: str) -> tuple[bytes, bytes]:
        """(defines `operand`, reads it unconditionally without defining it), per instruction."""
        f = self._flags.get(operand)
        if f is None:
            defs = bytes(operand in v for v in self.vdefs)
            reads = bytes(not d and u and operand in v for d, u, v in zip(defs, self.unpredicated, self.vuses))
            f = self._flags[operand] = (defs, reads)
        return f


def _slice(instrs: Sequence[Instruction], preds: Sequence[Sequence[int]], use: int, operand: str,
           max_dist: int, budget: int, ops: _Operands) -> tuple[dict[int, _Found], bool, int]:
    """Immediate defs of `operand` reaching instruction `use`, over simple backward paths.

    Each path stops at a def once the guards of the defs met on it cover the use's guard
    (Fig. 4). A path that crossed an unpredicated reader of `operand` is "shadowed": defs found
    only on shadowed paths are pruned by GPA's dominator rule. Returns (defs, truncated, steps).
    The paths are searched depth first, the last predecessor first, each step counted: a search
    cut at `budget` steps keeps what it found by then, and the budget charges the steps.
    """
    use_guard = _guard(instrs[use].predicate)
    defs, reads = ops.flags(operand)
    guards, last, others = ops.guards, ops.last, ops.others
    found: dict[int, _Found] = {}
    # The path searched: its instruction at each distance (the use at 0), and the distance each
    # instruction last stood at. Everything pushed after an entry at distance d lies deeper, so
    # when it is popped path[:d] is its path, and x is on it iff path[at[x]] is x with at[x] < d:
    # no exit markers to push, pop and undo.
    path = [use] * (max_dist + 2)
    at = [max_dist + 2] * len(instrs)
    at[use] = 0
    # stack entries: (index, distance, covered guards, shadowed), the last predecessor on top
    none: frozenset[str] = frozenset()
    stack: list[tuple[int, int, frozenset[str], bool]] = [(p, 1, none, False) for p in preds[use]]
    pop, push = stack.pop, stack.append
    steps = 0
    while stack:
        x, d, covered, shadowed = pop()
        while True:  # the last predecessor would be popped next: it is taken at once, unpushed
            steps += 1
            if steps > budget:
                return found, True, budget
            if d > max_dist:
                break
            k = at[x]
            if k < d and path[k] == x:  # on the path
                break
            if defs[x]:
                f = found.get(x)
                if f is None:
                    found[x] = _Found(d, d, not shadowed)
                else:
                    f.min_d, f.max_d, f.unshadowed = min(f.min_d, d), max(f.max_d, d), f.unshadowed or not shadowed
                covered = covered | {guards[x]}
                if covers(covered, use_guard):
                    break
            elif reads[x]:
                shadowed = True  # GPA dominator rule: k reads the operand unconditionally
            path[d], at[x] = x, d
            d += 1
            for p in others[x]:
                push((p, d, covered, shadowed))
            x = last[x]
            if x < 0:
                break
    return found, False, steps


# ---------------------------------------------------------------------------------------------
# Apportioning (GPA Eq. 1)
# ---------------------------------------------------------------------------------------------


def apportion(samples: float, issue: Sequence[float], path_length: Sequence[int]) -> list[float]:
    """GPA Eq. 1: S_i = R_i^path · R_i^issue / Σ_k R_k^path · R_k^issue × S_j.

    R^issue is each source's share of issued samples (heuristic 1); R^path is inversely
    proportional to the (longest) path length, so a longer path is blamed less (heuristic 2).
    When no source has issue samples (sparse measured sampling), R^issue is uniform.
    """
    n = len(issue)
    if n == 0:
        return []
    tot_issue = sum(issue)
    r_issue = [i / tot_issue for i in issue] if tot_issue > 0 else [1.0 / n] * n
    inv = [1.0 / max(1, p) for p in path_length]
    r_path = [v / sum(inv) for v in inv]
    weights = [a * b for a, b in zip(r_path, r_issue)]
    tot = sum(weights)
    if tot <= 0:
        return [samples / n] * n
    return [samples * w / tot for w in weights]


# ---------------------------------------------------------------------------------------------
# The blamer
# ---------------------------------------------------------------------------------------------


def _issued(s: PCSample | None) -> float:
    if s is None:
        return 0.0
    if s.executed is not None:
        return s.executed
    return s.samples.get(StallReason.selected, 0.0)


def blame_instructions(
    instrs: Sequence[Instruction],
    samples: Mapping[int, PCSample],
    *,
    function: str = "",
    cfg: CFG | None = None,
    latency_bound: Callable[[Instruction], int] | None = None,
    budget: int = 20000,
) -> BlameResult:
    """Blame the stall samples of one function's instructions (samples keyed by PC)."""
    preds = (cfg or function_cfg(instrs, function)).instruction_predecessors()
    # each instruction's class and latency bound, once: the pruning below asks for them per edge
    classes = [latency_class(i) for i in instrs]
    bounds = [latency_bound(i) for i in instrs] if latency_bound else [LATENCY_BOUND[c] for c in classes]
    # Slices stop a little past the largest bound present, so that latency-pruned edges are
    # still seen (and reported) rather than silently missed.
    max_dist = max(64, max(bounds, default=1) + 1)
    edges: list[BlameEdge] = []
    pruned: list[PrunedEdge] = []
    selfs: list[SelfBlame] = []
    truncated = steps = 0
    total = sum(s.total for s in samples.values())
    active = sum(s.samples.get(StallReason.selected, 0.0) for s in samples.values())
    # the virtual defs and uses of every instruction, once: each slice visits thousands
    vdefs = [_vdefs(i) for i in instrs]
    vuses = [_vuses(i) for i in instrs]
    by_operand = _Operands(instrs, preds, vdefs, vuses)
    slices: dict[tuple[int, str], tuple[dict[int, _Found], bool, int]] = {}  # one per (use, operand), all reasons

    for j, use in enumerate(instrs):
        s = samples.get(use.pc)
        if s is None:
            continue
        for reason, n in s.samples.items():
            if n <= 0 or reason == StallReason.selected:
                continue
            if reason not in DEPENDENCY_STALLS or (reason == StallReason.barrier and isa.is_sync(use)):
                selfs.append(SelfBlame(j, use.pc, use.line, use.opcode, reason, n))
                continue
            operands = (("SYNC",) if reason == StallReason.barrier else (WRITES,) if reason == StallReason.drain
                        else tuple(sorted(vuses[j])))
            cands: dict[int, tuple[_Found, list[str], bool]] = {}  # def -> (found, operands, war)
            for op in operands:
                if (j, op) not in slices:
                    slices[(j, op)] = _slice(instrs, preds, j, op, max_dist, budget, by_operand)
                    truncated += slices[(j, op)][1]
                    steps += slices[(j, op)][2]
                found = slices[(j, op)][0]
                for i, f in found.items():
                    war = op.startswith("B") and _barrier_defs(instrs[i]).get(op, False)
                    if i in cands:
                        g, ops, w = cands[i]
                        g.min_d, g.max_d = min(g.min_d, f.min_d), max(g.max_d, f.max_d)
                        g.unshadowed = g.unshadowed or f.unshadowed
                        cands[i] = (g, ops + [op], w and war)
                    else:
                        cands[i] = (_Found(f.min_d, f.max_d, f.unshadowed), [op], war)
            kept: list[tuple[int, _Found, list[str], bool]] = []
            for i, (f, ops, war) in sorted(cands.items()):
                rule = None
                if classes[i] not in _EXPLAINS[reason]:
                    rule = "opcode"
                elif not f.unshadowed:
                    rule = "dominator"
                elif f.min_d > bounds[i]:
                    rule = "latency"
                if rule:
                    pruned.append(PrunedEdge(i, j, ops[0], reason, rule))
                else:
                    kept.append((i, f, ops, war))
            if not kept:
                selfs.append(SelfBlame(j, use.pc, use.line, use.opcode, reason, n, unexplained=True))
                continue
            shares = apportion(n, [_issued(samples.get(instrs[i].pc)) for i, *_ in kept],
                               [f.max_d for _, f, _, _ in kept])
            for (i, f, ops, war), share in zip(kept, shares):
                d = instrs[i]
                edges.append(BlameEdge(
                    def_index=i, use_index=j, def_pc=d.pc, use_pc=use.pc, def_line=d.line, use_line=use.line,
                    def_opcode=d.full_opcode, use_opcode=use.full_opcode, operands=tuple(ops), reason=reason,
                    category=DRAIN if reason == StallReason.drain else category(d, war), distance=f.min_d,
                    path_length=f.max_d, samples=share))
    return BlameResult(function=function, edges=tuple(edges), pruned=tuple(pruned), self_blame=tuple(selfs),
                       total_samples=total, active_samples=active, truncated_searches=truncated, slice_steps=steps)


def function_samples(function: str, profile: KernelProfile) -> dict[int, PCSample]:
    return {p.pc: p for p in profile.pcs if p.function == function}


#: blames made within `memoised()`, by the identity of their inputs (immutable; the entry holds them,
#: so that no id is reused while it lives)
_MEMO: ContextVar[dict[tuple[int, int], tuple[FunctionProgram, KernelProfile, BlameResult]] | None] = \
    ContextVar("blame_memo", default=None)


@contextmanager
def memoised() -> Iterator[None]:
    """Within it, `blame` of one function and profile is made once. One analysis advises its quick
    result and then its full one from the same profiles (the second stage adds sensitivity and
    what-if, not samples), and the slices are most of the advice's cost on a large kernel (issue 35:
    ~0.28 s per pass on a 736-instruction softmax). Scoped, so that no process keeps the results."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def blame(function: FunctionProgram, profile: KernelProfile, *,
          latency_bound: Callable[[Instruction], int] | None = None) -> BlameResult:
    """GPA §IV over one function of a program, with the samples `profile` has for it."""
    memo = _MEMO.get() if latency_bound is None else None
    if memo is not None:
        hit = memo.get((id(function), id(profile)))
        if hit is not None and hit[0] is function and hit[1] is profile:
            return hit[2]
    result = _blame(function, profile, latency_bound)
    if memo is not None:
        memo[(id(function), id(profile))] = (function, profile, result)
    return result


def _blame(function: FunctionProgram, profile: KernelProfile,
           latency_bound: Callable[[Instruction], int] | None) -> BlameResult:
    return blame_instructions(function.sass.instructions, function_samples(function.mangled, profile),
                              function=function.mangled, cfg=function.cfg, latency_bound=latency_bound)
