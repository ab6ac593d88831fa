"""The stages after the compile, for one file: program, static facts, modeled (or measured)
profiles, the second stage, advice, and the `AnalysisResult` (`pipeline.analyze` calls
`model_file`).

A module of its own so that its imports (the emulator, the advisor, the source model: about
half of the command line's start-up) load on a thread while nvcc compiles (`pipeline.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from .advisor import blame
from .advisor.call_sites import call_sites
from .advisor.ranking import advise, what_if_reads
from .advisor.static_facts import KernelFacts, executed_shapes, kernel_facts
from .emulator.budget import (SMALLEST_SECOND_STAGE, BudgetSpent, FileSize, Ledger, StudyShape, plan_second_stage,
                              quick_run_budget, run_cap)
from .context import AnalysisContext
from .emulator.caches import fetched_bytes
from .emulator.launch import assumed_launch_note
from .emulator.model import (DEFAULT_SETTINGS, SENSITIVITY_SETTINGS, WHAT_IF_SETTINGS, EmulationError, WaveCache,
                             Prepared, SensitivityReport, WhatIfReport, prepare, profile_of, run_studies,
                             sensitivity_study, study_shape, what_if_study)
from .emulator.workers import available_cores
from .files import read_regular, regular_size
from .frontend.compile import CompileResult, local_headers
from .frontend.inclusion import restricted_to_file, with_context
from .frontend.kernel_names import without_parameters
from .frontend.program import FunctionProgram, Program, build_program
from .frontend.resources import Resources
from .frontend.source import parse_source
from .machine.occupancy import Occupancy, occupancy
from .machine.roofline import TrajectoryPoint, kernel_roofline, roofline_model, trajectory_points
from .process import CancelToken
from .profile import Assumption, KernelProfile, LaunchConfig, Profile
from .results import AnalysisResult, KernelReport, MemoryLevel, MemoryReport, Message, OccupancyReport

#: default processes of the second stage: beyond a few, the fork and the base run dominate
MAX_PROCESSES = 4


def model_file(ctx: AnalysisContext, compiled: CompileResult, messages: list[Message], base: dict,
               timings: dict[str, float], cancel: CancelToken, report, depth: Literal["quick", "full"],
               on_partial, taken: QuickStage | None = None) -> AnalysisResult:
    """`pipeline.analyze` once the file compiled and its SASS is read into `ctx.inputs` (see there).
    `taken` is the quick stage run on NVRTC's cubin while nvcc compiled, on the same inputs."""
    with blame.memoised():  # the full result's advice blames the quick result's profiles again
        return _model_file(ctx, compiled, messages, base, timings, cancel, report, depth, on_partial, taken)


