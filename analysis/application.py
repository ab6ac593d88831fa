"""The application layer: the one front door the command line (cli/) and the language server
(server/) call. It composes the stages into what a user asks for; the stages never call it back.

- analyse: launch capture (optional) -> `pipeline.analyze` -> fixes -> verification of the fixes
  -> the result with their verified figures (`analyse_file`; the server runs the same steps
  apart, each when its turn comes: `capture_launches`, `analyse`, `verify_fixes`, `with_verified`);
- verify one advice's fix (`verify_advice`, `verify_fix`): the stage `advisor/verify.py` is handed
  the analysis to run on its shadow copy, so verifying never imports the pipeline;
- measured profiles: profile under ncu (`profile`, `build_program`), read a report (`import_report`)
  and the GPU it was captured on (`report_device`).

It also names the types a front end hands in and gets back (`AnalysisOptions`, `AnalysisResult`,
`Advice`, `Verification`, `CancelToken`, the user errors, ...); the presenters are `reports/`.
Those names and the stages load when first used, not on import: the command line starts nvcc
(`start_compile`) before the engine loads, and its start-up is most of a short command's time
(docs/performance.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # loaded on first use (see the module's docstring)
    from .advisor.advice import Advice
    from .advisor.verify import ActionPlan, Verification, VerificationCache
    from .context import AnalysisContext
    from .frontend.prelaunch import Prelaunch
    from .frontend.toolchain import Toolchain
    from .machine.arch import ArchCatalog
    from .measure.fallback import Measurement
    from .measure.target import ProfileTarget
    from .options import AnalysisOptions
    from .process import CancelToken
    from .profile import Profile
    from .results import AnalysisResult

    #: verifications by advice id, or as they came
    Verifications = Mapping[str, Verification] | Iterable[Verification]

#: The names a front end uses, by the module that defines them (loaded when first named).
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("AnalysisOptions", "LaunchHint"), "options"),
    **dict.fromkeys(("AnalysisResult", "KernelReport", "LineReport", "Message", "SCHEMA_VERSION"), "results"),
    **dict.fromkeys(("CancelToken", "Cancelled"), "process"),
    **dict.fromkeys(("USER_ERRORS",), "errors"),
    **dict.fromkeys(("MAX_SOURCE_BYTES", "regular_size", "read_regular"), "files"),
    **dict.fromkeys(("DiskCache", "Hit"), "cache"),
    **dict.fromkeys(("Toolchain", "ToolchainError"), "frontend.toolchain"),
    **dict.fromkeys(("Prelaunch",), "frontend.prelaunch"),
    **dict.fromkeys(("ALLOWED", "refused_flag"), "frontend.flag_policy"),
    **dict.fromkeys(("ArchCatalog",), "machine.arch"),
    **dict.fromkeys(("AnalysisContext",), "context"),
    **dict.fromkeys(("without_parameters",), "frontend.kernel_names"),
    **dict.fromkeys(("Advice", "Fix", "SourceEdit"), "advisor.advice"),
    **dict.fromkeys(("plain_text",), "advisor.fixes"),
    **dict.fromkeys(("ActionPlan", "Verification", "VerificationCache"), "advisor.verify"),
    **dict.fromkeys(("MeasurementError", "StaleReportError", "CounterPermissionError", "ToolNotFoundError"),
                    "measure.errors"),
    **dict.fromkeys(("ProfileTarget", "RemoteWrapper"), "measure.target"),
    **dict.fromkeys(("Measurement", "hot_lines"), "measure.fallback"),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted((*globals(), *_EXPORTS))


#: progress(stage, fraction) — fraction in 0..1 of the whole analysis (pipeline.Progress)
Progress = Callable[[str, float], None]
Depth = Literal["quick", "full"]


# ---------------------------------------------------------------------------- analysing


def start_compile(source: Path, command_line: Sequence[str], cwd: Path) -> Prelaunch:
    """nvcc started now, from the invocation the last run of this command line recorded, while the
    engine loads; the compile step adopts it only if it builds the same (frontend/prelaunch.py).
    Close it when the analysis is done."""
    from .frontend.prelaunch import Prelaunch, record_key

    return Prelaunch.start(record_key(source, tuple(command_line), cwd))


def begin_compile(source: Path, options: AnalysisOptions, toolchain: Toolchain,
                  cancel: CancelToken | None = None) -> Prelaunch | None:
    """nvcc started now, as `analyse(source, options)` will run it: hand the result to that analysis
    (`prelaunch=`), which adopts it, after what comes first (launch capture) ran while nvcc compiled.
    None where the analysis would not compile `source` itself (a header). `cancel` stops it as it
    stops the analysis. Close it when done."""
    from .pipeline import begin_compile

    return begin_compile(source, options, toolchain, cancel)


def load_stages(arch: str | None = None) -> None:
    """Load every stage now (a long-running front end does, once, before its first analysis)."""
    from .pipeline import load_late_stages

    load_late_stages(arch)


def arch_catalog(arch_file: Path | None = None) -> ArchCatalog:
    """The arch catalog (the built-in specs, with a user's `arch_file` merged over them), loaded once
    for everything one request does: the front end hands it to each step (the report's device,
    capture, the analysis, its verifications, the chart), and none loads it again."""
    from .machine.arch import load_arch_specs

    return load_arch_specs(arch_file)


def resolve_context(source: Path, options: AnalysisOptions, *, catalog: ArchCatalog | None = None,
            data: bytes | None = None) -> AnalysisContext:
    """What an analysis of `source` resolves before its compile, once for the whole request
    (context.py): the arch catalog (`catalog`, else loaded now), the arch and the device of
    `options`, and the file's bytes (`data`, as the caller read them, else read now). Capture takes
    its catalog, the analysis takes it whole (`analyse`), and its `text` is the text analysed: the
    fixes are attached to that text, not to a second read of the file."""
    from .context import AnalysisContext
    from .files import read_regular

    source = source.resolve()
    catalog = catalog if catalog is not None else arch_catalog(options.arch_file)
    # read_regular: a FIFO or a link to /dev/zero under a .cu name is an OSError, not a hang
    return AnalysisContext.resolve(options, catalog=catalog, path=source,
                                   data=read_regular(source) if data is None else data)


def resolve_toolchain(source: Path, options: AnalysisOptions) -> Toolchain:
    from .pipeline import resolve_toolchain

    return resolve_toolchain(source, options)


def source_digest(data: bytes) -> str:
    from .pipeline import source_digest

    return source_digest(data)


def input_digest(source: Path, options: AnalysisOptions, toolchain: Toolchain, data: bytes | None = None) -> str:
    """The content hash a result of `source` is valid for: the file (`data`: its bytes as the caller
    read them) and its local headers."""
    from .pipeline import input_digest

    return input_digest(source, options, toolchain, data)


@dataclass(frozen=True)
class Captured:
    """The options with the launches the program made, and why capture did not, if it did not."""

    options: AnalysisOptions
    message: str | None


def capture_launches(source: Path, options: AnalysisOptions, *, argv: Sequence[str] = (),
                     time_limit: float | None = None, launches_per_kernel: int | None = None,
                     cancel: CancelToken | None = None, catalog: ArchCatalog | None = None) -> Captured:
    """`options` with the launches and argument values `source`'s own main() makes (capture/: it runs
    the user's program, contained; only where the user's own command line or a trusted workspace
    asked). A capture that fails leaves the options as they were and says why. `catalog`: the one
    the analysis that follows uses (`arch_catalog`)."""
    from .capture.run import with_capture

    limits = {k: v for k, v in (("time_limit", time_limit), ("launches_per_kernel", launches_per_kernel))
              if v is not None}
    outcome = with_capture(source, options, argv=tuple(argv), cancel=cancel, catalog=catalog, **limits)
    return Captured(outcome.options, outcome.message)


def analyse(source: Path, options: AnalysisOptions, *, cancel: CancelToken | None = None,
            progress: Progress | None = None, toolchain: Toolchain | None = None,
            measured_report: Path | None = None, depth: Depth = "full",
            on_partial: Callable[[AnalysisResult], None] | None = None,
            prelaunch: Prelaunch | None = None, context: AnalysisContext | None = None) -> AnalysisResult:
    """One analysis of the file on disk (pipeline.analyze): compile, model, advise. `context`: the
    request's (`resolve_context`): its catalog and the file's bytes, which the analysis neither loads nor
    reads again; else both are resolved for this analysis."""
    from .pipeline import analyze

    return analyze(source, options, cancel=cancel, progress=progress, toolchain=toolchain,
                   measured_report=measured_report, depth=depth, on_partial=on_partial, prelaunch=prelaunch,
                   context=context)


def analyse_file(source: Path, options: AnalysisOptions, *, capture_argv: Sequence[str] | None = None,
                 on_capture: Callable[[str], None] | None = None, measured_report: Path | None = None,
                 depth: Depth = "full", verify_limit: int = 0, progress: Progress | None = None,
                 prelaunch: Prelaunch | None = None, catalog: ArchCatalog | None = None) -> AnalysisResult:
    """The whole flow for one file, as the command line runs it: capture (with `capture_argv`; its
    message, if any, to `on_capture`), analyse, then re-model the `verify_limit` most promising fixes
    and show their verified figures. `catalog`: the front end's (`arch_catalog`), else loaded here;
    either way the catalog is loaded and the file read once for all these steps (`resolve_context`)."""
    source = source.resolve()
    ctx = resolve_context(source, options, catalog=catalog)
    if capture_argv is not None:
        captured = capture_launches(source, options, argv=capture_argv, catalog=ctx.catalog)
        if captured.message and on_capture is not None:
            on_capture(captured.message)
        options = captured.options
    result = analyse(source, options, measured_report=measured_report, depth=depth, progress=progress,
                     prelaunch=prelaunch, context=ctx)
    if verify_limit <= 0 or not result.compiled:
        return result
    if progress is not None:
        progress("verify", 1.0)
    done = verify_fixes(source, result, options, limit=verify_limit, catalog=ctx.catalog)
    return with_verified(result, done, ctx.text)


# ---------------------------------------------------------------------------- verifying


def verify_fix(source: Path, advice: Advice, options: AnalysisOptions, *, cancel: CancelToken | None = None,
               toolchain: Toolchain | None = None, baseline: AnalysisResult | None = None,
               measure: Callable[[Path, str], float] | None = None, cache: VerificationCache | None = None,
               fast_math: bool = False, catalog: ArchCatalog | None = None) -> Verification:
    """Apply `advice`'s fix to a shadow copy of `source`, recompile, re-model and compare
    (advisor/verify.py). `baseline`: the analysis of `source` as it is, reused when it is of this
    content. Raises VerifyError when the advice has no mechanical fix."""
    from .advisor.verify import verify

    source = source.resolve()
    toolchain = toolchain or resolve_toolchain(source, options)
    catalog = catalog if catalog is not None else arch_catalog(options.arch_file)
    return verify(source, advice, options, remodel=_remodel(cancel, toolchain, catalog),
                  toolchain_version=toolchain.version, baseline=baseline, measure=measure, cache=cache,
                  fast_math=fast_math)


def _remodel(cancel: CancelToken | None, toolchain: Toolchain,
             catalog: ArchCatalog) -> Callable[[Path, AnalysisOptions], AnalysisResult]:
    # Only a kernel's predicted duration is compared: it comes from the first emulation, which
    # "quick" runs exactly as "full" does (sensitivity and what-if sweeps are not needed here).
    return lambda path, options: analyse(path, options, cancel=cancel, toolchain=toolchain, depth="quick",
                                         context=resolve_context(path, options, catalog=catalog))


def verify_fixes(source: Path, result: AnalysisResult, options: AnalysisOptions, *, limit: int,
                 cancel: CancelToken | None = None, toolchain: Toolchain | None = None,
                 cache: VerificationCache | None = None, fast_math: bool = False,
                 on_each: Callable[[Verification], None] | None = None,
                 catalog: ArchCatalog | None = None) -> tuple[Verification, ...]:
    """Verify the `limit` fixes of `result` that promise the most (issue 15: verified by default), one
    quick analysis of a shadow copy each, all with one arch catalog (`catalog`, else loaded here
    once); `cancel` stops between them."""
    from .advisor.verify import verify_all

    source = source.resolve()
    toolchain = toolchain or resolve_toolchain(source, options)
    catalog = catalog if catalog is not None else arch_catalog(options.arch_file)
    return verify_all(source, result, options, limit=limit, remodel=_remodel(cancel, toolchain, catalog),
                      toolchain_version=toolchain.version, cancel=cancel, cache=cache, fast_math=fast_math,
                      on_each=on_each)


def fixed_advice(result: AnalysisResult, fast_math: bool = False) -> tuple[Advice, ...]:
    """The result's advice with the fixes `fixes.fix_for` completes (block size with grid, hoisted
    load, tiling template). Those need the analysed text: the file on disk while it still has the
    analysed content; otherwise the optimizers' own fixes."""
    from .advisor.fixes import attach_fixes

    try:
        data = Path(result.source).read_bytes()
    except OSError:
        return result.advice
    if source_digest(data) != result.source_sha256:
        return result.advice
    return attach_fixes(result.advice, data.decode("utf-8", errors="replace"), fast_math=fast_math)


