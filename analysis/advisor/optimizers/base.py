"""What every optimizer sees (`MatchContext`) and the one method it implements (`Optimizer.match`).

As in HPCToolkit's GPUOptimizer: an optimizer says *what* matched — samples, lines, a
mechanical fix — and asks `estimators` *how much* it could gain. Optimizers never run tools,
read files or mutate anything: `match(ctx)` is a pure function of the context.
"""

from __future__ import annotations

import re

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal, TypeVar

from ...emulator.units import RESOURCES
from ...frontend import isa
from ...frontend.instructions import Instruction
from ...frontend.kernel_names import base_name
from ...frontend.program import outer_file, source_line_of
from ...profile import Assumption, KernelProfile, PCSample, StallReason
from ...results import OccupancyReport, Resources, StaticFact
from ..advice import LAUNCH_INPUTS, Advice, Estimate, Fix, Hotspot, SourceEdit, advice_id
from ..blame import BlameEdge, BlameResult

T = TypeVar("T")


#: the last source model's indexes (`file_index`): the source and its table
_FILE_INDEX: tuple[Any, dict[str, Any]] = (None, {})


def file_index(source: Any, name: str, make: Callable[[Any], T]) -> T:
    """`make(source)` once per source model, for every kernel's context: an index over the whole
    file (its calls, its functions, its launches) that a scan per kernel would make quadratic in a
    file of many kernels (issue 35: a 5,000-line solver's 179 kernels each scanned its 1,253
    calls). The models are immutable; only the last one's indexes are kept (one analysis at a time
    reads them; another's replaces them, and at worst makes them again)."""
    global _FILE_INDEX
    held, table = _FILE_INDEX
    if held is not source:
        table = {}
        _FILE_INDEX = (source, table)
    if name not in table:
        table[name] = make(source)
    return table[name]