def _model_file(ctx: AnalysisContext, compiled: CompileResult, messages: list[Message], base: dict,
                timings: dict[str, float], cancel: CancelToken, report, depth: Literal["quick", "full"],
                on_partial, taken: QuickStage | None) -> AnalysisResult:
    options, source = ctx.options, ctx.path
    t = time.perf_counter()
    measured = _measured_profile(ctx.measured_report, source) if ctx.measured_report else None
    # one budget for the quick stage and the second, proportional to nvcc's time on the file (docs/emulator.md)
    ledger = Ledger.start(options.budget, cancel)
    ledger.fit(options.budget, FileSize.of(ctx.inputs.module, ctx.data))
    if taken is not None:
        program, facts, studies = taken.program, taken.facts, taken.studies
        ctx = ctx.with_program(program)
        ledger.kernels = len(taken.program.kernels)
        ledger.charge_quick_stage(taken.spent, taken.runs, sum(s.modeled is not None for s in taken.studies.values()),
                                  sum(s.prepared.walk_steps for s in taken.studies.values() if s.prepared is not None))
        timings["program"] = 0.0
        timings["model_ahead"] = taken.seconds
    else:
        program = program_of(ctx)
        ctx = ctx.with_program(program)
        timings["program"] = time.perf_counter() - t
        cancel.check()
        report("model", 0.6)
        t = time.perf_counter()
        facts, studies = model_kernels(ctx, measured, ledger, cancel, report)
        timings["model"] = time.perf_counter() - t
    # a kernel modeled with a default launch says so where it is defined, with how to give the real one
    messages = messages + [Message(file=str(source), line=fn.source_line, column=None, severity="info", message=note,
                                   source="kernelscope")
                           for fn in program.kernels if not studies[fn.mangled].measured
                           and (note := assumed_launch_note(fn.name, studies[fn.mangled].assumptions))]
    common = dict(base, compiled=True, device_only=compiled.device_only, messages=tuple(messages))
    if not program.kernels:
        common["messages"] += (Message.note(source, "no kernels (__global__ functions) in this file"),)
    t = time.perf_counter()
    found = taken.findings if taken is not None else findings(ctx, facts, studies, measured)
    timings["advise"] = time.perf_counter() - t
    result = AnalysisResult(**common, **found, timings=dict(timings), depth="quick")
    if depth == "quick" or not any(s.profile is not None and s.measured is False for s in studies.values()):
        return result.model_copy(update={"depth": "full"}) if depth == "full" else result
    if on_partial is not None:
        on_partial(result)
    # the advice's cost grows with the kernels (GPA's slices): charged before the second stage is
    # planned, from the quick result's blame (made by its advice; a quick stage run ahead counted its
    # own, on another thread, outside this analysis's memo: blaming again here only to charge it was
    # work thrown away wherever no kernel then got a second stage)
    ledger.sliced = taken.sliced if taken is not None else slice_steps(program, studies)

    # Sensitivity and what-if re-emulate the kernel tens of times: they come second, so an editor
    # can show the quick result first (SAAKE §3.3, §5).
    t = time.perf_counter()
    for n, fn in enumerate(program.kernels):
        cancel.check()
        report(f"sensitivity {without_parameters(fn.name)}", 0.7 + 0.3 * n / max(1, len(program.kernels)))
        studies[fn.mangled] = _deepen(ctx, fn, studies[fn.mangled], ledger, len(program.kernels) - n)
    timings["sensitivity"] = time.perf_counter() - t
    t = time.perf_counter()
    # the advice reads the studies' sensitivity and what-if: where the budget left every kernel
    # without them (a file of many kernels), it is the quick result's, not made again
    deepened = any(s.sensitivity is not None or s.what_if is not None for s in studies.values())
    found = findings(ctx, facts, studies, measured, advice=None if deepened else found["advice"])
    timings["advise"] += time.perf_counter() - t  # the quick result's advice and the full one's
    return AnalysisResult(**common, **found, timings=timings, depth="full")


@dataclass(frozen=True)
class QuickStage:
    """The quick stage's work on one `ProgramInputs` (what `speculation.py` runs ahead of nvcc)."""

    program: Program
    facts: dict[str, KernelFacts]
    studies: dict[str, _Study]
    findings: dict  # `findings` of the quick stage
    spent: int  # the ledger's charges (`Ledger.spent`, `Ledger.runs`) for the quick runs
    runs: int
    sliced: int  # steps of its advice's backward slices (`slice_steps`), which the second stage's plan charges
    seconds: float  # from the start of the NVRTC compile to the end of the quick stage


def quick_stage(ctx: AnalysisContext, cancel: CancelToken, started: float) -> QuickStage:
    """The quick stage on `ctx.inputs` alone, with its own ledger fitted as `model_file`'s is (the
    run ahead of nvcc, `speculation.py`); `started`: when its compile began (`time.perf_counter`)."""
    options = ctx.options
    program = program_of(ctx)
    ctx = ctx.with_program(program)
    ledger = Ledger.start(options.budget, cancel)
    ledger.fit(options.budget, FileSize.of(ctx.inputs.module, ctx.data))
    with blame.memoised():  # the slices are counted from the advice's own blame, not made twice
        facts, studies = model_kernels(ctx, None, ledger, cancel, lambda stage, fraction: None)
        cancel.check()
        found = findings(ctx, facts, studies, None)
        sliced = slice_steps(program, studies)
    return QuickStage(program=program, facts=facts, studies=studies, findings=found, spent=ledger.spent,
                      runs=ledger.runs, sliced=sliced, seconds=time.perf_counter() - started)