def with_verified(result: AnalysisResult, verifications: Verifications, text: str | None = None) -> AnalysisResult:
    """`result` with each fix's verified figure (or 'no modeled gain'); `text`: the analysed source."""
    return result.model_copy(update={"advice": shown_advice(result, verifications, text)})


def shown_advice(result: AnalysisResult, verifications: Verifications, text: str | None = None,
                 advice: Sequence[Advice] | None = None) -> tuple[Advice, ...]:
    """The advice as it is shown: fixes attached (from `text`, else `advice` as given, else the file
    while it is the analysed one) and each verification's figure for the exact edit it compiled."""
    from .advisor.fixes import attach_fixes
    from .advisor.verify import with_verifications

    if advice is None:
        advice = attach_fixes(result.advice, text) if text is not None else fixed_advice(result)
    return with_verifications(advice, verifications)


def action_plans(advice: Sequence[Advice], verifications: Verifications) -> list[ActionPlan]:
    """The code actions for `advice`, best first (advisor/verify.rank_actions)."""
    from .advisor.verify import rank_actions

    return rank_actions(advice, verifications)


@dataclass(frozen=True)
class VerifiedAdvice:
    """`kernelscope verify`'s answer: the analysis, the advice asked for (None: no such id), and,
    when it was found in a file that compiles, its fix's verification and code action."""

    baseline: AnalysisResult
    advice: Advice | None = None
    verification: Verification | None = None
    plan: ActionPlan | None = None