@dataclass(frozen=True)
class MatchContext:
    """One kernel with everything known about it. Every field but the names may be missing."""

    kernel: str  # mangled
    kernel_name: str
    instructions: tuple[Instruction, ...] = ()
    source: Any = None  # source.SourceModel
    source_lines: tuple[str, ...] = ()  # the file's text, for columns and indentation
    profile: KernelProfile | None = None
    blame: BlameResult | None = None
    facts: tuple[StaticFact, ...] = ()
    resources: Resources | None = None
    arch: Any = None  # arch.ArchSpec
    device: Any = None  # arch.DeviceSpec
    occupancy: OccupancyReport | None = None
    #: extra PC samples of device functions the kernel calls (not inlined), by function name
    callee_samples: tuple[PCSample, ...] = ()
    callee_instructions: dict[str, tuple[Instruction, ...]] = field(default_factory=dict)
    roofline: Any = None  # roofline.KernelRoofline
    sensitivity: Any = None  # emulator sensitivity: bottleneck resource, latency/throughput bound
    #: emulator what-if (emulator.WhatIfReport): block sizes, grid and SM-count scaling
    what_if: Any = None
    #: the kernel's calls with the samples of what they call (call_sites.CallSite)
    call_sites: tuple[Any, ...] = ()
    #: pc -> the memory shape (emulator.decode.MemoryShape) the emulator's walked warp gave an access
    #: from its lanes' addresses (static_facts.executed_shapes): sectors per request, wavefronts
    memory: Mapping[int, Any] = field(default_factory=dict)

    @property
    def what_if_block(self) -> dict[int, float]:
        """Block size -> modeled seconds for the same total threads (SAAKE §5)."""
        if self.what_if is None:
            return {}
        return {p.block_size: p.seconds for p in self.what_if.block_sizes if p.seconds > 0}

    # -- sample totals (GPA §II-A) ------------------------------------------------------------

    @property
    def assumed_launch(self) -> tuple[Assumption, ...]:
        """The launch inputs of the modeled profile that are defaults (analysis/emulator/launch.py):
        what an estimate from the launch's shape, waves or occupancy rests on without knowing it."""
        if self.profile is None or self.profile.provenance.kind != "modeled":
            return ()
        return tuple(a for a in self.profile.provenance.assumptions
                     if a.name in LAUNCH_INPUTS and a.source == "default")

    def guessed_paths(self, lines: Iterable[int]) -> tuple[Assumption, ...]:
        """The modeled profile's assumptions that some of `lines` run only because of
        (`Assumption.lines`: the side of a branch the model could not compute, taken as it guessed)."""
        if self.profile is None or self.profile.provenance.kind != "modeled":
            return ()
        named = set(lines)
        return tuple(a for a in self.profile.provenance.assumptions if named.intersection(a.lines))

    @cached_property
    def swept_block(self) -> bool:
        """Whether the modeled block is the first value of a block-size sweep the program itself runs
        (llm.c's dev/cuda mains launch every `block_sizes[j]`; source/__init__.py `first_iteration`):
        the larger blocks are configurations the program already launches, so "use larger blocks" is
        no change to its code. A block from capture, a hint or an annotation is the one to advise on."""
        if self.profile is None or self.source is None or self.function_model is None:
            return False
        block = next((a for a in self.profile.provenance.assumptions if a.name == "block"), None)
        if block is None or block.source != "launch_site":
            return False
        sites = file_index(self.source, "launch_sites", _by_kernel).get(self.function_model.name, ())
        return any(s.live and 1 in s.first_iteration for s in sites)

    @property
    def provenance(self) -> Literal["modeled", "measured", "static"]:
        return self.profile.provenance.kind if self.profile is not None else "static"

    @cached_property
    def samples_by_pc(self) -> dict[int, PCSample]:
        if self.profile is None:
            return {}
        return {p.pc: p for p in self.profile.pcs if p.function == self.kernel}

    @cached_property
    def total(self) -> float:
        """T: all samples of the kernel, its non-inlined callees included."""
        if self.profile is None:
            return 0.0
        return self.profile.total_samples

    @cached_property
    def active(self) -> float:
        """A: issued samples."""
        if self.profile is None:
            return 0.0
        return sum(p.samples.get(StallReason.selected, 0.0) for p in self.profile.pcs)

    def samples_at(self, ins: Instruction, reasons: Iterable[StallReason] | None = None) -> float:
        s = self.samples_by_pc.get(ins.pc)
        if s is None:
            return 0.0
        if reasons is None:
            return s.total
        return sum(s.samples.get(r, 0.0) for r in reasons)

    def static_weight(self, ins: Instruction) -> float:
        """Issue slots of one instruction without a profile: 1, times the trip count of each enclosing loop."""
        w = 1.0
        fm = self.function_model
        if fm is not None and (line := kernel_line(ins)) is not None:
            for lp in self.source.loops:
                if lp.span.contains_line(line) and lp.function == fm.name:
                    w *= lp.trip_count or 16  # unknown trip counts: a nominal 16
        return w

    @cached_property
    def static_total(self) -> float:
        return sum(self.static_weight(i) for i in self.instructions)

    @cached_property
    def cost_by_index(self) -> dict[int, float]:
        """An instruction's cost after blame: its issued samples, the samples it causes itself, and the
        dependency stalls blamed on it (GPA §IV). Summed over the kernel this is T again."""
        cost: dict[int, float] = {}
        if self.blame is None:
            return cost
        for i in self.instructions:
            cost[i.index] = self.samples_at(i, [StallReason.selected])
        for s in self.blame.self_blame:
            cost[s.index] = cost.get(s.index, 0.0) + s.samples
        for e in self.blame.edges:
            cost[e.def_index] = cost.get(e.def_index, 0.0) + e.samples
        return cost

    @cached_property
    def callee_cost(self) -> dict[int, dict[StallReason, float]]:
        """CALL index -> the samples of the functions it reaches (call-site blame)."""
        return {c.index: c.samples for c in self.call_sites}

    def weight(self, instrs: Iterable[Instruction], reasons: Iterable[StallReason] | None = None, *,
               callees: bool = True) -> float:
        """Blamed cost (profile), raw samples of `reasons`, or static issue weight (no profile). A
        CALL weighs what it calls as well (call-site blame): a change that removes the call
        removes the callee's cost; `callees=False` weighs the call instruction alone."""
        instrs = list(instrs)
        if self.profile is not None:
            rs = list(reasons) if reasons is not None else None
            below = sum(sum(v for r, v in self.callee_cost.get(i.index, {}).items() if rs is None or r in rs)
                        for i in instrs) if callees else 0.0
            if reasons is None and self.blame is not None:
                return below + sum(self.cost_by_index.get(i.index, 0.0) for i in instrs)
            return below + sum(self.samples_at(i, rs) for i in instrs)
        return sum(self.static_weight(i) for i in instrs)

    @cached_property
    def line_shares(self) -> dict[int, float]:
        """Each line's share of the kernel's samples, as the kernel's line report has it: the samples
        of the code charged to the line (kernel_line) plus, on a call line, what the call reaches
        (call-site blame). An advice's share is at most the sum over the lines it names."""
        if self.profile is None or self.total <= 0:
            return {}
        acc: dict[int, float] = {}
        for i in self.instructions:
            if (ln := kernel_line(i)) is not None and (s := self.samples_by_pc.get(i.pc)) is not None:
                acc[ln] = acc.get(ln, 0.0) + s.total
        for c in self.call_sites:
            if c.index < len(self.instructions) and (ln := kernel_line(self.instructions[c.index])) is not None:
                acc[ln] = acc.get(ln, 0.0) + c.total
        return {ln: v / self.total for ln, v in acc.items()}

    @property
    def denominator(self) -> float:
        return self.total if self.profile is not None else self.static_total

    # -- source helpers -----------------------------------------------------------------------

    def line_text(self, line: int) -> str:
        return self.source_lines[line - 1] if 0 < line <= len(self.source_lines) else ""

    def indentation(self, line: int) -> str:
        text = self.line_text(line)
        return text[: len(text) - len(text.lstrip())]

    @cached_property
    def function_model(self) -> Any:
        if self.source is None:
            return None
        base = base_name(self.kernel_name)
        return file_index(self.source, "kernels", _kernels_by_name).get(base) or self.source.function(base)

    def loop_at(self, line: int | None) -> Any:
        if self.source is None or line is None:
            return None
        return self.source.loop_at(line)