def slice_steps(program: Program, studies: dict[str, _Study]) -> int:
    """The steps of the backward slices of the blame the advice makes of each profile (GPA §IV;
    `blame.BlameResult.slice_steps`), a function of the program and the profiles alone: within
    `blame.memoised()` after the advice, a look-up."""
    return sum(blame.blame(fn, s.profile).slice_steps for fn in program.kernels
               if (s := studies[fn.mangled]).profile is not None)


def program_of(ctx: AnalysisContext) -> Program:
    """The program of `ctx.inputs`, its source model read in the file's translation unit."""
    source, unit, options, toolchain, inputs = ctx.path, ctx.unit, ctx.options, ctx.toolchain, ctx.inputs
    # the project headers the unit includes (the compile's -I paths): their #defines and constants
    # fold the file's launches as nvcc sees them
    headers = tuple(read_regular(h).decode(errors="replace") for h in local_headers(unit, options.flags, toolchain)
                    if h != source.resolve() and regular_size(h) is not None)
    src = with_context(parse_source(ctx.text, inputs.passes, headers), source, unit, options.flags, toolchain,
                       inputs.passes)
    program = build_program(inputs.module, src, str(source), inputs.resources)
    return restricted_to_file(program) if unit != source else program


def model_kernels(ctx: AnalysisContext, measured: Profile | None, ledger: Ledger, cancel: CancelToken,
                  report) -> tuple[dict[str, KernelFacts], dict[str, _Study]]:
    """The quick stage's facts and study of each kernel of `ctx.program` (one emulation each)."""
    program = ctx.program
    facts: dict[str, KernelFacts] = {}
    studies: dict[str, _Study] = {}
    ledger.kernels = len(program.kernels)  # every kernel's facts and advice, emulated or not (STATIC_COST)
    for n, fn in enumerate(program.kernels):
        cancel.check()
        report(f"model {without_parameters(fn.name)}", 0.6 + 0.1 * n / max(1, len(program.kernels)))
        studies[fn.mangled] = study = _study(ctx, fn, measured, ledger, len(program.kernels) - n)
        # Memory-access facts depend on which threads share a warp: the (measured or resolved) block.
        facts[fn.mangled] = kernel_facts(program, fn, ctx.arch, ctx.options.default_trip_count,
                                         block=study.launch.block, values=ctx.launches[fn.mangled].values,
                                         executed=_executed(ctx, fn, study))
    return facts, studies


def _executed(ctx: AnalysisContext, fn: FunctionProgram, study: _Study) -> dict:
    """The memory shapes the quick stage's walked warp gave (static_facts.executed_shapes)."""
    if study.modeled is None:
        return {}
    if study.prepared is not None:
        return executed_shapes(study.prepared)
    try:
        return executed_shapes(prepare(ctx, fn, launch=study.launch if study.measured else None))
    except EmulationError:
        return {}


def findings(ctx: AnalysisContext, facts: dict[str, KernelFacts], studies: dict[str, _Study],
             measured: Profile | None, advice: tuple | None = None) -> dict:
    """What a result says of the file's kernels, as `AnalysisResult` fields: their reports, the
    advice (`advice`: already made from the same profiles, facts and studies), the profile and
    the rooflines."""
    program, arch, device = ctx.program, ctx.arch, ctx.device
    roofline = roofline_model(ctx.catalog, device)
    profiles = tuple(s.profile for s in studies.values() if s.profile is not None)
    rooflines = {m: kernel_roofline(s.profile, roofline, s.trajectory) for m, s in studies.items() if s.profile}
    if advice is None:
        advice = advise(ctx, profiles, facts={m: f.facts for m, f in facts.items()}, roofline_model=roofline,
                        sensitivity={m: s.sensitivity for m, s in studies.items() if s.sensitivity},
                        what_if={m: s.what_if for m, s in studies.items() if s.what_if},
                        memory={m: f.memory for m, f in facts.items()})
    kernels = tuple(_kernel_report(program, fn, facts[fn.mangled], studies[fn.mangled], rooflines.get(fn.mangled),
                                   device.sm_count) for fn in program.kernels)
    profile = None
    if profiles:
        # A report that matched none of this file's kernels leaves every number modeled: say so.
        used = measured is not None and any(s.measured for s in studies.values())
        profile = Profile(kernels=profiles, provenance=measured.provenance if used else profiles[0].provenance)
    return dict(kernels=kernels, advice=advice, profile=profile, rooflines=tuple(rooflines.values()))


