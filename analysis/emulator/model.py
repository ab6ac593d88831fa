"""Public entry points of the emulator: `emulate`, `sensitivity`, `what_if` (SAAKE §4, §3.3, §5).

`emulate` runs Algorithm 1 over the maximal co-resident block set of one SM (from occupancy),
scales one wave over ceil(blocks / (SMs × blocks per SM)) waves (the last one partial, run
with its own smaller block set), and returns a modeled `KernelProfile`: per-PC and per-line
samples by Nsight stall reason, utilization, FLOPs and bytes for the whole launch, and every
assumption it needed. `sensitivity` re-emulates with each resource's latency and, separately,
its gap perturbed, and names the bottleneck (latency- or throughput-bound) per kernel and per
hot loop. `what_if` predicts other block sizes and SM counts (the roofline trajectory).
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from datetime import datetime, timezone
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..frontend import isa
from ..frontend.isa import TRIG_REDUCTION_THRESHOLD_F32, calls_subroutine, math_slow_path
from ..frontend.program import FunctionProgram, Program, base_name
from ..frontend.source import SourceModel
from ..machine.arch import (SHARED_BYTES_PER_CLOCK_PER_SM, USER_SOURCE_ID, WARP_REQUEST_BYTES, ArchSpec, DeviceSpec,
                            Resource, launch_overhead)
from ..machine.occupancy import Occupancy, occupancy
from ..options import AnalysisOptions
from ..process import CancelToken
from ..profile import Assumption, KernelProfile, LaunchConfig, PCSample, Provenance, StallReason, aggregate_lines
from . import sampling, staging
from .budget import WALK_STEP_COST, Ledger, StudyShape
from .caches import CacheGeometry, hierarchy, launch_fetch
from .decode import B_JUMP, B_NOT_TAKEN, K_BRA, K_CALL, M_ATOMIC_GLOBAL, M_GLOBAL, M_SHARED, REASONS, R, DecodedKernel, LoopSpec, callee_name, decode, guessed_slots, reachable, skips_trig_reduction
from .engine import Engine, EngineConfig, EngineRun
from .launch import ResolvedLaunch, counted_trip, counter_bound, fold_bound, loop_step, resolve_trip
from .listeners import ExecutionCounter, PCSampler, TrafficCounter, Utilization, resource_units
from .lanes import Launch, bank0_layout, signature_types
from .memory import LaneShapes, memory_shapes, param_offsets, walked_shapes
from .walk import WalkResult, walk
from .units import RES_ID, RESOURCES, MachineModel, machine_from_arch
from .workers import fan_out

if TYPE_CHECKING:  # a study reads the context it is given; it never builds one
    from ..context import AnalysisContext

TOOL = "kernelscope-emulator"
TOOL_VERSION = "0.1"


class EmulationError(ValueError):
    """The kernel cannot be emulated with this launch (e.g. no block fits on an SM)."""


class EmulationSettings(BaseModel):
    """How the emulator trades accuracy for speed; defaults are what the editor uses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: Literal["gto", "lrr"] = "gto"
    sample_loops: bool = True  # run the first iterations of long loops and extrapolate
    warmup: int = Field(1, ge=0)  # iterations before the steady state
    max_sampled_iterations: int = Field(8, ge=3)
    issue_budget: int = Field(40_000, ge=1000)  # target warp-instructions per engine run
    #: a run stops here whatever its plan: a quarter of the file's budget (`budget.run_cap`, stages._study)
    max_issues: int | None = Field(None, ge=1000)
    representative_smsp: bool = True  # emulate one SM sub-partition (they are symmetric)
    unknown_access: Literal["coalesced", "uncoalesced"] = "coalesced"
    #: walk one warp through the integer datapath and take memory shapes from its lanes'
    #: addresses (walk.py); off: the affine address analysis alone (memory.py)
    execute_lanes: bool = True
    perturbation: float = Field(0.10, gt=0, lt=1)  # sensitivity: ±10 % (SAAKE §2.2)
    #: emulate a many-wave launch's steady state with two rounds of blocks where they fit (`_rounds`);
    #: off: its waves run back to back, as a run the file's budget reduced does (stages._study)
    steady_rounds: bool = True


DEFAULT_SETTINGS = EmulationSettings()

#: The second stage runs the engine tens of times per kernel after every save, so each run gets
#: a smaller issue budget than `emulate`; every run of one study uses the same budget, so ratios
#: (ΔT/T) and rankings (best block size) compare like with like. Sensitivity keeps 12,000: below
#: it a loop kernel's sampled window shrinks to warm-up + one iteration and a 10 % perturbation
#: drowns in GTO's reordering (sgemm_naive's fp32 gap term goes from 0.1 to 1.4 at 3,000).
#: What-if compares times that differ by far more than 10 %, so it takes less
#: (`benchmarks/emulate.py` measures both against the previous full sweep).
SENSITIVITY_SETTINGS = DEFAULT_SETTINGS.model_copy(update={"issue_budget": 12_000})
#: an engine run stops at this many times its planned issues (at least the floor): `_run_wave`
RUN_GUARD_FACTOR, RUN_GUARD_FLOOR = 10, 400_000
WHAT_IF_SETTINGS = DEFAULT_SETTINGS.model_copy(update={"issue_budget": 8_000})
#: sensitivity: a tail wave up to this share of the time is scaled with the full wave, not re-run
TAIL_SCALED_SHARE = 0.25
#: full waves after which a tail is under TAIL_SCALED_SHARE of the time unless it outlasts a full
#: wave (it holds fewer blocks per SM): the study's cost estimate counts no tail in the perturbed
#: runs (`study_shape`)
TAIL_SCALED_WAVES = 3
#: sensitivity: the gap of a unit busier than this share of the time is perturbed (see there)
GAP_MIN_UTILIZATION = 0.01


# ---- preparation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """Everything about one kernel + launch that does not depend on the latency/gap table."""

    program: Program | None
    kernel: FunctionProgram
    decoded: DecodedKernel
    launch: LaunchConfig
    occ: Occupancy
    registers: int
    arch: ArchSpec
    device: DeviceSpec
    machine: MachineModel
    assumptions: tuple[Assumption, ...]
    settings: EmulationSettings
    line_table: dict
    launch_overhead_s: float = 0.0  # machine.launch_overhead: added to every predicted time
    #: what the walked warp's lanes said about the memory accesses (None: `execute_lanes` off)
    lanes: LaneShapes | None = None
    #: steps of the warps this launch's prepare walked (the lanes' walk and the cache model's short
    #: walks), memo hits included: what the prepare cost, as the budget counts it (budget.WALK_STEP_COST)
    walk_steps: int = 0


def _cfg_loops(kernel: FunctionProgram) -> list[LoopSpec]:
    cfg = kernel.cfg
    out = []
    for L in cfg.loops:
        body = frozenset(i for b in L.body for i in range(cfg.blocks[b].start, cfg.blocks[b].end))
        latches = tuple(sorted(cfg.blocks[b].last for b in L.latches))
        out.append(LoopSpec(header=cfg.blocks[L.header].start, latches=latches, body=body, parent=L.parent,
                            trip=1, info_index=L.index))
    return out


_DIMS = re.compile(r"\b(blockDim|gridDim)\.([xyz])\b")


def _callees(kernel: FunctionProgram, program: Program | None) -> list:
    """The SASS functions the kernel calls, transitively (a `-G` build's device functions and
    `fminf`, the division slow path of another section), so that CALL runs them; a callee in
    the kernel's own section is already in its instructions."""
    if program is None:
        return []
    names: list[str] | None = None
    out, seen, todo = [], {kernel.mangled}, [kernel.sass]
    while todo:
        for ins in todo.pop().instructions:
            if not calls_subroutine(ins):
                continue
            if names is None:  # only a kernel that calls lists the names: n kernels without calls cost n, not n²
                names = [f.mangled for f in program.functions if f.mangled != kernel.mangled]
            name = callee_name(ins, names)
            if name is not None and name not in seen:
                seen.add(name)
                callee = program.function(name).sass
                out.append(callee)
                todo.append(callee)
    return out


def _fold_loop_bound(text: str, resolved, launch: LaunchConfig) -> tuple[int | None, str]:
    """A source loop bound folded over the kernel's known values and launch dimensions, and the
    source of the least certain value it used; a bound of the source's own constants is `sass`
    (nvcc folds those too)."""
    dims = {"blockDim": launch.block, "gridDim": launch.grid}
    folded = _DIMS.sub(lambda m: str(dims[m.group(1)]["xyz".index(m.group(2))]), text)
    used = set(re.findall(r"[A-Za-z_]\w*", folded))
    used |= {{"blockDim": "block", "gridDim": "grid"}[m.group(1)] for m in _DIMS.finditer(text)}
    sources = {a.source for a in resolved.assumptions if a.name in used}
    src = next((s for s in ("default", "settings", "annotation", "launch_site", "captured") if s in sources), "sass")
    return fold_bound(folded, resolved.values), src


#: prepared launches by their inputs (`prepare`): one analysis prepares a kernel's launch for the
#: quick stage, the sensitivity base and the what-if base, which differ only in the issue budget
#: that `prepare` does not read (~4 ms for a one-line kernel, 70-180 ms with a long walk). Keyed
#: by the inputs' identity (they are immutable), which the entry holds so that no id is reused.
_PREPARED: dict[tuple, tuple[tuple, Prepared]] = {}
_PREPARED_SIZE = 64