def _by_kernel(source: Any) -> dict[str, list]:
    """The file's launch sites by the kernel they launch, in file order."""
    out: dict[str, list] = {}
    for site in source.launch_sites:
        out.setdefault(site.kernel, []).append(site)
    return out


def _kernels_by_name(source: Any) -> dict[str, Any]:
    """The file's first `__global__` function of each name."""
    out: dict[str, Any] = {}
    for f in source.functions:
        if f.kind == "kernel":
            out.setdefault(f.name, f)
    return out


def atomics_fill_the_queue(ctx: MatchContext) -> bool:
    """Whether the busiest unit of the global memory route, in the profile, is the L2's unit for
    updates of one word (the emulator blocks the route while any of its units is: units.py). The
    load/store queue then holds atomics waiting there, and a memory instruction's lg-throttle
    stall waits for them, not for its own traffic. Profiles without that unit (measured ones)
    never say so."""
    u = ctx.profile.utilization if ctx.profile is not None else {}
    busy = u.get("l2_atomic", 0.0)
    return busy > 0.0 and busy >= max(u.get(r, 0.0) for r in ("lsu", "l2", "dram"))


def kernel_line(ins: Instruction) -> int | None:
    """The line of the kernel's file an instruction is charged to: the innermost one in that file
    (program.source_line_of, the one rule the line shares use). An inlined callee defined in the same
    file keeps its cost on its own lines, not on the call line; a header's code goes to its
    innermost call site in the file. The kernel's file is where the outermost call site is."""
    outer = outer_file(ins)
    return source_line_of(ins, outer)[1] if outer is not None else None


def kernel_lines(instructions: Iterable[Instruction]) -> list[int]:
    """The kernel's lines the instructions are charged to (`kernel_line`), in order, once each."""
    return sorted({ln for i in instructions if (ln := kernel_line(i))})


def back_edges(instructions: Sequence[Instruction]) -> list[tuple[int, int]]:
    """(head, latch) indices of each branch back to an earlier PC: the SASS loops, nested ones too."""
    index_of = {i.pc: i.index for i in instructions}
    return sorted({(index_of[b.branch_target], b.index) for b in instructions
                   if b.opcode == "BRA" and b.branch_target is not None
                   and index_of.get(b.branch_target, b.index) < b.index})