@dataclass(frozen=True)
class _Study:
    """What the model (or a measurement) says about one kernel."""

    launch: LaunchConfig
    occupancy: Occupancy
    profile: KernelProfile | None
    sensitivity: SensitivityReport | None
    trajectory: tuple[TrajectoryPoint, ...]
    what_if: WhatIfReport | None
    assumptions: tuple[Assumption, ...]
    measured: bool = False
    modeled: KernelProfile | None = None  # the emulator's profile, also when `profile` is measured
    #: the engine runs made for this kernel so far, which the second stage's base runs may repeat
    waves: WaveCache | None = field(default=None, compare=False, repr=False)
    #: the quick stage's prepared launch, which the second stage starts from: `prepare`'s memo holds
    #: 64, so in a file of more kernels the second stage prepared (and walked) each launch again
    prepared: Prepared | None = field(default=None, compare=False, repr=False)


def _measured_profile(report_path: Path, source: Path) -> Profile:
    from .measure.ncu_report import load_ncu_report

    return load_ncu_report(report_path, source=source)


def _study(ctx: AnalysisContext, fn: FunctionProgram, measured: Profile | None, ledger: Ledger,
           kernels_left: int) -> _Study:
    options, resolved = ctx.options, ctx.launches[fn.mangled]
    measured_kernel = measured.kernel(fn.mangled) if measured else None
    # A measured launch is what really ran: occupancy, like the report, uses it over the source's.
    launch = measured_kernel.launch if measured_kernel is not None else resolved.launch
    occ = ctx.occupancy[fn.mangled]
    if measured_kernel is not None:
        regs = fn.resources.registers if fn.resources else 0
        smem = fn.resources.static_smem if fn.resources else 0
        occ = occupancy(ctx.arch, launch.threads_per_block, regs, launch.dynamic_smem, smem)
    modeled = None
    run_budget = quick_run_budget(ledger, kernels_left, DEFAULT_SETTINGS.issue_budget)
    if run_budget is None and options.emulate and occ.active_blocks_per_sm > 0:
        # the kernels before it in the file spent the budget (a file of many kernels)
        resolved = replace(resolved, assumptions=(*resolved.assumptions, Assumption(
            name="budget", value="not emulated", source="default",
            detail=f"no emulation: the file's {ledger.runs:,} engine runs before this kernel spent its budget of "
                   f"{ledger.issues:,} warp-instructions (about {options.budget.nvcc_multiple:g}x nvcc's time on "
                   f"the file; AnalysisOptions.budget)")))
    elif options.emulate and occ.active_blocks_per_sm > 0:
        # With a measurement too, the model still runs: hover shows both (the honesty check).
        launch_used = measured_kernel.launch if measured_kernel is not None else None
        waves: WaveCache = {}
        prepared = prepare(ctx, fn, launch=launch_used,
                           settings=DEFAULT_SETTINGS.model_copy(update={
                               "issue_budget": run_budget, "max_issues": run_cap(ledger),
                               # a reduced run does not pay for the second round of blocks either
                               "steady_rounds": run_budget >= DEFAULT_SETTINGS.issue_budget}))
        emulation = profile_of(prepared, cache=waves, cancel=ledger.cancel)
        ledger.charge_quick(emulation.issues, 1, prepared.walk_steps)
        modeled = emulation.profile
        if run_budget < DEFAULT_SETTINGS.issue_budget:
            modeled = _with_assumption(modeled, Assumption(
                name="budget", value="quick stage reduced", source="default",
                detail=f"runs of {run_budget:,} warp-instructions instead of {DEFAULT_SETTINGS.issue_budget:,}: "
                       f"fewer loop iterations sampled and a many-wave launch's waves run back to back, not "
                       f"overlapped (the file's kernels share AnalysisOptions.budget)"))
    if measured_kernel is not None:
        # the predicted time beside the measurement rests on the model's own inputs: a trip count
        # or argument it took from a default must show (learn-cuda-programming's sgemm was
        # predicted at 0.09x its H100 time on a default K, and said nothing); the launch is the
        # report's, so the model's launch notes are left out
        own = tuple(a for a in modeled.provenance.assumptions
                    if a.name not in _MEASURED_LAUNCH) if modeled is not None else ()
        return _Study(measured_kernel.launch, occ, measured_kernel, None, (), None,
                      (*measured_kernel.provenance.assumptions, *own), measured=True, modeled=modeled,
                      prepared=prepared if modeled is not None else None)
    if modeled is None:
        return _Study(launch, occ, None, None, (), None, resolved.assumptions)
    return _Study(launch, occ, modeled, None, (), None, modeled.provenance.assumptions, modeled=modeled, waves=waves,
                  prepared=prepared)


