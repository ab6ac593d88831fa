"""The whole static pipeline for one file: compile -> program -> facts -> profile -> advice.

`analyze` is the single entry point the CLI and the language server call. Apart from running
the compiler it is a pure function of (file content, options, toolchain), so its result can be
cached under `AnalysisOptions.cache_key`.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal
from pathlib import Path

from .advisor.call_sites import call_sites
from .advisor.ranking import advise
from .emulator.budget import BudgetSpent, Ledger, plan_second_stage, quick_run_budget
from .emulator.workers import available_cores, fan_out
from .emulator.launch import ResolvedLaunch, assumed_launch_note, resolve_launch
from .frontend.compile import CompilerMessage, KernelResources, compile_cuda, local_headers
from .machine.arch import ArchSpec, DeviceSpec, load_arch_specs
from .emulator.model import (DEFAULT_SETTINGS, SENSITIVITY_SETTINGS, WHAT_IF_SETTINGS, EmulationError,
                             SensitivityReport, WhatIfReport, emulate_detailed, prepare, sensitivity_study,
                             study_shape, what_if_study)
from .advisor.static_facts import KernelFacts, kernel_facts
from .frontend.conditional import compile_passes
from .frontend.disassembly import read_sass
from .frontend.inclusion import compile_in_context, inclusion_context, is_header, restricted_to_file, with_context
from .frontend.program import FunctionProgram, Program, build_program
from .frontend.source import parse_source
from .frontend.toolchain import Toolchain, find_compile_command, locate_toolchain
from .machine.occupancy import Occupancy, occupancy
from .machine.roofline import TrajectoryPoint, kernel_roofline, roofline_model, trajectory_points
from .options import AnalysisOptions
from .process import CancelToken
from .profile import Assumption, KernelProfile, LaunchConfig, Profile
from .results import AnalysisResult, KernelReport, Message, OccupancyReport, Resources, ToolchainInfo

#: default processes of the second stage: beyond a few, the fork and the base run dominate
MAX_PROCESSES = 4

#: progress(stage, fraction) — fraction in 0..1 of the whole analysis
Progress = Callable[[str, float], None]


def source_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def input_digest(source: Path, options: AnalysisOptions, toolchain: Toolchain) -> str:
    """The content hash a cached result of `source` is valid for: the file and its local headers."""
    h = hashlib.sha256(source.read_bytes())
    # a header is analysed in the unit of a file that includes it (analysis/frontend/inclusion.py)
    context = inclusion_context(source, options.flags, toolchain, options.compile_commands) if is_header(source) else None
    unit = context.unit if context is not None else source
    for header in ((unit,) if unit != source else ()) + local_headers(unit, options.flags, toolchain):
        try:
            h.update(str(header).encode() + b"\0" + header.read_bytes())
        except OSError:
            h.update(str(header).encode() + b"\0missing")
    return h.hexdigest()


def resolve_toolchain(source: Path, options: AnalysisOptions) -> Toolchain:
    """The toolchain an analysis of `source` would use (the server keys its cache on its version)."""
    cc = find_compile_command(source, options.compile_commands) if options.compile_commands else None
    return locate_toolchain(options.nvcc_path, cc)


def _message(m: CompilerMessage) -> Message:
    origin = f"{m.origin_file}:{m.origin_line}" if m.origin_file and m.origin_line else m.origin_file
    source = "ptxas" if m.tool == "ptxas" else "nvcc"
    return Message(file=m.file, line=m.line, column=m.column, severity=m.severity, message=m.message,
                   source=source, origin=origin)


def _resources(r: KernelResources) -> Resources:
    return Resources(registers=r.registers, barriers=r.barriers, static_smem=r.shared_bytes,
                     constant_bytes=sum(r.constant_bytes.values()), stack_frame=r.stack_frame_bytes,
                     spill_stores=r.spill_store_bytes, spill_loads=r.spill_load_bytes, local_bytes=r.local_bytes)


def _note(path: Path, text: str, severity: str = "info") -> Message:
    return Message(file=str(path), line=None, column=None, severity=severity, message=text, source="kernelscope")


def analyze(source: Path, options: AnalysisOptions, *, cancel: CancelToken | None = None,
            progress: Progress | None = None, toolchain: Toolchain | None = None,
            measured_report: Path | None = None, depth: Literal["quick", "full"] = "full",
            on_partial: Callable[[AnalysisResult], None] | None = None) -> AnalysisResult:
    """Analyse the file on disk at `source` (editors analyse what was saved).

    `depth="quick"` stops after one emulation per kernel; "full" adds sensitivity and what-if
    (bottleneck resource, block-size and SM-count sweeps), calling `on_partial` with the quick
    result first so an editor can show it while the rest runs.

    Raises ToolchainError / CompileSetupError / ArchSpecError for setup problems (the caller
    shows their message); compiler errors in the file are results, not exceptions.
    """
    cancel = cancel or CancelToken()
    report = progress or (lambda stage, fraction: None)
    timings: dict[str, float] = {}
    source = source.resolve()
    data = source.read_bytes()
    digest = source_digest(data)
    catalog = load_arch_specs(options.arch_file)
    arch = catalog.arch(options.arch)
    device = catalog.device(options.device) if options.device else catalog.default_device(arch)
    toolchain = toolchain or resolve_toolchain(source, options)
    cc = find_compile_command(source, options.compile_commands) if options.compile_commands else None
    base = dict(source=str(source), source_sha256=digest, arch=options.arch, device=device.name, flags=options.flags,
                toolchain=ToolchainInfo(nvcc=str(toolchain.nvcc), nvdisasm=str(toolchain.nvdisasm),
                                        version=toolchain.version, origin=toolchain.origin))

    report("compile", 0.0)
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelscope-") as work:
        def compile_unit(unit: Path):
            unit_cc = cc if unit == source else (
                find_compile_command(unit, options.compile_commands) if options.compile_commands else None)
            return compile_cuda(unit, arch=options.arch, user_flags=options.flags, toolchain=toolchain,
                                compile_command=unit_cc, cancel=cancel, timeout=options.compile_timeout_s,
                                workdir=Path(work))

        compiled, context = compile_in_context(source, options.flags, toolchain, options.compile_commands,
                                               compile_unit)
        unit = context.unit if context is not None else source
        timings["compile"] = time.perf_counter() - t
        messages = [_message(m) for m in compiled.messages]
        if context is not None:
            messages.append(_note(source, f"analysed in the translation unit of {unit}, which includes this file"))
        if compiled.device_only:
            messages.append(_note(source, compiled.note, "warning"))
        if not compiled.success or compiled.cubin_path is None:
            return AnalysisResult(**base, compiled=False, messages=tuple(messages), timings=timings)
        cancel.check()
        report("disassemble", 0.5)
        t = time.perf_counter()
        module = read_sass(compiled.cubin, compiled.cubin_path, toolchain.nvdisasm, cancel=cancel)
        timings["disassemble"] = time.perf_counter() - t

    t = time.perf_counter()
    text = data.decode("utf-8", errors="replace")
    passes = compile_passes(compiled.command, options.arch, toolchain.version)
    src = with_context(parse_source(text, passes), source, unit, options.flags, toolchain, passes)
    program = build_program(module, src, str(source), {r.name: _resources(r) for r in compiled.resources})
    if context is not None:
        program = restricted_to_file(program)
    timings["program"] = time.perf_counter() - t
    cancel.check()

    report("model", 0.6)
    t = time.perf_counter()
    measured = _measured_profile(measured_report, source) if measured_report else None
    facts: dict[str, KernelFacts] = {}
    studies: dict[str, _Study] = {}
    ledger = Ledger.start(options.budget, cancel)  # one budget for the quick stage and the second (docs/emulator.md)
    for n, fn in enumerate(program.kernels):
        cancel.check()
        report(f"model {fn.name.split('(')[0]}", 0.6 + 0.1 * n / max(1, len(program.kernels)))
        resolved = resolve_launch(fn.name, program.source, options, device.sm_count)
        studies[fn.mangled] = study = _study(program, fn, arch, device, options, measured, resolved, ledger,
                                             len(program.kernels) - n)
        # Memory-access facts depend on which threads share a warp: the (measured or resolved) block.
        facts[fn.mangled] = kernel_facts(program, fn, arch, options.default_trip_count, block=study.launch.block,
                                         values=resolved.values)
    timings["model"] = time.perf_counter() - t
    # a kernel modeled with a default launch says so where it is defined, with how to give the real one
    messages += [Message(file=str(source), line=fn.source_line, column=None, severity="info", message=note,
                         source="kernelscope")
                 for fn in program.kernels if not studies[fn.mangled].measured
                 and (note := assumed_launch_note(fn.name, studies[fn.mangled].assumptions))]
    common = dict(base, compiled=True, device_only=compiled.device_only, messages=tuple(messages))
    if not program.kernels:
        common["messages"] += (_note(source, "no kernels (__global__ functions) in this file"),)
    result = _assemble(program, catalog, device, options, text, facts, studies, common, timings, measured, "quick")
    if depth == "quick" or not any(s.profile is not None and s.measured is False for s in studies.values()):
        return result.model_copy(update={"depth": "full"}) if depth == "full" else result
    if on_partial is not None:
        on_partial(result)

    # Sensitivity and what-if re-emulate the kernel tens of times: they come second, so an editor
    # can show the quick result first (SAAKE §3.3, §5).
    t = time.perf_counter()
    for n, fn in enumerate(program.kernels):
        cancel.check()
        report(f"sensitivity {fn.name.split('(')[0]}", 0.7 + 0.3 * n / max(1, len(program.kernels)))
        studies[fn.mangled] = _deepen(program, fn, arch, device, options, studies[fn.mangled], ledger,
                                      len(program.kernels) - n)
    timings["sensitivity"] = time.perf_counter() - t
    return _assemble(program, catalog, device, options, text, facts, studies, common, timings, measured, "full")


def _assemble(program: Program, catalog, device: DeviceSpec, options: AnalysisOptions, text: str,
              facts: dict[str, KernelFacts], studies: dict[str, _Study], common: dict, timings: dict[str, float],
              measured: Profile | None, depth: str) -> AnalysisResult:
    t = time.perf_counter()
    arch = catalog.arch(options.arch)
    roofline = roofline_model(catalog, device)
    profiles = tuple(s.profile for s in studies.values() if s.profile is not None)
    rooflines = {m: kernel_roofline(s.profile, roofline, s.trajectory) for m, s in studies.items() if s.profile}
    advice = advise(program, profiles, facts={m: f.facts for m, f in facts.items()}, source_text=text, arch=arch,
                    device=device, roofline_model=roofline,
                    sensitivity={m: s.sensitivity for m, s in studies.items() if s.sensitivity},
                    what_if={m: s.what_if for m, s in studies.items() if s.what_if})
    timings = {**timings, "advise": time.perf_counter() - t}
    kernels = tuple(_kernel_report(program, fn, facts[fn.mangled], studies[fn.mangled], rooflines.get(fn.mangled),
                                   device.sm_count) for fn in program.kernels)
    profile = None
    if profiles:
        # A report that matched none of this file's kernels leaves every number modeled: say so.
        used = measured is not None and any(s.measured for s in studies.values())
        profile = Profile(kernels=profiles, provenance=measured.provenance if used else profiles[0].provenance)
    return AnalysisResult(**common, kernels=kernels, advice=advice, profile=profile,
                          rooflines=tuple(rooflines.values()), timings=timings, depth=depth)


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


def _measured_profile(report_path: Path, source: Path) -> Profile:
    from .measure.ncu_report import load_ncu_report

    return load_ncu_report(report_path, source=source)


def _study(program: Program, fn: FunctionProgram, arch: ArchSpec, device: DeviceSpec, options: AnalysisOptions,
           measured: Profile | None, resolved: ResolvedLaunch, ledger: Ledger, kernels_left: int) -> _Study:
    measured_kernel = measured.kernel(fn.mangled) if measured else None
    # A measured launch is what really ran: occupancy, like the report, uses it over the source's.
    launch = measured_kernel.launch if measured_kernel is not None else resolved.launch
    regs = fn.resources.registers if fn.resources else 0
    smem = fn.resources.static_smem if fn.resources else 0
    occ = occupancy(arch, launch.threads_per_block, regs, launch.dynamic_smem, smem)
    modeled = None
    if options.emulate and occ.active_blocks_per_sm > 0:
        # With a measurement too, the model still runs: hover shows both (the honesty check).
        launch_used = measured_kernel.launch if measured_kernel is not None else None
        run_budget = quick_run_budget(ledger, kernels_left, DEFAULT_SETTINGS.issue_budget)
        emulation = emulate_detailed(program, fn, arch, device, options, program.source, launch=launch_used,
                                     settings=DEFAULT_SETTINGS.model_copy(update={"issue_budget": run_budget}))
        ledger.charge(emulation.issues)
        modeled = emulation.profile
        if run_budget < DEFAULT_SETTINGS.issue_budget:
            modeled = _with_assumption(modeled, Assumption(
                name="budget", value="quick stage reduced", source="default",
                detail=f"runs of {run_budget:,} warp-instructions instead of {DEFAULT_SETTINGS.issue_budget:,}: "
                       f"fewer loop iterations sampled (the file's kernels share AnalysisOptions.budget)"))
    if measured_kernel is not None:
        return _Study(measured_kernel.launch, occ, measured_kernel, None, (), None, measured_kernel.provenance.assumptions,
                      measured=True, modeled=modeled)
    if modeled is None:
        return _Study(launch, occ, None, None, (), None, resolved.assumptions)
    return _Study(launch, occ, modeled, None, (), None, modeled.provenance.assumptions, modeled=modeled)


def _with_assumption(profile: KernelProfile, a: Assumption) -> KernelProfile:
    prov = profile.provenance
    return profile.model_copy(update={"provenance": prov.model_copy(update={"assumptions": (*prov.assumptions, a)})})


def _deepen(program: Program, fn: FunctionProgram, arch: ArchSpec, device: DeviceSpec, options: AnalysisOptions,
            study: _Study, ledger: Ledger, kernels_left: int) -> _Study:
    """Sensitivity and what-if for one kernel, planned to fit its share of what is left of the
    budget (budget.plan_second_stage); what had to be cut becomes an assumption."""
    if study.profile is None or study.measured:
        return study
    try:
        base = prepare(fn, arch, device, options, program.source, program, settings=SENSITIVITY_SETTINGS)
    except EmulationError:
        return study
    plan = plan_second_stage(study_shape(base), ledger.left / max(1, kernels_left),
                             SENSITIVITY_SETTINGS.issue_budget, WHAT_IF_SETTINGS.issue_budget)
    sens = wi = None
    stopped = ""
    processes = options.budget.processes or min(MAX_PROCESSES, available_cores())
    try:
        sens_study = wi_study = None
        if plan.sensitivity_run_budget is not None:
            st = SENSITIVITY_SETTINGS.model_copy(update={"issue_budget": plan.sensitivity_run_budget})
            sens_study = sensitivity_study(program, fn, arch, device, options, program.source, settings=st,
                                           prepared=base if st == SENSITIVITY_SETTINGS else None,
                                           resources=plan.sensitivity_resources, ledger=ledger)
        if plan.what_if_run_budget is not None:
            st = WHAT_IF_SETTINGS.model_copy(update={"issue_budget": plan.what_if_run_budget})
            wi_study = what_if_study(program, fn, arch, device, options, program.source, settings=st,
                                     block_sizes=plan.block_sizes, sm_counts=plan.sm_counts,
                                     grid_multipliers=plan.grid_multipliers, ledger=ledger)
        # both studies' runs in one fan-out: the processes stay busy to the end (workers.py)
        n = len(sens_study.jobs) if sens_study else 0
        out = fan_out([*(sens_study.jobs if sens_study else ()), *(wi_study.jobs if wi_study else ())], processes,
                      ledger)
        sens = sens_study.finish(out[:n]) if sens_study else None
        wi = wi_study.finish(out[n:]) if wi_study else None
    except BudgetSpent as e:
        stopped = f"stopped: {e}"
    cuts = [*plan.cuts, *([stopped] if stopped else [])]
    assumptions = study.assumptions
    if cuts:
        assumptions += (Assumption(name="budget", value="second stage reduced", source="default",
                                   detail="; ".join(cuts) + " (AnalysisOptions.budget)"),)
    # The SM-count sweep is the roofline scaling trajectory (roofline-scaling-trajectories §3).
    per_sm = [(f"{p.sms} SMs", float(p.sms), dict(study.profile.flops), dict(study.profile.bytes), p.seconds)
              for p in (wi.sm_scaling if wi else ())]
    return replace(study, sensitivity=sens, what_if=wi, trajectory=trajectory_points(per_sm) if per_sm else (),
                   assumptions=assumptions)


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
        instruction_mix=facts.instruction_mix, flops_per_thread=facts.flops_per_thread,
        bytes_per_thread=facts.bytes_per_thread, facts=facts.facts, lines=lines,
        bound=roofline.bound if roofline else None,
        bottleneck=f"{sens.bottleneck} {sens.bound}" if sens and sens.bottleneck else None,
        roofline_fraction=roofline.fraction if roofline else None,
        predicted_duration_s=study.modeled.duration_s if study.modeled else None,
        measured_duration_s=profile.duration_s if profile is not None and study.measured else None,
        assumptions=study.assumptions,
    )