def amdahl_bounded(estimate: Estimate, share: float) -> Estimate:
    """A line-local change cannot save more than the time on its lines: S ≤ 1/(1 − share) (Amdahl)."""
    bound = 1.0 / (1.0 - share) if share < 1.0 else float("inf")
    if estimate.speedup <= bound + 1e-9:
        return estimate
    return estimate.model_copy(update={"speedup": max(1.0, bound), "formula": estimate.formula + ", ≤ 1/(1−share)",
                                       "inputs": {**estimate.inputs, "share": share}})


#: The machine's units as the emulator names them (emulator/units.py RESOURCES), by what a remedy can
#: take work from (`Optimizer.relieves`).
COMPUTE_UNITS = frozenset({"fp32", "fp64", "fp16", "int", "sfu", "conversion", "tensor", "branch"})
MEMORY_UNITS = frozenset({"lsu", "shared", "l2", "dram", "constant", "atomic", "l2_atomic"})
#: the units of one SM: more blocks on idle SMs spread their work, the GPU-wide L2 and DRAM keep theirs
SM_UNITS = COMPUTE_UNITS | (MEMORY_UNITS - {"l2", "dram", "l2_atomic"}) | {"barrier"}
#: what fewer or coalesced requests take work from, whatever the requests' bytes: the LSU's queue and
#: wavefronts, shared memory's, the constant cache's
REQUEST_UNITS = MEMORY_UNITS - {"l2", "dram", "l2_atomic"}
#: the pipes of the instructions a latency-hiding change removes around the work it overlaps: a loop's
#: counter, compare and branch (unrolling), a call's argument moves, CALL and RET (inlining); IADD3 and
#: ISETP issue to the integer pipe, IMAD and IMAD.MOV to the FMA pipe (fp32) on sm_70 and later
OVERHEAD_UNITS = frozenset({"int", "fp32", "branch"})

#: What each key of a profile's utilisation measures, as those units: the one place a measured
#: profile's names meet the emulator's. A modeled profile's keys are the emulator's units. A measured
#: one's are Nsight Compute's throughputs (measure/ncu_report.py `_UTILIZATION`): "sm" is the busiest
#: of the SM's pipes and issue (sm__throughput), "memory" the busiest of L1/TEX, L2 and DRAM
#: (gpu__compute_memory_throughput), "l1" the L1/TEX unit that serves global, shared and shared-atomic
#: accesses, "l2" the L2 slices with their atomics; "fp32", "fp64", "fp16" (the achieved FLOP rate
#: over its peak) are the pipes of those names.
UTILIZATION_UNITS: Mapping[str, frozenset[str]] = {
    **{r: frozenset({r}) for r in RESOURCES},
    "sm": SM_UNITS, "memory": MEMORY_UNITS, "l1": frozenset({"lsu", "shared", "atomic"}),
    "l2": frozenset({"l2", "l2_atomic"}),
}


def past_l1(shape) -> float:
    """32 B sectors one warp request sends past L1: those it touches less those L1 serves."""
    return shape.bytes_l1 / 32 * (1.0 - shape.l1_hit_rate)


def sectors_past_l1(ctx: MatchContext, lines: Iterable[int]) -> tuple[float, float] | None:
    """(sectors the global accesses on `lines` send past L1 per warp execution, all together; the
    sectors their bytes need), from the walked lanes; None where an access was not walked. A fix
    that makes the lanes of a line coalesced rewrites its index, so all of the line's accesses
    change together: lanes 48 B apart touch 32 sectors per load, but a thread that reads
    consecutive words finds on its later loads the lines its first brought into L1 (caches.py),
    and the line as a whole may send no more past L1 than a coalesced one would."""
    warp = ctx.arch.warp_size if ctx.arch is not None else 32
    named = set(lines)
    sent = needed = 0.0
    for i in ctx.instructions:
        if i.memory_space not in ("global", "generic", "local") or kernel_line(i) not in named:
            continue  # shared and constant requests never reach L2
        shape = ctx.memory.get(i.pc)
        if shape is None:
            return None
        sent += past_l1(shape)
        needed += max(1.0, warp * (isa.access_bytes(i) or 4) / 32)
    return sent, needed