def verify_advice(source: Path, advice_id: str, options: AnalysisOptions, *, fast_math: bool = False,
                  progress: Progress | None = None, on_analysed: Callable[[], None] | None = None) -> VerifiedAdvice:
    """Analyse `source`, then verify the fix of its advice `advice_id`. `on_analysed` is called once
    the baseline is in (a command line ends its progress line there)."""
    from .advisor.fixes import attach_fixes

    source = source.resolve()
    ctx = resolve_context(source, options)  # the catalog and the text, once for the analysis and the verification
    try:
        baseline = analyse(source, options, progress=progress, context=ctx)
    finally:
        if on_analysed is not None:
            on_analysed()
    if not baseline.compiled:
        return VerifiedAdvice(baseline)
    advice = next((a for a in baseline.advice if a.id == advice_id), None)
    if advice is None:
        return VerifiedAdvice(baseline)
    v = verify_fix(source, advice, options, baseline=baseline, fast_math=fast_math, catalog=ctx.catalog)
    plan = action_plans(attach_fixes([advice], ctx.text, fast_math=fast_math), [v])[0]
    return VerifiedAdvice(baseline, advice, v, plan)


# ---------------------------------------------------------------------------- measured profiles


def import_report(report: Path, source: Path | None = None, *, cancel: CancelToken | None = None) -> Profile:
    """An Nsight Compute report (.ncu-rep) as the profile model; with `source`, refused
    (StaleReportError) when it was captured from another version of that file."""
    from .measure.ncu_report import load_ncu_report

    return load_ncu_report(report, source=source, cancel=cancel)