#: what a report's launch gives (the model then emulates that launch, noted as a what-if)
_MEASURED_LAUNCH = frozenset({"grid", "block", "dynamic_smem", "launches"})


def _with_assumption(profile: KernelProfile, a: Assumption) -> KernelProfile:
    prov = profile.provenance
    return profile.model_copy(update={"provenance": prov.model_copy(update={"assumptions": (*prov.assumptions, a)})})


def read_study_shape(ctx: AnalysisContext, fn: FunctionProgram, base: Prepared, profile: KernelProfile) -> StudyShape:
    """What the kernel's second stage would run (`study_shape`), its what-if sweeps narrowed to the
    points the advice may read (`what_if_reads`, from the quick stage's `profile`)."""
    shape = study_shape(base)
    reads = what_if_reads(ctx, fn, profile)
    if reads is not None and shape.block_sizes:
        # of the block-size sweep, the sizes the advice may read (and the current one, the base run
        # again): a point no optimizer reads changes no advice and is shown nowhere
        shape = replace(shape, block_sizes=tuple(sorted({shape.current_block} | (set(shape.block_sizes)
                                                                                  & reads.block_sizes))))
    if reads is not None and not reads.grid_scaling:
        shape = replace(shape, grid_multipliers=shape.grid_multipliers[:1])  # the base grid: the base run
    return shape