def prepare(ctx: AnalysisContext, kernel: FunctionProgram, *, launch: LaunchConfig | None = None,
            settings: EmulationSettings = DEFAULT_SETTINGS) -> Prepared:
    """`kernel`'s launch in `ctx` (or `launch` instead) decoded, its memory shapes and trip counts
    resolved: what every run of the engine on it starts from. Memoised by its inputs."""
    arch, device, options, source, program = ctx.arch, ctx.device, ctx.options, ctx.source, ctx.program
    inputs = (kernel, arch, device, options, source, program)
    resolved = ctx.launch(kernel)
    # the launch by its content: two contexts of one program may hold another launch of a kernel
    given = (resolved.launch, tuple(sorted(resolved.values.items())), resolved.trip_hint, resolved.assumptions)
    key = (*map(id, inputs), given, launch,
           settings.model_copy(update={"issue_budget": DEFAULT_SETTINGS.issue_budget, "max_issues": None}))
    hit = _PREPARED.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], inputs)):
        return hit[1] if hit[1].settings == settings else replace(hit[1], settings=settings)
    # the context resolved this launch's occupancy once; a what-if launch is another launch
    prep = _prepare(kernel, arch, device, options, source, program, launch=launch, settings=settings,
                    resolved=resolved, occ=ctx.occupancy.get(kernel.mangled) if launch is None else None)
    if len(_PREPARED) >= _PREPARED_SIZE:
        _PREPARED.pop(next(iter(_PREPARED)))
    _PREPARED[key] = (inputs, prep)
    return prep