def requests_relieve(ctx: MatchContext, changes: Sequence[Instruction]) -> frozenset[str]:
    """The units fewer or coalesced requests of `changes` take work from: the LSU and L1 always, L2
    and DRAM only where their lines send more sectors past L1 than their bytes need
    (`sectors_past_l1`); else the kernel cannot run faster than its L2 and DRAM times. Without
    walked lanes: every memory unit."""
    past = sectors_past_l1(ctx, {kernel_line(i) for i in changes}) if ctx.memory else None
    return MEMORY_UNITS if past is None or past[0] > past[1] + 1e-9 else REQUEST_UNITS


def roofline_bounded(estimate: Estimate, utilization: Mapping[str, float], relieves: frozenset[str]) -> Estimate:
    """A change that takes no work from a unit leaves that unit's busy time: the kernel cannot then run
    faster than the busiest such unit allows, S ≤ 1/u (the roofline with the profile's own
    utilisation: at 99 % of DRAM bandwidth, cheaper math or hidden latency gains at most 1 %).

    A key bounds the change only when the change relieves none of the units it measures
    (`UTILIZATION_UNITS`): an aggregate's busiest part is not known and may be the very unit the change
    relieves (coalescing on a measured profile is not capped by "memory"). A key no entry classifies
    bounds nothing: no bound rather than a wrong one. An emulator re-model already runs the units, and
    is not bounded again."""
    kept = [(u, key) for key, u in utilization.items()
            if u > 0 and key in UTILIZATION_UNITS and not UTILIZATION_UNITS[key] & relieves]
    if not kept or estimate.remodeled:
        return estimate
    u, name = max(kept)
    bound = 1.0 / u
    if estimate.speedup <= bound + 1e-9:
        return estimate
    return estimate.model_copy(update={"speedup": max(1.0, bound),
                                       "formula": estimate.formula + f", ≤ 1/u_{name} (roofline)",
                                       "inputs": {**estimate.inputs, "u_" + name: u}})


#: the most an estimate may claim without a re-model of the change behind it (an emulator what-if,
#: or verify's shadow copy): pattern estimates far above what published fixes achieved (issue 34:
#: 4.9× and 6.2× claims for 1.02-1.92× gains) are worse than none
MAX_UNMODELED = 1.5


def grounded(estimate: Estimate, duration_s: float | None) -> Estimate:
    """One baseline for every estimate, the kernel's predicted (or measured) time T_now, and no figure
    above MAX_UNMODELED unless the emulator re-modeled the change."""
    inputs = dict(estimate.inputs)
    formula, speedup = estimate.formula, estimate.speedup
    if speedup > MAX_UNMODELED and not estimate.remodeled:
        inputs["uncapped"] = speedup
        formula, speedup = formula + f", ≤ {MAX_UNMODELED}× until re-modeled", MAX_UNMODELED
    if duration_s is not None:
        inputs["T_now_s"], inputs["T_new_s"] = duration_s, duration_s / speedup
    return estimate.model_copy(update={"speedup": speedup, "formula": formula, "inputs": inputs})


_EST = re.compile(r"Est\. (at most )?\d+(\.\d+)?×")


def restated(message: str, estimate: Estimate, why: str = "at most what its lines take, Amdahl") -> str:
    """The message's figure after grounding, with why it differs from the optimizer's own."""
    if "uncapped" in estimate.inputs:
        why = f"capped until the fix is re-modeled, was {estimate.inputs['uncapped']:.2f}×"
    return _EST.sub(lambda m: f"Est. {m.group(1) or ''}{estimate.speedup:.2f}× ({why})", message, count=1)


def line_list(lines: Sequence[int], most: int = 4) -> str:
    """Lines as a message names them: "line 5", "lines 5, 7, 9, 11, …" (the first `most`)."""
    return (f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:most]))}"
            f"{', …' if len(lines) > most else ''}")