def _deepen(ctx: AnalysisContext, fn: FunctionProgram, study: _Study, ledger: Ledger, kernels_left: int) -> _Study:
    """Sensitivity and what-if for one kernel, planned to fit its share of what is left of the
    budget (budget.plan_second_stage); what had to be cut becomes an assumption."""
    if study.profile is None or study.measured:
        return replace(study, prepared=None)
    if any(a.name == "emulation" and a.value == "truncated" for a in study.assumptions):
        # the quick run hit the engine's guard (a loop the model cannot end): every perturbed run
        # would too, at ten times its plan, to move a time that is only a lower bound
        return replace(study, waves=None, prepared=None, assumptions=(*study.assumptions, Assumption(
            name="budget", value="second stage skipped", source="default",
            detail="no sensitivity or what-if: the quick run was truncated, so its time is a lower bound")))
    allowance = ledger.second_stage_allowance(kernels_left)
    if allowance < SMALLEST_SECOND_STAGE:
        # what the plan would say, without preparing the launch again (a file of many kernels:
        # the quick stage's prepared launches are no longer in the memo)
        return replace(study, waves=None, prepared=None, assumptions=(*study.assumptions, Assumption(
            name="budget", value="second stage reduced", source="default",
            detail=f"no second stage (sensitivity, what-if): its smallest form needs at least "
                   f"{SMALLEST_SECOND_STAGE:,.0f} warp-instructions and {allowance:,.0f} were left for this kernel "
                   f"(AnalysisOptions.budget)")))
    try:
        # what `prepare`'s memo gives for these settings (it ignores the issue budgets), without the memo
        # and the quick run's steady state: two rounds of blocks, or waves back to back where its budget was cut
        base_st = SENSITIVITY_SETTINGS.model_copy(update={
            "steady_rounds": study.prepared.settings.steady_rounds if study.prepared is not None else True})
        base = (replace(study.prepared, settings=base_st) if study.prepared is not None
                else prepare(ctx, fn, settings=base_st))
    except EmulationError:
        return replace(study, prepared=None)
    shape = read_study_shape(ctx, fn, base, study.profile)
    plan = plan_second_stage(shape, allowance, SENSITIVITY_SETTINGS.issue_budget, WHAT_IF_SETTINGS.issue_budget)
    ledger.charge_prepares(plan.prepares)
    sens = wi = None
    stopped = ""
    options = ctx.options
    processes = options.budget.processes or min(MAX_PROCESSES, available_cores())
    try:
        sens_study = wi_study = None
        if plan.sensitivity_run_budget is not None:
            st = SENSITIVITY_SETTINGS.model_copy(update={"issue_budget": plan.sensitivity_run_budget,
                                                         "steady_rounds": base.settings.steady_rounds})
            sens_study = sensitivity_study(ctx, fn, settings=st, prepared=replace(base, settings=st),
                                           resources=plan.sensitivity_resources, ledger=ledger, cache=study.waves)
        if plan.what_if_run_budget is not None:
            st = WHAT_IF_SETTINGS.model_copy(update={"issue_budget": plan.what_if_run_budget,
                                                     "steady_rounds": base.settings.steady_rounds})
            wi_study = what_if_study(ctx, fn, settings=st, prepared=replace(base, settings=st),
                                     block_sizes=plan.block_sizes or shape.block_sizes or None,
                                     sm_counts=plan.sm_counts, grid_multipliers=plan.grid_multipliers, ledger=ledger,
                                     cache=study.waves)
        sens, wi = run_studies([sens_study, wi_study], processes, ledger, here=not options.budget.workers_only)
    except BudgetSpent as e:
        stopped = f"stopped: {e}"
    # the why (what the whole study needs, what was left) explains the plan's cuts, not a stop
    cuts = ["; ".join(plan.cuts) + (f": {plan.why}" if plan.why else "")] if plan.cuts else []
    cuts += [stopped] if stopped else []
    assumptions = study.assumptions
    if cuts:
        assumptions += (Assumption(name="budget", value="second stage reduced", source="default",
                                   detail="; ".join(cuts) + " (AnalysisOptions.budget)"),)
    # The SM-count sweep is the roofline scaling trajectory (roofline-scaling-trajectories §3).
    per_sm = [(f"{p.sms} SMs", float(p.sms), dict(study.profile.flops), dict(study.profile.bytes), p.seconds)
              for p in (wi.sm_scaling if wi else ())]
    return replace(study, sensitivity=sens, what_if=wi, trajectory=trajectory_points(per_sm) if per_sm else (),
                   assumptions=assumptions, waves=None, prepared=None)


def memory_report(profile: KernelProfile | None, binding_level: str | None) -> MemoryReport | None:
    """Bytes and hit rate per level of a modeled profile: what L1 passed on is L2's traffic, what L2
    passed on is DRAM's (emulator/caches.py). The hit rates are the data accesses': the launch's
    code and constant fetch (`caches.fetched_bytes`) adds to L2's and DRAM's bytes alone. L2's counts
    a store's sector as a hit (it allocates; its write-back is DRAM traffic), as ncu does."""
    if profile is None or not profile.bytes:
        return None
    b = profile.bytes
    l1, l2, dram = b.get("l1", 0.0), b.get("l2", 0.0), b.get("dram", 0.0)
    fetched = fetched_bytes(profile.provenance.assumptions)
    data_l2 = l2 - fetched
    # L2's rate is the emulation's, as ncu counts it (`TrafficCounter.hit_rates`: stores hit); none
    # where no global access reached L2
    levels = {"l1": MemoryLevel(bytes=l1, hit_rate=max(0.0, 1.0 - data_l2 / l1) if l1 > 0 else None),
              "l2": MemoryLevel(bytes=l2, hit_rate=profile.hit_rates.get("l2")),
              "dram": MemoryLevel(bytes=dram)}
    if "shared" in b:
        levels["shared"] = MemoryLevel(bytes=b["shared"])
    return MemoryReport(levels=levels, binding_level=binding_level)