def report_device(report: Path, source: Path | None, catalog: ArchCatalog) -> tuple[str, str | None, str | None]:
    """(arch, device, note) of the GPU `report` was captured on: the report's numbers belong to that
    GPU, so the model beside them uses its specs (a T4 is not a GTX 1660). A GPU the catalogue lacks
    gives device None (the arch's default device) and a note saying so. `catalog`: the one the
    analysis with the report then uses (`arch_catalog`)."""
    from .machine.arch import ArchSpecError

    prov = import_report(report, source).provenance  # as the analysis reads it: read once
    try:
        return prov.arch, catalog.device(prov.device).name, None
    except ArchSpecError:
        stand_in = catalog.default_device(prov.arch).name
        return prov.arch, None, (f"the report's GPU ({prov.device}) is not in the device catalogue; the model uses "
                                 f"the {stand_in}'s specs ({prov.arch}). Add the GPU with --arch-file "
                                 "(docs/arch-specs.md).")


def profile(target: ProfileTarget, *, report_path: Path, ncu_path: str = "ncu", source: Path | None = None,
            nvcc_path: str | None = None, cancel: CancelToken | None = None,
            on_warning: Callable[[str], None] | None = None,
            on_progress: Callable[[str], None] | None = None) -> Measurement:
    """Run `target` under Nsight Compute into `report_path`, locally or through ssh/Slurm; where the
    counters are refused, CUPTI PC sampling; else nothing, and the model is shown. The outcome says
    which ran and why each earlier one was passed over (measure/fallback.py)."""
    from .measure.fallback import measure_with_fallback

    return measure_with_fallback(target, report_path=report_path, ncu_path=ncu_path, source=source, cancel=cancel,
                                 on_warning=on_warning, on_progress=on_progress, nvcc_path=nvcc_path)


@dataclass(frozen=True)
class Built:
    program: Path
    returncode: int
    output: str  # the compiler's messages


def build_program(source: Path, options: AnalysisOptions, exe: Path) -> Built:
    """`source` built alone as a program (it needs a main()) with -lineinfo, so a profile maps
    stalls to lines."""
    from .frontend.toolchain import locate_toolchain
    from .process import run_tool

    toolchain = locate_toolchain(options.nvcc_path)
    argv = [str(toolchain.nvcc), f"-arch={options.arch}", "-lineinfo", *options.flags, "-o", str(exe), str(source)]
    built = run_tool(argv, env=toolchain.env, timeout=300)
    return Built(exe, built.returncode, (built.stderr or built.stdout).strip())


def roofline_chart(result: AnalysisResult, catalog: ArchCatalog) -> str:
    """The SVG of every kernel of `result` on its device's roofline (reports/chart.py), with the
    device catalogue the analysis used (`arch_catalog` of its options)."""
    from .reports.chart import roofline_chart

    return roofline_chart(result, catalog)