def pct(x: float) -> str:
    return f"{100 * x:.1f} %" if x < 0.1 else f"{100 * x:.0f} %"


@dataclass(frozen=True)
class WhatIfReads:
    """The points of the emulator's what-if (SAAKE §5) an optimizer's `match` may read for one kernel
    (`Optimizer.what_if_reads`): the block sizes it looks up in `MatchContext.what_if_block`, and
    whether it reads the grid scaling. The second stage models those points and no others of the two
    sweeps: a point no optimizer reads changes no advice and is shown nowhere (stages._deepen)."""

    block_sizes: frozenset[int] = frozenset()
    grid_scaling: bool = False

    def __or__(self, other: WhatIfReads) -> WhatIfReads:
        return WhatIfReads(self.block_sizes | other.block_sizes, self.grid_scaling or other.grid_scaling)


class Optimizer:
    """Base of every optimizer: a name, a one-line title, and `match`."""

    name: ClassVar[str]
    title: ClassVar[str]
    #: "code" (GPA stall elimination / latency hiding), "parallel" (GPA parallel optimizers),
    #: "static" (source/SASS patterns), "roofline" (Starlight Table 1)
    group: ClassVar[str] = "code"
    #: what `importance` is a share of (`Advice.importance_basis`)
    importance_basis: ClassVar[str] = "of samples"
    #: the units whose work the remedy reduces (`roofline_bounded`): none by default, as for code
    #: reordering, which only overlaps the work the units already do
    relieves: ClassVar[frozenset[str]] = frozenset()

    def match(self, ctx: MatchContext) -> list[Advice]:
        raise NotImplementedError

    def relieved(self, ctx: MatchContext, changes: Sequence[Instruction]) -> frozenset[str]:
        """The units the remedy takes work from where it changes `changes` (`roofline_bounded`)."""
        return self.relieves

    def what_if_reads(self, ctx: MatchContext) -> WhatIfReads:
        """What `match` may read of `ctx.what_if`, known before the what-if runs: from the launch,
        the occupancy and the quick stage's profile (`ctx` without blame, sensitivity or what-if).
        An optimizer that reads a what-if point says so here, or the point is not modeled."""
        return WhatIfReads()

    # -- building advice ------------------------------------------------------------------------

    def advice(self, ctx: MatchContext, *, lines: Sequence[int], importance: float, estimate: Estimate, message: str,
               detail: str = "", hotspots: Sequence[Hotspot] = (), fix: Fix | None = None,
               columns: tuple[int, int] | None = None,
               changes: Sequence[Instruction] = ()) -> Advice:
        """`changes`: the instructions the remedy changes, whose blamed cost the share is; the stalls
        blamed on them become the advice's hotspots (where that cost is paid) unless given.
        An estimate that reads the launch (`Estimate.reads_launch`, every parallel optimizer's) names
        a default launch in the item."""
        prov = "static" if ctx.profile is None else ctx.provenance
        reads_launch = self.group == "parallel" or estimate.reads_launch
        if not hotspots and changes and ctx.blame is not None:
            idx = {i.index for i in changes}
            hotspots = _pairs(ctx.blame.edges_where(lambda e: e.def_index in idx))
        stated = estimate.speedup
        if self.group != "parallel" and ctx.profile is not None:
            # the share is that of the lines the advice names, its own and its hotspots' (where the
            # stalls it removes are paid); a callee's cost stays on the callee's lines
            importance = min(importance, sum(ctx.line_shares.get(ln, 0.0) for ln in named_lines(lines, hotspots)))
            estimate = amdahl_bounded(estimate, importance)
        amdahl = estimate.speedup
        if ctx.profile is not None:
            estimate = roofline_bounded(estimate, ctx.profile.utilization, self.relieved(ctx, changes))
        why = "at most what its lines take, Amdahl"
        if estimate.speedup < amdahl:
            unit, u = next((k[2:], v) for k, v in estimate.inputs.items() if k.startswith("u_"))
            why = f"at most 1/{u:.2f}: the {unit} this change does not relieve is {pct(u)} busy, roofline"
        estimate = grounded(estimate, ctx.profile.duration_s if ctx.profile is not None else None)
        if reads_launch != estimate.reads_launch:  # the bounds above build new estimates
            estimate = estimate.model_copy(update={"reads_launch": reads_launch})
        if estimate.speedup != stated:
            message = restated(message, estimate, why)
        # a parallel optimizer's estimate is the launch's shape, waves and occupancy: on a default
        # launch it is a guess, said as one (never a warning: diagnostics.advice_severity)
        assumed = ctx.assumed_launch if reads_launch else ()
        if assumed:
            message += " " + assumed_launch_caveat(assumed)
        # code that runs in the model only as it guessed a branch: its share and estimate are the guess's
        named = named_lines(lines, hotspots)
        guessed = ctx.guessed_paths(named)
        if guessed:
            message += " " + guessed_path_caveat(guessed, named)
            assumed = (*assumed, *guessed)
        return Advice(id=advice_id(self.name, ctx.kernel, lines[0] if lines else 0, detail), optimizer=self.name,
                      title=self.title, kernel=ctx.kernel, kernel_name=ctx.kernel_name, lines=tuple(lines),
                      columns=columns, hotspots=tuple(hotspots), importance=max(0.0, min(1.0, importance)),
                      estimate=estimate, provenance=prov, message=message, fix=fix,
                      importance_basis=self.importance_basis,
                      assumed=tuple(a.name for a in assumed),
                      changes=tuple(sorted({i.pc for i in changes})))