def _kernel_report(program: Program, fn: FunctionProgram, facts: KernelFacts, study: _Study, roofline,
                   sm_count: int) -> KernelReport:
    occ = study.occupancy
    per_wave = occ.active_blocks_per_sm * sm_count
    waves = study.launch.blocks / per_wave if study.launch is not None and per_wave > 0 else None
    profile = study.profile
    lines = facts.lines
    if profile is not None:
        total = profile.total_samples or 1.0
        sampled = {ls.line: ls for ls in profile.lines}
        modeled_total = (study.modeled.total_samples or 1.0) if study.measured and study.modeled else None
        modeled = {ls.line: ls for ls in study.modeled.lines} if modeled_total else {}
        below: dict[int, float] = {}  # line -> samples in the functions its calls reach
        for c in call_sites(program, fn, profile):
            loc = program.line_table.get((fn.mangled, c.pc))
            if loc is not None:
                below[loc[1]] = below.get(loc[1], 0.0) + c.total
        lines = tuple(lr.model_copy(update={
            "share": sampled[lr.line].total / total if lr.line in sampled else 0.0,
            "callee_share": below.get(lr.line, 0.0) / total,
            "samples": {r.value: v for r, v in sampled[lr.line].samples.items()} if lr.line in sampled else {},
            "modeled_share": (modeled[lr.line].total / modeled_total if lr.line in modeled else 0.0)
            if modeled_total else None,
        }) for lr in lines)
    sens = study.sensitivity
    return KernelReport(
        name=fn.name, mangled=fn.mangled, line=fn.source_line, end_line=fn.source_end_line,
        resources=fn.resources or Resources(registers=0), launch=study.launch,
        occupancy=OccupancyReport(block_size=occ.block_size, active_blocks_per_sm=occ.active_blocks_per_sm,
                                  active_warps_per_sm=occ.active_warps_per_sm, max_warps_per_sm=occ.max_warps_per_sm,
                                  occupancy=occ.occupancy, limiter=occ.limiter.value, waves=waves,
                                  sm_count=sm_count if waves is not None else None),
        instruction_mix=facts.instruction_mix, flops_per_thread=per_thread(profile, "flops"),
        bytes_per_thread=per_thread(profile, "bytes"), facts=facts.facts, lines=lines,
        bound=roofline.bound if roofline else None,
        bound_level=roofline.binding_level if roofline and roofline.bound == "memory" else None,
        bottleneck=f"{sens.bottleneck} {sens.bound}" if sens and sens.bottleneck else None,
        roofline_fraction=roofline.fraction if roofline else None,
        predicted_duration_s=study.modeled.duration_s if study.modeled else None,
        memory=memory_report(study.modeled, roofline.binding_level
                             if roofline is not None and roofline.provenance == "modeled" else None),
        measured_duration_s=profile.duration_s if profile is not None and study.measured else None,
        assumptions=study.assumptions,
    )


def per_thread(profile: KernelProfile | None, counts: Literal["flops", "bytes"]) -> dict[str, float]:
    """The profile's launch totals (FLOPs per precision, bytes per level) per thread of its launch:
    what the emulated run executed (or a report measured), so that per thread x threads is the
    profile's total and the roofline's point. Nothing ran without a profile: empty."""
    if profile is None:
        return {}
    threads = profile.launch.blocks * profile.launch.threads_per_block
    return {k: v / threads for k, v in getattr(profile, counts).items()} if threads else {}