def _prepare(kernel: FunctionProgram, arch: ArchSpec, device: DeviceSpec, options: AnalysisOptions,
             source: SourceModel | None, program: Program | None, *, launch: LaunchConfig | None,
             settings: EmulationSettings, resolved: ResolvedLaunch, occ: Occupancy | None) -> Prepared:
    src = source if source is not None else (program.source if program is not None else None)
    assumptions = list(resolved.assumptions)
    if launch is not None:
        assumptions = [a for a in assumptions if a.name not in ("grid", "block", "dynamic_smem")]
        assumptions += [Assumption(name="grid", value=str(launch.grid), source="settings", detail="what-if"),
                        Assumption(name="block", value=str(launch.block), source="settings", detail="what-if")]
    cfg_launch = launch or resolved.launch
    res = kernel.resources
    regs = res.registers if res is not None else 32
    static_smem = res.static_smem if res is not None else 0
    if res is None:
        assumptions.append(Assumption(name="registers", value="32", source="default", detail="no ptxas report"))
    if occ is None:
        occ = occupancy(arch, cfg_launch.threads_per_block, regs, cfg_launch.dynamic_smem, static_smem)
    if occ.active_blocks_per_sm <= 0:
        raise EmulationError(f"{kernel.name}: no block of {cfg_launch.threads_per_block} threads fits on an SM "
                             f"({occ.limiter.value})")
    machine, fallbacks = machine_from_arch(arch, device)
    for name, what, v in fallbacks:
        assumptions.append(Assumption(name=f"{what}.{name}", value=f"{v:g}", source="default",
                                      detail="not in the arch file; emulator fallback"))
    overhead_s, measured_on = launch_overhead(device)
    if measured_on is not None:
        own = measured_on.key == device.key
        given = own and USER_SOURCE_ID in device.sources_for("launch_overhead_us")
        assumptions.append(Assumption(
            name="launch_overhead", value=f"{overhead_s * 1e6:g} us",
            source="settings" if given else "measured" if own else "default",
            detail="added to the emulated time: what an empty kernel takes (launch processing and the "
                   "grid's completion), " + ("from the arch file" if given else f"measured on the {device.name}"
                                              if own else f"measured on the {measured_on.name}, not on the {device.name}")))

    fn = kernel.sass
    hit = options.l2_hit_rate
    params: dict[int, int] = {}
    # its parameters' names place the launch's values in the constant bank: from the file that
    # defines the kernel, which may be a header of the unit (a template kernel in a .cuh)
    sfn = src.definition(base_name(kernel.name)) if src is not None else None
    if sfn is not None:
        params = param_offsets(arch.constant_bank.params,
                               [(p.name, p.is_pointer, p.type_text) for p in sfn.params], resolved.values)
    callees = _callees(kernel, program)
    shapes = memory_shapes(fn.mangled_name, fn.instructions, cfg_launch.block, cfg_launch.grid, hit, arch.warp_size,
                           params)
    for c in callees:  # a callee's parameters arrive in registers: its addresses are not followed
        shapes.update(memory_shapes(c.mangled_name, c.instructions, cfg_launch.block, cfg_launch.grid, hit,
                                    arch.warp_size, {}))
    assumptions.append(Assumption(name="l2_hit_rate", value="per access (reuse across blocks)" if hit is None else f"{hit:g}",
                                  source="default" if hit is None else "settings"))
    loops = _cfg_loops(kernel)
    decoded = decode([(fn.mangled_name, fn.instructions)] + [(c.mangled_name, c.instructions) for c in callees],
                     loops, shapes)
    # trip counts per loop
    infos = {li.index: li for li in kernel.loops}
    full: list[LoopSpec] = []
    # sibling SASS loops of one source loop: ptxas's unrolled main loop then its remainder loops;
    # each remainder runs what the loops before it left over (at least once: its guard is not
    # modeled), and never more than `max_trip_count`: the loop before it stops only once fewer
    # source iterations than its own unroll factor remain, whatever the bound or hint says
    left: dict[tuple[int, int | None], int] = {}
    short = base_name(kernel.name)
    hint = options.launch_hints.get(short) or options.launch_hints.get(kernel.name)
    hint_source = "settings" if hint is not None and hint.trip_count else "annotation"
    live = reachable(decoded)
    slow_paths = _slow_paths_not_taken(decoded, live)
    if slow_paths is not None:
        assumptions.append(slow_paths)
    def unit_model(path: str) -> SourceModel | None:
        """The source model of `path`: the analysed file's, or another file's of its unit."""
        if src is None or program is None or os.path.normpath(path) == os.path.normpath(program.source_path):
            return src
        return src.context_model(path)

    trip_assumption: dict[int, int] = {}  # loop -> index of its trip count's assumption
    for L in decoded.loops:
        info = infos.get(L.info_index) if L.info_index is not None else None
        header = fn.instructions[L.header]
        line = info.header_line if info and info.header_line else header.line
        bound, bound_source = None, "launch_site"
        sl = None
        # a loop charged to another file of the unit (a kernel defined in an included header) is
        # that file's: its lines never name the analysed file's loops
        where = program.line_table.get((fn.mangled_name, header.pc)) if program is not None else None
        latch = fn.instructions[L.latches[-1]] if L.latches else header
        inlined = latch.location if latch.inline_chain else None
        if inlined is not None:
            # a loop of an inlined function is charged to its call's line, where the loop around
            # the call is: its own source loop is at the callee's line, in the callee's file
            isrc = unit_model(inlined.file)
            sl = next((x for x in isrc.loops if x.header_line == inlined.line), None) if isrc is not None else None
        elif (lsrc := unit_model(where[0]) if where is not None else src) is not None:
            if info is not None and info.source_line is not None:
                sl = next((x for x in lsrc.loops if x.header_line == info.source_line), None)
            if sl is None and L.latches:
                # the latch's compare-and-branch carries the loop header's line; the header
                # block's first instruction may carry an inner loop's (a 2-D grid-stride nest)
                sl = next((x for x in lsrc.loops if x.header_line == latch.line), None)
            if sl is None and line is not None:
                sl = lsrc.loop_at(line)
        body = [fn.instructions[i] for i in sorted(L.body)]
        step = loop_step(body, latch, list(fn.instructions), arch.constant_bank)
        if sl is not None:  # the source's extent, in the units of the SASS counter
            bound, bound_source, step = counter_bound(sl, lambda t: _fold_loop_bound(t, resolved, cfg_launch), step,
                                                      info.unroll_factor if info else None)
        if bound is not None and sl is not None and step[0] == "const":
            key = (sl.index, L.parent)
            if key in left:
                bound = left[key]
        counted = counted_trip(body, latch, list(fn.instructions), L.header, arch.constant_bank)
        trip, a = resolve_trip(info_trip=counted if counted is not None else (info.trip_count if info else None),
                               bound_value=bound,
                               step=step, launch=cfg_launch, trip_hint=resolved.trip_hint,
                               default=options.default_trip_count, unroll=info.unroll_factor if info else None,
                               where=(f"line {line}" if line is not None else f"pc {header.pc:#06x}") + (
                                   f" ({os.path.basename(inlined.file)}:{inlined.line})" if inlined is not None else ""),
                               bound_source=bound_source, hint_source=hint_source)
        if info is not None and info.role == "remainder" and info.max_trip_count is not None:
            cap = f"remainder of the unrolled loop at line {line}: at most {info.max_trip_count} trips"
            if trip > info.max_trip_count:
                trip = info.max_trip_count
                a = Assumption(name=a.name, value=str(trip), source="sass",
                               detail=f"{cap} (the {a.source} value was {a.value})")
            else:
                a = a.model_copy(update={"detail": f"{cap}; {a.detail}" if a.detail else cap})
        if inlined is not None:
            a = a.model_copy(update={"detail": f"the loop at {os.path.basename(inlined.file)}:{inlined.line}, "
                                               f"inlined at line {line}; {a.detail}"})
        if bound is not None and sl is not None and step[0] == "const" and step[1]:
            left[(sl.index, L.parent)] = max(0, bound - trip * step[1])
            trip = max(1, trip)
        if L.header in live:  # a loop the model never runs assumes nothing about the result
            trip_assumption[len(full)] = len(assumptions)
            assumptions.append(a)
        full.append(LoopSpec(L.header, L.latches, L.body, L.parent, trip, L.info_index, line))
    decoded.loops = full
    if settings.execute_lanes:
        bank0 = bank0_layout(arch.constant_bank, [(p.name, p.is_pointer, p.type_text) for p in sfn.params]
                             if sfn is not None else [], resolved.values, cfg_launch.block, cfg_launch.grid,
                             signature_types(kernel.name))
        middle = tuple(g // 2 for g in cfg_launch.grid)
        last_warp = max(0, math.ceil(cfg_launch.threads_per_block / arch.warp_size) - 1)
        given = {a.name: a.source for a in assumptions}
        values_source = next((x for x in ("default", "settings", "annotation", "launch_site", "captured")
                              if x in {given.get(n) for n in ("grid", "block", *(p.name for p in sfn.params))}),
                             "launch_site") if sfn is not None else "default"
        first = Launch(cfg_launch.block, cfg_launch.grid, middle, 0, bank0)
        assumptions[:], lanes, walked, walk_steps = _walk_lanes(
            decoded, first, Launch(cfg_launch.block, cfg_launch.grid, middle, last_warp, bank0), assumptions,
            trip_assumption, values_source)
        if slow_paths is not None:
            # a branch the lanes decided may run a slow path after all (a launch's special operand):
            # the assumption names only what is still skipped
            now = _slow_paths_not_taken(decoded, reachable(decoded), walked[1], values_source,
                                        f"warp 0 of block {walked[0].ctaid}")
            assumptions[:] = [now if a is slow_paths else a for a in assumptions if a is not slow_paths or now]
        assumptions[:] = _guessed_lines(decoded, lanes, assumptions, program)
        assumptions[:], cache_steps = _with_caches(decoded, walked, occ, arch, device, hit, assumptions)
        walk_steps += cache_steps
    else:
        lanes, walk_steps = None, 0
    unknown = [s for s, sh in enumerate(decoded.shape) if sh.pattern == "unknown"]
    if unknown and settings.unknown_access == "uncoalesced":
        from .memory import global_shape
        for s in unknown:
            decoded.shape[s] = global_shape(list(range(0, 32 * 128, 128)), 4, decoded.shape[s].l2_hit_rate)
    if unknown:
        assumptions.append(Assumption(name="coalescing", value=settings.unknown_access, source="default",
                                      detail=f"{len(unknown)} accesses with addresses the analysis cannot follow"))
    _local_in_l1(decoded, kernel.resources.stack_frame if kernel.resources is not None else 0,
                 cfg_launch.threads_per_block, occ, arch)
    _lsu_admissions(decoded, arch)
    return Prepared(program, kernel, decoded, cfg_launch, occ, regs, arch, device, machine, tuple(assumptions),
                    settings, program.line_table if program is not None else {}, overhead_s, lanes, walk_steps)


def _guessed_lines(decoded: DecodedKernel, lanes: LaneShapes, assumptions: list[Assumption],
                   program: Program | None) -> list[Assumption]:
    """The `control_flow` assumption with the analysed file's lines that run only because a branch
    it names goes the way the model took (`decode.guessed_slots`): what an advice on them rests on.
    A line is one when most of the code charged to it that runs does so only on the guess: an
    inlined math function's own special-case branches guess a few of its line's instructions
    (sqrt(pow(...)) in the stencil example: 14 of 80), a user's `if` on data the whole side."""
    if program is None or not any(a.name == "control_flow" for a in assumptions):
        return assumptions
    table, path = program.line_table, program.source_path
    guessed = guessed_slots(decoded, lanes.unknown_branches)
    live, on_guess = Counter(), Counter()
    for s in reachable(decoded):
        loc = table.get((decoded.fn[s], decoded.pc[s]))
        if loc is not None and loc[0] == path:
            live[loc[1]] += 1
            on_guess[loc[1]] += s in guessed
    lines = tuple(sorted(ln for ln, n in on_guess.items() if 2 * n > live[ln]))
    return [a.model_copy(update={"lines": lines}) if a.name == "control_flow" else a for a in assumptions]


def _where(ins) -> str:
    return f"{ins.opcode} at line {ins.line}" if ins.line is not None else f"{ins.opcode} at pc {ins.pc:#x}"


def _slow_paths_not_taken(decoded: DecodedKernel, live: frozenset[int], walked: WalkResult | None = None,
                          values_source: str = "default", who: str = "") -> Assumption | None:
    """The math functions' slow paths (a CALL `isa.math_slow_path` names, the float trig functions'
    inline Payne-Hanek reduction) that the kernel's code never runs: outside `live`, the slots
    its branches, as they now go, reach (`decode.reachable`).

    A slow path that a branch the lanes' walk decided (`walked`, every execution computed, every
    lane one way) keeps out is no guess: `ceil((double)n / 3.0)`'s range check on the launch's n.
    Where every skipped path is such, the assumption carries the launch values' source and says
    the guards were executed; otherwise it stays a default, naming those still assumed."""
    calls = {s: name for s, kd in enumerate(decoded.kind) if kd == K_CALL and s not in live
             and (name := math_slow_path(decoded.instr[s]))}
    trig = [s for s in live if decoded.kind[s] == K_BRA and decoded.branch_role[s] == B_JUMP
            and s + 1 not in live and skips_trig_reduction(decoded, s)]
    if not calls and not trig:
        return None
    decided = frozenset(b for b, (all_, none) in walked.decisions.items()
                        if (all_ or none) and b not in walked.unknown_branches) if walked is not None else frozenset()
    # a call is decided where flipping one decided branch opens it; one reachability pass per
    # branch, and none once every call is accounted for (or where there is no call at all)
    pending = set(calls)
    for b in decided:
        if not pending:
            break
        pending -= reachable(decoded, frozenset({b})) - live
    computed = (set(calls) - pending) | (decided & set(trig))
    reduction = f"the inline Payne-Hanek reduction of sinf/cosf/tanf (|x| >= {TRIG_REDUCTION_THRESHOLD_F32:g})"
    assumed = sorted({name for s, name in calls.items() if s not in computed}
                     | ({reduction} if any(s not in computed for s in trig) else set()))
    known = sorted({name for s, name in calls.items() if s in computed}
                   | ({reduction} if any(s in computed for s in trig) else set()))
    if not assumed:
        return Assumption(name="math_slow_path", value="not taken", source=values_source,  # type: ignore[arg-type]
                          detail=f"{', '.join(known)}: executed: the guards, computed over the launch's values "
                                 f"in {who}, skip them")
    also = f" ({', '.join(known)}: skipped by guards the lanes computed in {who})" if known else ""
    return Assumption(name="math_slow_path", value="not taken", source="default",
                      detail=f"{', '.join(assumed)}: operands assumed in the range the inline fast path handles "
                             f"(denormal, huge or special operands take the slow path){also}")


def _adds_work(decoded: DecodedKernel, s: int) -> bool:
    """Whether the walked warps' way at branch `s` (the other way from its guard rule) runs more
    code the other way does not than it leaves out: where the grid's warps disagree, the engine
    runs the side with the work for all of them. `if (i == 0)` around a serial loop: the walked
    warps skip the loop, so their way removes work and the guard rule stays. `sinf` of a large
    index: the walked warps jump to the Payne-Hanek slow path the guard rule skips, so their way
    is kept (before, the grid's first threads, whose angles are small, vetoed it)."""
    now = reachable(decoded)
    other = reachable(decoded, frozenset({s}))
    return len(other - now) > len(now - other)


def _walk_lanes(decoded: DecodedKernel, first: Launch, last: Launch, assumptions: list[Assumption],
                trip_assumption: dict[int, int], values_source: str
                ) -> tuple[list[Assumption], LaneShapes, tuple[Launch, WalkResult], int]:
    """What the lanes' executed values change in the decoded kernel (walk.py), and the
    assumptions that follow:

    * global and shared shapes from the lanes' addresses (warp 0 of the grid's middle block);
    * a loop's trips from its own executed condition, where the walk could decide it (its
      assumption's value and source change; the folded or default value is kept in the detail);
    * a conditional forward branch that every lane of both walked warps (the block's first and
      last) took, or none did, goes that way in the engine too: a path split on an argument
      (`nx > 0`) runs the side the launch takes, not the side the guard rule assumes.

    Also returns the steps its walks took.
    """
    result = walk(decoded, first)
    steps = result.steps
    if not result.accesses and not result.trips and any(first.ctaid):
        # the middle block's warp left at once (a grid larger than its data): walk the first block
        first = replace(first, ctaid=(0, 0, 0))
        last = replace(last, ctaid=(0, 0, 0))
        result = walk(decoded, first)
        steps += result.steps
    lanes = walked_shapes(decoded, result)
    for s, shape in lanes.shapes.items():
        decoded.shape[s] = shape
    for s in lanes.generic_shared:
        # a generic load or store into the shared window is served by shared memory (its banks,
        # its latency, a short-scoreboard wait), not by the L1/L2 route of a global access
        if decoded.mem[s] == M_GLOBAL:
            decoded.mem[s] = M_SHARED
            decoded.res[s] = RES_ID["shared"]
            decoded.result_reason[s] = R[StallReason.short_scoreboard]
    out = list(assumptions)
    for L, trips in sorted(result.trips.items()):
        if len(set(trips)) > 1:
            continue  # a count that changes from entry to entry: the walk saw only the first entries
        t = max(1, trips[0])
        spec = decoded.loops[L]
        i = trip_assumption.get(L)
        old = out[i] if i is not None else None
        if t == spec.trip or (old is not None and old.source == "sass"):
            continue
        decoded.loops[L] = replace(spec, trip=t)
        if old is not None:
            out[i] = Assumption(name=old.name, value=str(t), source=values_source,  # type: ignore[arg-type]
                                detail=f"executed: the loop's own condition over the launch's values "
                                       f"(was {old.value} from {old.source}: {old.detail})")
    wanted = {s for s, (all_, none) in result.decisions.items()
              if (all_ and decoded.branch_role[s] == B_NOT_TAKEN) or
              (none and decoded.branch_role[s] == B_JUMP and decoded.instr[s].predicate is not None)}
    if wanted:  # the last warp is walked only to confirm a change of the engine's path
        other_walk = walk(decoded, last) if last.warp != first.warp else result
        steps += other_walk.steps if other_walk is not result else 0
        other = other_walk.decisions
        flips: dict[int, bool] = {}  # slot -> whether the walked warps all took it
        for s, (all_, none) in result.decisions.items():
            o_all, o_none = other.get(s, (all_, none))
            role = decoded.branch_role[s]
            if all_ and o_all and role == B_NOT_TAKEN:
                flips[s] = True
            elif none and o_none and role == B_JUMP and decoded.instr[s].predicate is not None:
                flips[s] = False
        if flips and (any(first.ctaid) or first.warp):
            # The grid's first warp, which `i == 0` and `blockIdx.x == 0` single out: where it goes
            # the other way, the warps do not agree, and the branch keeps the guard rule (as one
            # the two walked warps decide differently does). Skipping a one-thread serial loop for
            # every warp would leave its time out whatever its length; running it in every warp
            # costs the contention of the SM's other warps over it, and is named. It is walked with
            # as many trips as the others: a loop cut short leaves its registers short of the
            # loop's end, and the branches past it decide on other values (one trip each vetoed
            # the K loop's remainder paths of a naive GEMM).
            corner_walk = walk(decoded, replace(first, ctaid=(0, 0, 0), warp=0))
            steps += corner_walk.steps
            apart = sorted(s for s, took in flips.items()
                           if (c := corner_walk.decisions.get(s)) is not None and not (c[0] if took else c[1]))
            for s in apart:
                if not _adds_work(decoded, s):
                    del flips[s]
            if apart:  # appended: the trip counts' indices into `out` stay as they are
                out.append(Assumption(
                    name="warp_paths", value=f"{len(apart)} branches", source="default",
                    detail=f"warp 0 of block {first.ctaid} and warp 0 of block (0, 0, 0) go different ways at "
                           f"{', '.join(_where(decoded.instr[s]) for s in apart[:6])}: every warp is modeled "
                           f"running the side with more code, where only some warps do (an `i == 0` "
                           f"branch's serial loop runs in one thread; a slow path most of the grid takes "
                           f"is skipped by its first threads)"))
        for s, took in flips.items():
            decoded.branch_role[s] = B_JUMP if took else B_NOT_TAKEN
        if flips:
            live = reachable(decoded)
            gone = {i for L, i in trip_assumption.items() if decoded.loops[L].header not in live}
            out = [a for i, a in enumerate(out) if i not in gone]
    who = f"warp 0 of block {first.ctaid}"
    if lanes.data_dependent:
        items = sorted({f"{_where(decoded.instr[s])}: {why}" for s, why in lanes.data_dependent.items()})
        out.append(Assumption(
            name="data_dependent", value=f"{len(lanes.data_dependent)} accesses", source="default",
            detail=f"addresses {who} could not compute, modeled as one 32 B sector per active lane (shared "
                   f"memory: the expected largest bank load of random words): " + "; ".join(items[:8])
                   + (f"; and {len(items) - 8} more" if len(items) > 8 else "")))
    if lanes.from_launch:
        items = sorted({f"{_where(decoded.instr[s])}: {why}" for s, why in lanes.from_launch.items()})
        out.append(Assumption(
            name="launch_values", value=f"{len(lanes.from_launch)} accesses", source="default",
            detail="addresses that need kernel arguments the launch does not give, modeled by the address "
                   "analysis (an unknown stride: see `coalescing`); give them in launch_hints values, a "
                   "`// kernelscope:` annotation or launch capture: " + "; ".join(items[:8])
                   + (f"; and {len(items) - 8} more" if len(items) > 8 else "")))
    if lanes.relative:
        out.append(Assumption(
            name="address_base", value=f"{len(lanes.relative)} accesses", source="default",
            detail="addresses whose lanes share an unknown base (loaded, or an argument not given): the "
                   "strides between lanes are exact, the base is taken as 128 B aligned"))
    # branches whose direction the lanes could not compute: the engine takes its guard rule's way,
    # a guess the result must name (a loaded value, or a floating-point compare, decides them)
    # (the float trig functions' reduction guards are named by `math_slow_path`)
    undecided = {s: why for s, why in lanes.unknown_branches.items() if not skips_trig_reduction(decoded, s)}
    for i, L in enumerate(decoded.loops):
        why = next((lanes.unknown_branches[s] for s in L.latches if s in lanes.unknown_branches), None)
        j = trip_assumption.get(i)
        # (indices are stale once a branch change dropped a dead loop's assumption: check the name)
        if why is None or j is None or j >= len(out) or not out[j].name.startswith("trip_count") \
                or out[j].source != "default":
            continue
        out[j] = out[j].model_copy(update={"detail": f"data-dependent: the loop's exit is not computed ({why}); "
                                           f"{out[j].detail}"})
    if undecided:
        items = sorted({f"{_where(decoded.instr[s])}: {why}" for s, why in undecided.items()})
        out.append(Assumption(
            name="control_flow", value=f"{len(items)} branches", source="default",
            detail=f"branches {who} could not decide, taken as the guard rule assumes (guards pass, the "
                   "work side of an early-out runs): " + "; ".join(items[:6])
                   + (f"; and {len(items) - 6} more" if len(items) > 6 else "")))
    unreached = [s for s in lanes.unreached if decoded.shape[s].pattern == "unknown"]
    if unreached or lanes.truncated:
        out.append(Assumption(
            name="lanes_unreached", value=f"{len(unreached)} accesses", source="default",
            detail=(f"{who} stopped at its step limit; " if lanes.truncated else "")
                   + f"accesses {who} did not execute keep the address analysis's shape"
                   + (": " + "; ".join(sorted({_where(decoded.instr[s]) for s in unreached})[:8]) if unreached else "")))
    return out, lanes, (first, result), steps


#: trips of each loop entry, and steps in all, the neighbour walks run: they only measure
#: warp-to-warp and block-to-block translations (caches.translation), over the executions both
#: walks made. They run on past DELTA_STEPS until they reach every global load the sampled warp
#: executed (`_delta_steps`): a load first reached later (a tiled GEMM's K loop after a long
#: prologue) had no translation, so no reuse between warps or blocks
DELTA_TRIPS = 2
DELTA_STEPS = 160


def _delta_steps(decoded: DecodedKernel, w0: WalkResult) -> int:
    """Steps the neighbour walks need to execute each global load once: where the sampled warp's
    walk first executed the last of them (it runs as many trips per loop as they, or more)."""
    reach = max((execs[0].spent + 1 for s, execs in w0.accesses.items()
                 if execs and decoded.mem[s] == M_GLOBAL and not decoded.is_store[s]), default=0)
    return max(DELTA_STEPS, min(reach, w0.steps))


def _local_in_l1(decoded: DecodedKernel, stack_bytes: int, threads_per_block: int, occ, arch: ArchSpec) -> None:
    """Local loads (a thread's stack frame: an array indexed at run time, a spill, a pointer
    table) hit L1 as far as L1 holds the resident threads' frames: local memory is cached in L1
    like global (CUDA C++ Programming Guide, device memory accesses, local memory), and what a
    thread reads back it has written there. The walk cannot follow these addresses (each lane's
    frame is interleaved by the hardware), so before this every local load went to L2."""
    if arch.l1 is None or stack_bytes <= 0:
        return
    l1 = arch.l1.l1_bytes(occ.shared_memory_per_block * occ.active_blocks_per_sm)
    frames = stack_bytes * threads_per_block * max(1, occ.active_blocks_per_sm)
    hit = min(1.0, l1 / frames)
    for s, ins in enumerate(decoded.instr):
        if decoded.mem[s] == M_GLOBAL and isa.memory_space(ins.opcode) == "local" and not decoded.is_store[s]:
            decoded.shape[s] = replace(decoded.shape[s], l1_hit_rate=hit, l1_miss_rate=1.0 - hit)


def _lsu_admissions(decoded: DecodedKernel, arch: ArchSpec) -> None:
    """A global access's LSU cost in admissions of the arch's `lsu` gap: the larger of one
    instruction issued to the SMSP's load/store units (the gap: 32 lanes over its units) and its
    128 B wavefronts through the SM's L1 data path at one per clock (SHARED_BYTES_PER_CLOCK_PER_SM,
    the same array as shared memory), a wavefront costing `schedulers_per_sm` SMSP cycles. Where
    the gap is the wavefront's (sm_80, sm_90: 16 LD/ST lanes per SMSP, gap 4) nothing changes; on
    sm_86/sm_89 (gap 8) a 32-wavefront request is 16 admissions, not 32."""
    gap = arch.pipe_gap(Resource.lsu)
    if not gap:
        return
    per_wavefront = arch.schedulers_per_sm * WARP_REQUEST_BYTES / SHARED_BYTES_PER_CLOCK_PER_SM / gap
    if per_wavefront >= 1.0:
        return
    for s, m in enumerate(decoded.mem):
        if m in (M_GLOBAL, M_ATOMIC_GLOBAL):
            sh = decoded.shape[s]
            decoded.shape[s] = replace(sh, wavefronts=max(1.0, sh.wavefronts * per_wavefront))


def _with_caches(decoded: DecodedKernel, walked: tuple[Launch, WalkResult], occ, arch: ArchSpec, device: DeviceSpec,
                 l2_given: float | None, assumptions: list[Assumption]) -> tuple[list[Assumption], int]:
    """L1 and L2 hit rates of the global accesses the walk followed (caches.py), set in their
    shapes; the L2 rate the user gave wins over the modeled one. `walked`: the launch and walk
    `_walk_lanes` made (its warp's stream). Also returns the steps of the walks it made."""
    first, w0 = walked
    warps = max(1, math.ceil(math.prod(first.block) / arch.warp_size))
    steps = _delta_steps(decoded, w0)

    def neighbour(d: int):
        if first.grid[d] <= 1:
            return None
        c = list(first.ctaid)
        c[d] = c[d] + 1 if c[d] + 1 < first.grid[d] else c[d] - 1
        return walk(decoded, replace(first, ctaid=tuple(c)), max_iterations=DELTA_TRIPS, max_steps=steps)

    smem = occ.shared_memory_per_block * occ.active_blocks_per_sm
    geo = CacheGeometry(
        l1_bytes=arch.l1.l1_bytes(smem) if arch.l1 is not None else 0,
        line_bytes=arch.l1.line_bytes if arch.l1 is not None else 128,
        sector_bytes=arch.l1.sector_bytes if arch.l1 is not None else 32,
        l2_bytes=(device.l2_size_kib or 0) * 1024, warps_per_block=warps,
        blocks_per_sm=occ.active_blocks_per_sm, resident_blocks=occ.active_blocks_per_sm * device.sm_count,
        grid=first.grid)
    others = (walk(decoded, replace(first, warp=1), max_iterations=DELTA_TRIPS, max_steps=steps) if warps > 1 else None,
              neighbour(0), neighbour(1))
    walked_steps = sum(w.steps for w in others if w is not None)
    h = hierarchy(decoded, w0, *others, geo, lambda s: max(1, isa.access_bytes(decoded.instr[s]) or 4))
    for s, r in h.rates.items():
        decoded.shape[s] = replace(decoded.shape[s], l1_hit_rate=r.l1_hit, l1_miss_rate=r.l1_miss,
                                   l2_hit_rate=r.l2_hit if l2_given is None else decoded.shape[s].l2_hit_rate,
                                   dram_scale=r.dram_scale if l2_given is None else 1.0, l2_cost=r.l2_cost)
    out = list(assumptions)
    if not h.rates:
        return out, walked_steps
    n_global = sum(1 for s, m in enumerate(decoded.mem) if m == M_GLOBAL)
    left = n_global - len(h.rates)
    i = next((j for j, a in enumerate(out) if a.name == "l2_hit_rate"), None)
    l1 = "no L1 data cache in the arch file" if arch.l1 is None else \
        f"L1 {geo.l1_bytes // 1024} KiB per SM (the unified array less the shared-memory carve-out)"
    detail = (f"modeled from the lanes' addresses: {l1}, {geo.l2_bytes // (1 << 20)} MiB L2 shared by the grid, "
              f"{h.warps} warps of the block simulated in L1, reuse across blocks along "
              f"{', '.join(h.shared_dims) or 'no grid dimension'}"
              + (f"; {left} global accesses not followed keep the address analysis's rate, with no L1 reuse"
                 if left > 0 else ""))
    if i is not None and out[i].source == "default":
        out[i] = Assumption(name="l2_hit_rate", value="modeled per access (L1 and L2 reuse)",
                            source="default" if left > 0 else "sass", detail=detail)
    return out, walked_steps


def emulated_trips(k: DecodedKernel, settings: EmulationSettings, warps: int,
                   rounds: int = 1) -> tuple[list[int], list[int]]:
    """Iterations to run per loop and each loop's cool-down, for these settings (sampling.py), for
    `warps` emulated warps each run `rounds` times."""
    return sampling.emulated_trips(k, warps * rounds, sample=settings.sample_loops, warmup=settings.warmup,
                                   max_sampled=settings.max_sampled_iterations, issue_budget=settings.issue_budget)


@dataclass(frozen=True)
class Wave:
    run: EngineRun
    sampler: PCSampler | ExecutionCounter  # the latter in a run that keeps no stall samples
    util: Utilization
    traffic: TrafficCounter
    blocks_per_sm: int
    active_sms: int


#: Memo of engine runs: (kernel image, engine configuration, iterations run, effective machine)
#: -> Wave. The engine is a pure function of these, so one kernel's runs share a wave wherever
#: they repeat one: a tail and a full wave of the same shape, the base run and the SM-count or
#: grid points that repeat it, and the quick stage's run and a second-stage base run whose issue
#: budgets sample the same iterations (a loop shorter than either budget's window), without
#: changing any result.
WaveCache = dict


def _image_key(prep: Prepared) -> tuple:
    """What of `prep` the engine reads besides the machine and the iterations it runs: the code's
    memory shapes and trips, and the settings that shape the run (not the issue budget, which
    only chooses the iterations: those are in the key themselves)."""
    k = prep.decoded
    st = prep.settings
    return (prep.kernel.mangled, len(k), tuple(k.shape), tuple(L.trip for L in k.loops), st.representative_smsp,
            st.policy, st.warmup)


def _emulated_warps(prep: Prepared, blocks_per_sm: int) -> int:
    """Warps a run of `blocks_per_sm` blocks emulates (one SMSP's share when representative)."""
    total = blocks_per_sm * math.ceil(prep.launch.threads_per_block / prep.arch.warp_size)
    return math.ceil(total / prep.machine.schedulers_per_sm) if prep.settings.representative_smsp else total


def run_wave(prep: Prepared, blocks_per_sm: int, active_sms: int, machine: MachineModel | None = None,
             extra_listeners: list | None = None, cache: WaveCache | None = None, ledger: Ledger | None = None,
             samples: bool = True, rounds: int = 1, cancel: CancelToken | None = None) -> Wave:
    """One wave of `blocks_per_sm` blocks on each of `active_sms` SMs. Without `samples` the run
    counts executions but splits no stall cycles by reason (a what-if point needs only its time,
    which is the same either way); a cached wave with samples serves a request without. The run
    stops with `Cancelled` soon after `cancel` (the ledger's where one is given: the quick stage
    charges its runs itself, and passes only its token) is cancelled."""
    m = machine or prep.machine
    wpb = math.ceil(prep.launch.threads_per_block / prep.arch.warp_size)
    total_warps = blocks_per_sm * wpb
    active_smsps = min(m.schedulers_per_sm, total_warps)
    m_eff = m.shared_by(active_smsps, active_sms, prep.device.sm_count)
    st = prep.settings
    emul, cool = emulated_trips(prep.decoded, st, _emulated_warps(prep, blocks_per_sm), rounds)
    key = None
    if cache is not None and not extra_listeners:
        key = (_image_key(prep), tuple(emul), tuple(cool), blocks_per_sm, wpb, active_sms, m_eff, rounds)
        hit = cache.get((*key, True)) or (None if samples else cache.get((*key, False)))
        if hit is not None:
            return hit
        key = (*key, samples)
    if ledger is not None:
        ledger.check()
    sampler = PCSampler() if samples else ExecutionCounter()
    util, traffic = Utilization(sampler), TrafficCounter(sampler)
    # A run planned at `issue_budget` that goes on 10 times past it is one the model cannot end (a
    # persistent kernel's loop exited only by data): stopped there, and said to be a lower bound,
    # so that no input makes one emulation cost more than 400k warp-instructions (~1 s); the
    # largest run over the examples and tests/data/real is 32,608
    guard = min(EngineConfig.max_issues, rounds * max(RUN_GUARD_FLOOR, RUN_GUARD_FACTOR * st.issue_budget),
                st.max_issues or EngineConfig.max_issues)
    cfg = EngineConfig(blocks=blocks_per_sm, warps_per_block=wpb, representative=st.representative_smsp,
                       policy=st.policy, warmup=st.warmup, cooldowns=tuple(cool), max_issues=guard, rounds=rounds)
    run = Engine(prep.decoded, m_eff, cfg, emul, [sampler, util, traffic, *(extra_listeners or [])],
                 cancel=ledger.cancel if ledger is not None else cancel).run()
    if ledger is not None:
        ledger.charge(run.issues)
    # A unit cannot admit faster than its gap: scaled up from a steady window of a few sampled
    # iterations, a bandwidth-bound loop can come out slightly faster than its busiest unit's
    # scaled work allows (sgemm_naive on an A100: 0.5 % above the DRAM bandwidth). The wave takes
    # at least that work's time (SAAKE §3's throughput-limited T = L + (C·P − 1)·G, for the whole run).
    floor = util.busiest_cycles(run)
    if floor > run.cycles:
        run = replace(run, cycles=floor)
        util.on_end(run)
    if run.steady_period is not None and run.steady_period < floor / rounds:
        # a steady wave cannot take less than its share of the busiest unit's work
        run = replace(run, steady_period=floor / rounds)
    wave = Wave(run, sampler, util, traffic, blocks_per_sm, active_sms)
    if key is not None:
        cache[key] = wave
    return wave


# ---- prediction --------------------------------------------------------------------------------


class Prediction(BaseModel):
    model_config = ConfigDict(frozen=True)

    cycles: float
    seconds: float
    waves: float  # blocks / (SMs × blocks per SM); < 1 means the GPU is not filled
    full_waves: int
    tail_blocks_per_sm: int
    blocks_per_sm: int
    occupancy: float


def _waves(prep: Prepared, sm_count: int) -> tuple[int, int, int, int]:
    """(full waves, blocks per SM in a full wave, tail blocks per SM, SMs busy in the tail)."""
    per_sm = prep.occ.active_blocks_per_sm
    blocks = prep.launch.blocks
    full, rem = divmod(blocks, sm_count * per_sm)
    tail_per_sm = math.ceil(rem / sm_count) if rem else 0
    tail_sms = min(sm_count, rem) if rem else 0
    return full, per_sm, tail_per_sm, tail_sms


#: rounds of blocks a many-wave launch's full wave is emulated with (`steady_cycles`)
STEADY_ROUNDS = 2


def _rounds(k: DecodedKernel, st: EmulationSettings, full: int, warps: int) -> int:
    """Rounds of blocks the full wave of a launch of `full` full waves is emulated with, `warps`
    warps emulated per round: STEADY_ROUNDS where one round emulates the blocks' whole life (every
    loop iteration) and the rounds fit the run's issue budget; else one. Blocks whose loops are
    sampled run many times the emulated window, so their start-up is a small share of their time,
    and the second round would double the cost of the runs that cost most (a GEMM's) for little:
    sampling fewer iterations to pay for it moved leimao's RTX 3090 GEMMs by up to 20 %."""
    if full < STEADY_ROUNDS or not st.steady_rounds:
        return 1
    whole = [L.trip for L in k.loops]
    if emulated_trips(k, st, warps, STEADY_ROUNDS)[0] != whole:
        return 1
    return STEADY_ROUNDS if sampling.issues_per_warp(k, whole, {}) * warps * STEADY_ROUNDS <= st.issue_budget else 1


def steady_cycles(run: EngineRun, full: int) -> float:
    """Time of `full` waves from a run of one wave (`full` = 1) or of `run.rounds` rounds.

    The block scheduler starts a block on an SM as soon as one retires there, so after the first
    wave the blocks are no longer in step: one block's wait for DRAM overlaps another's arithmetic
    and barriers. The run of rounds models it (each retiring block is replaced at once): it holds
    the launch's start-up and its drain once, and every wave beyond its rounds adds one steady
    period, the time a wave's worth of blocks takes to pass through a full SM
    (`EngineRun.steady_period`)."""
    if run.rounds == 1 or run.steady_period is None:
        return full * run.cycles
    return run.cycles + (full - run.rounds) * run.steady_period


def predict_waves(prep: Prepared, machine: MachineModel | None = None, sm_count: int | None = None,
                  listeners_factory=None, cache: WaveCache | None = None, ledger: Ledger | None = None,
                  samples: bool = True, cancel: CancelToken | None = None) -> tuple[Prediction, list[tuple[Wave, float]]]:
    """Time of the launch, and the emulated waves with their weight: how many copies of each run's
    counts make up the launch (SM-waves; a run of two rounds holds two waves, so half as many copies)
    (`samples`, `cancel`: see `run_wave`)."""
    sms = sm_count or prep.device.sm_count
    full, per_sm, tail_per_sm, tail_sms = _waves(prep, sms)
    cache = {} if cache is None else cache  # a tail of the full wave's shape is not run twice
    waves: list[tuple[Wave, float]] = []
    cycles = 0.0
    if full:
        w = run_wave(prep, per_sm, sms, machine, listeners_factory() if listeners_factory else None, cache, ledger,
                     samples, _rounds(prep.decoded, prep.settings, full, _emulated_warps(prep, per_sm)), cancel)
        cycles += steady_cycles(w.run, full)
        # the run's counts are of `rounds` wave's worth of blocks on its SM
        waves.append((w, full * sms / w.run.rounds))
    if tail_per_sm:
        w = run_wave(prep, tail_per_sm, tail_sms, machine, listeners_factory() if listeners_factory else None,
                     cache, ledger, samples, cancel=cancel)
        cycles += w.run.cycles
        # blocks of the tail, in units of the emulated per-SM block set
        waves.append((w, (prep.launch.blocks - full * sms * per_sm) / tail_per_sm))
    pred = Prediction(cycles=cycles, seconds=cycles / prep.device.clock_hz + prep.launch_overhead_s,
                      waves=prep.launch.blocks / (sms * per_sm), full_waves=full, tail_blocks_per_sm=tail_per_sm,
                      blocks_per_sm=per_sm, occupancy=prep.occ.occupancy)
    return pred, waves


# ---- emulate -------------------------------------------------------------------------------------


class Emulation(BaseModel):
    """A modeled profile plus what the emulator knows beyond the profile model."""

    model_config = ConfigDict(frozen=True)

    profile: KernelProfile
    prediction: Prediction
    loop_trips: tuple[int, ...]
    emulated_trips: tuple[int, ...]
    issues: int  # warp-instructions the engine issued (cost of the emulation)


def emulate_detailed(ctx: AnalysisContext, kernel: FunctionProgram, *, settings: EmulationSettings = DEFAULT_SETTINGS,
                     launch: LaunchConfig | None = None, cache: WaveCache | None = None) -> Emulation:
    prep = prepare(ctx, kernel, launch=launch, settings=settings)
    return profile_of(prep, cache=cache)


def launch_bytes(prep: Prepared, wave: Wave) -> dict[str, float]:
    """Bytes per level the whole launch moves: the emulated warps' traffic in `wave` times the
    launch's warps (every warp runs the same path), and the code and constants the launch reads
    once through L2 from DRAM (`caches.launch_fetch`). The one count of a launch's bytes: the
    profile, its roofline trajectory and the what-if's intensity all read it."""
    warps_total = prep.launch.blocks * math.ceil(prep.launch.threads_per_block / prep.arch.warp_size)
    out = {p: v / wave.run.warp_runs * warps_total for p, v in wave.traffic.bytes.items()}
    fetched = launch_fetch(prep.decoded, prep.arch.icache).total
    for level in ("l2", "dram"):
        out[level] = out.get(level, 0.0) + fetched
    return out


def profile_of(prep: Prepared, machine: MachineModel | None = None, cache: WaveCache | None = None,
               cancel: CancelToken | None = None) -> Emulation:
    """The modeled profile of `prep`'s launch; its waves are left in `cache` for later runs of the
    same kernel (the second stage's base runs). `cancel` stops its runs (`run_wave`)."""
    pred, waves = predict_waves(prep, machine, cache=cache, cancel=cancel)
    k = prep.decoded
    n = len(k)
    samples = [[0.0] * len(REASONS) for _ in range(n)]
    executed = [0.0] * n
    busy: dict[str, float] = {}
    for wave, weight in waves:
        r = wave.run
        per_sm = weight * r.warps_on_sm / r.warps_emulated  # emulated warps -> all warps of those SMs
        for s in range(n):
            row = wave.sampler.samples[s]
            if any(row):
                tgt = samples[s]
                for j, v in enumerate(row):
                    tgt[j] += v * per_sm
            executed[s] += wave.sampler.executed[s] * per_sm
        for name, b in wave.util.busy.items():  # busy of the emulated warps -> all warps of those SMs
            busy[name] = busy.get(name, 0.0) + b * per_sm
    pcs = []
    for s in range(n):
        row = samples[s]
        if not any(row) and not executed[s]:
            continue
        pcs.append(PCSample(function=k.fn[s], pc=k.pc[s],
                            samples={REASONS[j]: v for j, v in enumerate(row) if v},
                            executed=executed[s]))
    pcs_t = tuple(pcs)
    lines = aggregate_lines(pcs_t, prep.line_table)
    sms, sched = prep.device.sm_count, prep.arch.schedulers_per_sm
    denom = max(pred.cycles, 1.0) * sms * sched
    utilization = {name: min(1.0, b / denom) for name, b in busy.items() if b}
    # FLOPs/bytes: every warp runs the same path, so per-warp traffic × warps in the launch
    ref = waves[0][0]
    warps_total = prep.launch.blocks * math.ceil(prep.launch.threads_per_block / prep.arch.warp_size)
    per_warp = 1.0 / ref.run.warp_runs
    flops = {p: v * per_warp * warps_total for p, v in ref.traffic.flops.items()}
    byts = launch_bytes(prep, ref)
    truncated = any(w.run.truncated for w, _ in waves)
    assumptions = [*prep.assumptions, launch_fetch(k, prep.arch.icache).assumption()]
    if truncated:
        assumptions.append(Assumption(name="emulation", value="truncated", source="default",
                                      detail="the emulation hit its instruction guard; the time is a lower bound"))
    if any(w.run.recursion_cut for w, _ in waves):
        assumptions.append(Assumption(name="recursion_depth", value=str(sampling.MAX_CALL_DEPTH), source="default",
                                      detail="recursive calls deeper than this are not emulated; deeper "
                                             "levels cost nothing in the modeled time"))
    prov = Provenance(kind="modeled", device=prep.device.name, arch=prep.arch.name, tool=TOOL,
                      tool_version=TOOL_VERSION, time=datetime.now(timezone.utc), assumptions=tuple(assumptions))
    profile = KernelProfile(kernel=prep.kernel.mangled, name=prep.kernel.name, launch=prep.launch,
                            registers_per_thread=prep.registers, occupancy=prep.occ.occupancy,
                            occupancy_limiter=prep.occ.limiter.value, duration_s=pred.seconds, pcs=pcs_t,
                            lines=lines, utilization=utilization, flops=flops, bytes=byts,
                            hit_rates=dict(ref.traffic.hit_rates), provenance=prov)
    emul, _ = emulated_trips(k, prep.settings, ref.run.warps_emulated, ref.run.rounds)
    return Emulation(profile=profile, prediction=pred, loop_trips=tuple(L.trip for L in k.loops),
                     emulated_trips=tuple(emul), issues=sum(w.run.issues for w, _ in waves))


def emulate(ctx: AnalysisContext, kernel: FunctionProgram, *, settings: EmulationSettings = DEFAULT_SETTINGS,
            launch: LaunchConfig | None = None) -> KernelProfile:
    """A modeled `KernelProfile` of one kernel launch (SAAKE §4 abstract kernel emulation).

    `launch` replaces the resolved configuration, e.g. with the one a measured profile recorded.
    """
    return emulate_detailed(ctx, kernel, settings=settings, launch=launch).profile


# ---- cost of a study (the budget's plan) --------------------------------------------------------


def study_shape(prep: Prepared) -> StudyShape:
    """What `sensitivity` and `what_if` would run for this kernel, and what one prediction costs
    at a per-run issue budget (estimated as the engine will run it: `sampling.issues_per_warp`)."""
    k = prep.decoded
    full, per_sm, tail_per_sm, _ = _waves(prep, prep.device.sm_count)
    # (warps emulated, full: whether the wave is the full one, which may run STEADY_ROUNDS rounds)
    warps = [(_emulated_warps(prep, per_sm), True)] if full else []
    warps += [(_emulated_warps(prep, tail_per_sm), False)] if tail_per_sm else []
    regions: dict[int, tuple] = {}
    memo: dict[tuple[int, int], float] = {}

    def cost(issue_budget: int, waves: int | None = None) -> float:
        if (issue_budget, waves or 0) not in memo:
            st = prep.settings.model_copy(update={"issue_budget": issue_budget})
            total = 0.0
            for w, is_full in warps[:waves]:
                r = _rounds(k, st, full, w) if is_full else 1
                total += sampling.issues_per_warp(k, emulated_trips(k, st, w, r)[0], regions) * w * r
            memo[(issue_budget, waves or 0)] = total
        return memo[(issue_budget, waves or 0)]

    # a perturbed sensitivity run emulates the full wave only and scales a short tail by its change
    # (`sensitivity_study`): after TAIL_SCALED_WAVES full waves the tail is surely short enough
    tail_scaled = full >= TAIL_SCALED_WAVES and len(warps) == 2

    used = {r for s in range(len(k)) for r, units in resource_units(k, s, prep.machine) if units > 0}
    used |= {RES_ID["branch"]} if any(kind == K_BRA for kind in k.kind) else set()
    current = prep.launch.threads_per_block
    sizes = block_size_sweep(prep.arch, current) if prep.launch.block[1:] == (1, 1) else ()
    staged = sum(1 for L in k.loops if L.line is not None and L.parent is None and staging.staged_loads(k, L))
    return StudyShape(resources=len(used), block_sizes=sizes, current_block=current,
                      sm_counts=sm_count_sweep(prep.device.sm_count), grid_multipliers=GRID_MULTIPLIERS, cost=cost,
                      staged_loops=min(STAGED_LOOPS_MAX, staged), prepare_cost=prep.walk_steps * WALK_STEP_COST,
                      perturbed_cost=partial(cost, waves=1) if tail_scaled else cost)


# ---- sensitivity (SAAKE §3.3) --------------------------------------------------------------------


class ResourceSensitivity(BaseModel):
    model_config = ConfigDict(frozen=True)

    resource: str
    latency: float  # (ΔT/T) / (ΔL/L)
    gap: float  # (ΔT/T) / (ΔG/G)

    @property
    def strongest(self) -> float:
        return max(abs(self.latency), abs(self.gap))


class RegionSensitivity(BaseModel):
    model_config = ConfigDict(frozen=True)

    region: str  # "kernel" or "loop@line N"
    loop_index: int | None
    line: int | None
    share: float  # of the kernel's samples
    resources: tuple[ResourceSensitivity, ...]
    bottleneck: str | None
    bound: Literal["latency", "throughput"] | None


class SensitivityReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernel: str
    base_seconds: float
    perturbation: float
    kernel_region: RegionSensitivity
    loops: tuple[RegionSensitivity, ...]

    @property
    def bottleneck(self) -> str | None:
        return self.kernel_region.bottleneck

    @property
    def bound(self) -> str | None:
        return self.kernel_region.bound


def _used_resources(prep: Prepared, wave: Wave) -> list[str]:
    used = {name for name, b in wave.util.busy.items() if b > 0}
    return [r for r in RESOURCES if r in used]


def _region(name: str, loop: int | None, line: int | None, share: float,
            entries: list[ResourceSensitivity]) -> RegionSensitivity:
    best = max(entries, key=lambda e: e.strongest, default=None)
    if best is None or best.strongest < 1e-3:
        return RegionSensitivity(region=name, loop_index=loop, line=line, share=share, resources=tuple(entries),
                                 bottleneck=None, bound=None)
    bound = "latency" if abs(best.latency) >= abs(best.gap) else "throughput"
    return RegionSensitivity(region=name, loop_index=loop, line=line, share=share, resources=tuple(entries),
                             bottleneck=best.resource, bound=bound)


@dataclass(frozen=True)
class Study:
    """A second-stage study once its base run is done: its independent runs as jobs (run them in
    any process, `workers.fan_out`) and what makes its report of their results, in job order."""

    jobs: list[Callable[[], object]]
    finish: Callable[[list], BaseModel]

    def run(self, processes: int = 1, ledger: Ledger | None = None):
        return run_studies([self], processes, ledger)[0]


def run_studies(studies: list[Study | None], processes: int = 1, ledger: Ledger | None = None, *,
                here: bool = True) -> list:
    """Each study's report (None for None), their jobs run in one fan-out: the processes stay busy
    until the last job of any study is done, not of each (`here`: see `workers.fan_out`)."""
    present = [x for x in studies if x is not None]
    out = fan_out([job for x in present for job in x.jobs], processes, ledger, here=here)
    reports = {}
    for x in present:
        reports[id(x)], out = x.finish(out[:len(x.jobs)]), out[len(x.jobs):]
    return [reports[id(x)] if x is not None else None for x in studies]


def sensitivity(ctx: AnalysisContext, kernel: FunctionProgram, *, processes: int = 1, ledger: Ledger | None = None,
                **study) -> SensitivityReport:
    """δT/δL and δT/δG per resource, normalised (SAAKE §3.3); per kernel and per hot loop
    (`sensitivity_study`), its runs shared by `processes` processes; the result does not depend on it."""
    return sensitivity_study(ctx, kernel, ledger=ledger, **study).run(processes, ledger)


def sensitivity_study(ctx: AnalysisContext, kernel: FunctionProgram, *, settings: EmulationSettings | None = None, hot_loop_share: float = 0.1,
                      prepared: Prepared | None = None, tail_scaled_share: float = TAIL_SCALED_SHARE,
                      gap_min_utilization: float = GAP_MIN_UTILIZATION, resources: int | None = None,
                      ledger: Ledger | None = None, cache: WaveCache | None = None) -> Study:
    """The sensitivity study of SAAKE §3.3, its base run done.

    Each resource's latency, then its gap, is scaled by (1 + perturbation) in its own emulation
    (one job each). A loop's sensitivity is the relative change of the samples on its
    instructions. `resources` limits the study to that many of the busiest units (a budget cut);
    `ledger` is charged. `cache` holds the kernel's waves run so far (the quick stage's).
    """
    st = settings or SENSITIVITY_SETTINGS
    prep = prepared or prepare(ctx, kernel, settings=st)
    d = prep.settings.perturbation
    k = prep.decoded
    cache = {} if cache is None else cache  # a tail wave of the full wave's shape runs once per machine

    def loop_samples(waves: list[tuple[Wave, float]]) -> list[float]:
        return [sum(weight * sum(sum(wave.sampler.samples[s]) for s in L.body) for wave, weight in waves)
                for L in k.loops]

    base_pred, base_waves = predict_waves(prep, cache=cache, ledger=ledger)
    base_T, base_loops = base_pred.cycles, loop_samples(base_waves)
    # A short tail after many full waves changes by the same fraction as a full wave: perturbed
    # runs emulate the full wave only and scale the base tail by its ratio (error in benchmarks/).
    full_w = base_waves[0] if base_pred.full_waves else None
    tail_w = base_waves[-1] if base_pred.tail_blocks_per_sm else None
    scale_tail = (full_w is not None and tail_w is not None and tail_w[0] is not full_w[0]
                  and tail_w[0].run.cycles < tail_scaled_share * base_T)

    total_samples = sum(weight * base_waves_i.sampler.total for base_waves_i, weight in base_waves) or 1.0
    # a perturbed run's per-loop samples serve only the hot loops' entries: without one (a kernel
    # with no loop, or none hot), its runs split no stall by reason, which leaves their time as it
    # is (`run_wave`) at a sixth less cost
    hot_loops = [i for i in range(len(k.loops)) if base_loops[i] / total_samples >= hot_loop_share]
    hot = bool(hot_loops)

    def measure(machine: MachineModel) -> tuple[float, list[float]]:
        if not scale_tail:
            pred, waves = predict_waves(prep, machine, cache=cache, ledger=ledger, samples=hot)
            return pred.cycles, loop_samples(waves) if hot else []
        wave = run_wave(prep, full_w[0].blocks_per_sm, full_w[0].active_sms, machine, cache=cache, ledger=ledger,
                        samples=hot, rounds=full_w[0].run.rounds)
        new_T, old_T = (steady_cycles(r, base_pred.full_waves) for r in (wave.run, full_w[0].run))
        ratio = new_T / old_T if old_T else 1.0
        if not hot:
            return new_T + tail_w[0].run.cycles * ratio, []
        new_full, old_full = loop_samples([(wave, full_w[1])]), loop_samples([full_w])
        tail = loop_samples([tail_w])
        per_loop = [n + t * (n / o if o else 1.0) for n, o, t in zip(new_full, old_full, tail)]
        return new_T + tail_w[0].run.cycles * ratio, per_loop

    used = _used_resources(prep, base_waves[0][0])
    util = base_waves[0][0].util.utilization
    if resources is not None and len(used) > resources:
        busiest = set(sorted(used, key=lambda r: -util.get(r, 0.0))[:resources])
        used = [r for r in used if r in busiest]
    # +d·G on a unit busy a fraction u of the time adds at most d·u·T: (ΔT/T)/d ≤ u, so a nearly
    # idle unit's gap term is reported as 0 without its run
    gapped = [r for r in used if util.get(r, 0.0) >= gap_min_utilization]
    machines = ([prep.machine.with_param(r, latency_scale=1 + d) for r in used]
                + [prep.machine.with_param(r, gap_scale=1 + d) for r in gapped])

    def rel(new: float, old: float) -> float:
        return (new - old) / old / d if old > 0 else 0.0

    def finish(measured: list[tuple[float, list[float]]]) -> SensitivityReport:
        lat_T = dict(zip(used, measured))
        gap_T = {r: (base_T, base_loops) for r in used} | dict(zip(gapped, measured[len(used):]))
        kernel_entries = [ResourceSensitivity(resource=r, latency=rel(lat_T[r][0], base_T),
                                              gap=rel(gap_T[r][0], base_T)) for r in used]
        loops = []
        for i in hot_loops:
            L, share = k.loops[i], base_loops[i] / total_samples
            entries = [ResourceSensitivity(resource=r, latency=rel(lat_T[r][1][i], base_loops[i]),
                                           gap=rel(gap_T[r][1][i], base_loops[i])) for r in used]
            loops.append(_region(f"loop@line {L.line}", i, L.line, share, entries))
        return SensitivityReport(kernel=prep.kernel.mangled, base_seconds=base_pred.seconds, perturbation=d,
                                 kernel_region=_region("kernel", None, None, 1.0, kernel_entries), loops=tuple(loops))

    return Study([partial(measure, m) for m in machines], finish)


# ---- what-if (SAAKE §5; roofline scaling trajectories) -------------------------------------------


class BlockSizePoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    block_size: int
    grid: int
    active_blocks_per_sm: int
    occupancy: float
    limiter: str
    seconds: float
    waves: float


class ScalingPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    sms: int
    seconds: float
    flops_per_s: float
    intensity: float | None  # FLOP per DRAM byte
    waves: float


class GridPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    blocks: int
    seconds: float
    blocks_per_s: float  # throughput of work (same work per block)


class StagedLoop(BaseModel):
    """A hot loop re-modeled with its global loads served from shared memory (`staging.py`)."""

    model_config = ConfigDict(frozen=True)

    line: int  # the loop's source line
    loads: int  # global load instructions staged
    seconds: float


class WhatIfReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernel: str
    current_block_size: int
    current_seconds: float
    current_waves: float
    block_sizes: tuple[BlockSizePoint, ...]
    best_block_size: int | None
    sm_scaling: tuple[ScalingPoint, ...]
    grid_scaling: tuple[GridPoint, ...]
    #: why the block-size sweep is empty when it is (e.g. the kernel indexes a 2-D block)
    block_sizes_note: str | None = None
    #: hot loops with global loads, re-modeled as if those loads were from shared memory (tiling's ceiling)
    staged_loops: tuple[StagedLoop, ...] = ()

    @property
    def more_blocks_help(self) -> bool:
        """More blocks of the same work finish proportionally sooner per block: the GPU is not full."""
        if len(self.grid_scaling) < 2:
            return False
        return self.grid_scaling[-1].blocks_per_s > 1.2 * self.grid_scaling[0].blocks_per_s


def block_size_sweep(arch: ArchSpec, current: int) -> tuple[int, ...]:
    """Powers of two from one warp to the largest block, plus the current size."""
    sizes = {current} if arch.warp_size <= current <= arch.max_threads_per_block else set()
    bs = arch.warp_size
    while bs <= arch.max_threads_per_block:
        sizes.add(bs)
        bs *= 2
    return tuple(sorted(sizes))


def sm_count_sweep(sm_count: int) -> tuple[int, ...]:
    """1, 2, 4, …, and all SMs: the points of the roofline scaling trajectory."""
    return tuple(sorted({*(2 ** i for i in range(int(math.log2(sm_count)) + 1)), sm_count}))


GRID_MULTIPLIERS = (1, 2, 4)


def what_if(ctx: AnalysisContext, kernel: FunctionProgram, *, processes: int = 1, ledger: Ledger | None = None,
            **study) -> WhatIfReport:
    """Predicted time for other block sizes, SM counts and grids (`what_if_study`), its runs
    shared by `processes` processes; the result does not depend on it."""
    return what_if_study(ctx, kernel, ledger=ledger, **study).run(processes, ledger)


def what_if_study(ctx: AnalysisContext, kernel: FunctionProgram, *, settings: EmulationSettings | None = None, block_sizes: tuple[int, ...] | None = None,
                  sm_counts: tuple[int, ...] | None = None, prepared: Prepared | None = None,
                  grid_multipliers: tuple[int, ...] = GRID_MULTIPLIERS, ledger: Ledger | None = None,
                  cache: WaveCache | None = None) -> Study:
    """The what-if study of SAAKE §5, §7 (block sizes of the same total threads, SM counts,
    grids), its base run done.

    Block sizes are swept only for a 1-D block: a kernel that indexes threadIdx.y (a 2-D block)
    has its work laid out for that shape, and a 1-D block of the same size would compute
    something else. Each point is a job; the points share the base run's wave cache, so the
    SM-count and grid points that repeat a wave's shape reuse it.
    """
    st = settings or WHAT_IF_SETTINGS
    base = prepared or prepare(ctx, kernel, settings=st)
    st = base.settings
    cache = {} if cache is None else cache
    base_pred, base_waves = predict_waves(base, cache=cache, ledger=ledger)
    total_threads = base.launch.blocks * base.launch.threads_per_block
    note = None
    if base.launch.block[1:] != (1, 1):
        note = (f"block {base.launch.block[0]}×{base.launch.block[1]}×{base.launch.block[2]} is 2-D: the kernel's "
                f"indexing is laid out for this shape, so 1-D block sizes are not compared")
        sizes: tuple[int, ...] = ()
    else:
        sizes = block_sizes or block_size_sweep(ctx.arch, base.launch.threads_per_block)

    def block_point(bs: int) -> BlockSizePoint | None:
        grid = max(1, math.ceil(total_threads / bs))
        if bs == base.launch.threads_per_block:
            prep, grid = base, base.launch.blocks
        else:
            launch = LaunchConfig(grid=(grid, 1, 1), block=(bs, 1, 1), dynamic_smem=base.launch.dynamic_smem)
            try:
                prep = prepare(ctx, kernel, launch=launch, settings=st)
            except EmulationError:
                return None
        pred, _ = predict_waves(prep, cache=cache, ledger=ledger, samples=False)
        return BlockSizePoint(block_size=bs, grid=grid, active_blocks_per_sm=prep.occ.active_blocks_per_sm,
                              occupancy=prep.occ.occupancy, limiter=prep.occ.limiter.value,
                              seconds=pred.seconds, waves=pred.waves)

    # SM-count trajectory: the same launch on 1..all SMs
    counts = sm_counts or sm_count_sweep(ctx.device.sm_count)
    ref = base_waves[0][0]
    warps_total = base.launch.blocks * math.ceil(base.launch.threads_per_block / ctx.arch.warp_size)
    # the roofline's operations: floating-point work, or integer ops where there is none (roofline.py)
    ops = sum(v for p, v in ref.traffic.flops.items() if p != "int") or ref.traffic.flops.get("int", 0.0)
    flops = ops / ref.run.warp_runs * warps_total
    dram = launch_bytes(base, ref)["dram"]  # what the profile and its trajectory count

    def scaling_point(sms: int) -> ScalingPoint:
        pred, _ = predict_waves(base, sm_count=sms, cache=cache, ledger=ledger, samples=False)
        return ScalingPoint(sms=sms, seconds=pred.seconds, flops_per_s=flops / pred.seconds if pred.seconds else 0.0,
                            intensity=flops / dram if dram else None, waves=pred.waves)

    # grid scaling: the same per-block work with more blocks
    def grid_point(mult: int) -> GridPoint:
        blocks = base.launch.blocks * mult
        if mult == 1:
            pred = base_pred
        else:
            launch = LaunchConfig(grid=(base.launch.grid[0] * mult, *base.launch.grid[1:]), block=base.launch.block,
                                  dynamic_smem=base.launch.dynamic_smem)
            prep = prepare(ctx, kernel, launch=launch, settings=st)
            # keep each thread's work: loop trips as in the base launch (on a copy: prepared
            # launches are shared, `prepare`)
            decoded = copy.copy(prep.decoded)
            decoded.loops = list(base.decoded.loops)
            prep = replace(prep, decoded=decoded)
            pred, _ = predict_waves(prep, cache=cache, ledger=ledger, samples=False)
        return GridPoint(blocks=blocks, seconds=pred.seconds, blocks_per_s=blocks / pred.seconds)

    staged_jobs = _staged_loop_jobs(base, base_waves, ledger)
    jobs = ([partial(block_point, bs) for bs in sizes] + [partial(scaling_point, c) for c in counts]
            + [partial(grid_point, m) for m in grid_multipliers] + staged_jobs)

    def finish(out: list) -> WhatIfReport:
        points = [p for p in out[:len(sizes)] if p is not None]
        scaling = out[len(sizes):len(sizes) + len(counts)]
        grid_pts = out[len(sizes) + len(counts):len(jobs) - len(staged_jobs)]
        staged = tuple(sorted(out[len(jobs) - len(staged_jobs):], key=lambda x: x.line))
        best = min(points, key=lambda p: p.seconds).block_size if points else None
        return WhatIfReport(kernel=base.kernel.mangled, current_block_size=base.launch.threads_per_block,
                            current_seconds=base_pred.seconds, current_waves=base_pred.waves,
                            block_sizes=tuple(points), best_block_size=best, sm_scaling=tuple(scaling),
                            grid_scaling=tuple(grid_pts), block_sizes_note=note, staged_loops=staged)

    return Study(jobs, finish)


#: loops below this share of the kernel's samples are not re-modeled for tiling
STAGED_LOOP_SHARE = 0.1
#: at most this many loops per kernel (the hottest), each one more emulation
STAGED_LOOPS_MAX = 2


def _staged_loop_jobs(base: Prepared, base_waves: list[tuple[Wave, float]], ledger: Ledger | None) -> list:
    """Tiling's modeled ceiling per hot loop that loads from global memory (`staging.py`), one
    job per loop re-modeled.

    Only outermost such loops: staging an outer loop's loads stages its inner loops' too."""
    k = base.decoded
    total = sum(w * wave.sampler.total for wave, w in base_waves) or 1.0
    cands = []
    for L in k.loops:
        slots = staging.staged_loads(k, L)
        if L.line is None or not slots:
            continue
        share = sum(w * sum(sum(wave.sampler.samples[s]) for s in L.body) for wave, w in base_waves) / total
        if share >= STAGED_LOOP_SHARE:
            cands.append((share, L, slots))
    outer = [c for c in cands if not any(o[1] is not c[1] and c[1].body < o[1].body for o in cands)]

    def staged(line: int, slots) -> StagedLoop:
        pred, _ = predict_waves(replace(base, decoded=staging.stage_in_shared(k, slots)), ledger=ledger,
                                samples=False)
        return StagedLoop(line=line, loads=len(slots), seconds=pred.seconds)

    return [partial(staged, L.line, slots) for _, L, slots in sorted(outer, key=lambda c: -c[0])[:STAGED_LOOPS_MAX]]


__all__ = ["emulate", "emulate_detailed", "sensitivity", "what_if", "sensitivity_study", "what_if_study", "Study",
           "run_studies", "prepare", "EmulationSettings", "Emulation",
           "Prediction", "SensitivityReport", "RegionSensitivity", "ResourceSensitivity", "WhatIfReport",
           "BlockSizePoint", "ScalingPoint", "GridPoint", "StagedLoop", "EmulationError", "StallReason"]