def named_lines(lines: Iterable[int], hotspots: Iterable[Hotspot]) -> set[int]:
    """The lines an advice names: its own, and both ends of each hotspot it shows."""
    return set(lines) | {ln for h in hotspots for ln in (h.def_line, h.use_line) if ln}


def assumed_launch_caveat(assumed: Sequence[Assumption]) -> str:
    """What an advice on a default launch says: the values assumed, why, and how to give the real ones."""
    shown = ", ".join(f"{a.name.replace('_', ' ')} {a.value}" for a in assumed)
    what = "a default" if len(assumed) == 1 else "defaults"
    return f"This estimate rests on an assumed launch ({shown}, {what}, not the program's launch): {assumed[0].detail}."


def guessed_path_caveat(guessed: Sequence[Assumption], lines: Iterable[int]) -> str:
    """What an advice on code the model ran on a guessed branch says: which of its lines, and why."""
    on = sorted(set(lines).intersection(guessed[0].lines))
    which = f"line {on[0]} runs" if len(on) == 1 else "lines " + ", ".join(map(str, on)) + " run"
    return (f"In the model {which} only because a branch it could not compute (on loaded data or a "
            f"floating-point compare) goes the way it assumes ({guessed[0].name}: {guessed[0].value}): "
            f"this estimate rests on that guess.")


def hotspots(edges: Iterable[BlameEdge], top: int = 5) -> tuple[Hotspot, ...]:
    """GPA Fig. 8: the def → use pairs with the most blamed samples, merged per (def, use)."""
    merged: dict[tuple[int, int], list[BlameEdge]] = {}
    for e in edges:
        merged.setdefault((e.def_index, e.use_index), []).append(e)
    rows = sorted(merged.values(), key=lambda es: -sum(e.samples for e in es))[:top]
    return tuple(Hotspot(def_line=es[0].def_line, use_line=es[0].use_line, def_pc=es[0].def_pc, use_pc=es[0].use_pc,
                         def_opcode=es[0].def_opcode, use_opcode=es[0].use_opcode, distance=es[0].distance,
                         samples=sum(e.samples for e in es), category=es[0].category) for es in rows)


_pairs = hotspots  # `Optimizer.advice` has a parameter of that name


def describe_edge(e: BlameEdge | Hotspot) -> str:
    return (f"{e.def_opcode} at line {e.def_line} is consumed {e.distance} instruction"
            f"{'s' if e.distance != 1 else ''} later by {e.use_opcode} at line {e.use_line}")


def provenance_note(ctx: MatchContext) -> str:
    return {"modeled": "modeled", "measured": "measured", "static": "static estimate"}[ctx.provenance]


def insert_edit(line: int, col: int, text: str) -> SourceEdit:
    return SourceEdit(line=line, col=col, end_line=line, end_col=col, new_text=text)
