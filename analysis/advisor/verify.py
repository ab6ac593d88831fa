"""Verifying a fix before it is offered: apply it to a shadow copy, recompile, re-model, compare.

An estimate (GPA Eq. 2–10, Starlight Eq. 3) says what a remedy *could* give; verification
applies the exact edit a code action would make and runs the whole pipeline again, so the
figure shown is the model's prediction for the edited code (SAAKE §5 used the same emulator to
search block sizes and unroll factors). Nothing of the user's is touched: the edited text goes
to a temporary directory, compiled with `-I<original directory>` so quoted includes still
resolve, and compiler messages are mapped back to the original file and lines.

`rank_actions` turns advice plus verifications into what the editor shows: quick fixes ranked
by verified (else estimated) speedup, and guidance, with the reason, for any edit that does
not compile or that the re-model predicts to be slower.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..cache import DiskCache
from ..errors import KernelscopeError
from ..frontend.kernel_names import without_parameters
from ..frontend.source import parse_source
from ..frontend.toolchain import find_compile_command
from ..options import AnalysisOptions
from ..process import CancelToken
from ..results import AnalysisResult, KernelReport
from .advice import Advice, Fix, FixKind, SourceEdit
from .fixes import EditError, apply_edits, attach_fixes, fix_digest, fix_for, plain_edits

#: Bump when a Verification's meaning changes: old disk entries then stop matching.
VERIFY_VERSION = 2
#: a Verification is a few KB; anything far larger under its name is not one
_MAX_ENTRY_BYTES = 2**20

#: Re-modeled ratios within this of 1 are "no change": what the model moves by on an edit that
#: leaves a kernel's work as it was. Since a many-wave launch's steady period is emulated (two rounds
#: of blocks, docs/emulator.md), the order in which the blocks fall out of step moves with the code:
#: `#pragma unroll 8` on a DRAM-bound loop of 64 loads (tests/actions/kernels/hoist_load.cu, the
#: same bytes) moved the prediction by 1.3 %, where the waves run back to back moved by 0.5 % at most.
NO_CHANGE_TOLERANCE = 0.02

Status = Literal["verified", "slower", "does_not_compile", "no_change"]

#: measure(source file, kernel name) -> seconds on the measured target (e.g. an ncu run).
Measure = Callable[[Path, str], float]
#: remodel(file, options) -> its analysis: what the application layer hands in (analysis/application.py),
#: so that this stage never calls the pipeline that runs it
Remodel = Callable[[Path, AnalysisOptions], AnalysisResult]


class VerifyError(KernelscopeError):
    """The advice cannot be verified (no mechanical fix, unknown id); the message says why."""


class Verification(BaseModel):
    """The outcome of applying one advice's fix to a shadow copy and re-modeling it."""

    model_config = ConfigDict(frozen=True)

    advice_id: str
    kernel: str  # demangled name, as in the report
    fix_kind: FixKind
    fix_digest: str  # which exact edit this vouches for (fixes.fix_digest)
    compiles: bool
    compiler_errors: tuple[str, ...] = ()  # "file:line: message", mapped back to the original file
    baseline_s: float | None = None  # the kernel's predicted duration before the edit
    new_s: float | None = None  # ... and after it
    verified_speedup: float | None = None  # baseline_s / new_s, re-modeled
    measured_speedup: float | None = None  # from `measure`, when a measured target is configured
    #: per instruction class, after − before (static counts of the kernel's SASS)
    instruction_mix_delta: dict[str, int] = {}
    registers: tuple[int, int] | None = None  # (before, after)
    status: Status
    reason: str
    seconds: float = 0.0  # wall time of the verification itself
    from_cache: bool = False


# ---------------------------------------------------------------------------- cache


def verification_key(source_sha256: str, advice_id: str, digest: str, options: AnalysisOptions,
                     toolchain_version: str) -> str:
    """Same text, advice, edit, options and compiler: the same verification."""
    blob = f"{VERIFY_VERSION}|{advice_id}|{digest}|{options.cache_key(source_sha256, toolchain_version)}"
    return hashlib.sha256(blob.encode()).hexdigest()


class VerificationCache(DiskCache[Verification]):
    """Verifications in memory and, with a directory, on disk as one JSON file per key (analysis/cache.py)."""

    def __init__(self, directory: Path | None = None, max_memory: int = 512) -> None:
        super().__init__(Verification, directory, max_entry_bytes=_MAX_ENTRY_BYTES, memory_entries=max_memory)


# ---------------------------------------------------------------------------- verification


def original_line(shadow_line: int, edits: Sequence[SourceEdit]) -> int:
    """The original file's line for a line of the edited shadow copy (inside an edit: its first line)."""
    shift = 0
    for e in sorted(edits, key=lambda e: (e.line, e.col)):
        added = e.new_text.count("\n") - (e.end_line - e.line)
        first = e.line + shift
        if shadow_line < first:
            break
        if shadow_line < first + e.new_text.count("\n"):
            return e.line  # a line the edit inserted
        if shadow_line == first + e.new_text.count("\n"):
            return e.end_line  # where the edit's text ends, the original continues
        shift += added
    return shadow_line - shift


def _kernel(result: AnalysisResult, advice: Advice) -> KernelReport | None:
    """The advised kernel after the edit. Its mangled name can change (`float*` -> `const float*`)."""
    exact = result.kernel(advice.kernel)
    if exact is not None:
        return exact
    base = without_parameters(advice.kernel_name)
    same = [k for k in result.kernels if without_parameters(k.name) == base]
    return same[0] if len(same) == 1 else None


def _shadow_options(source: Path, options: AnalysisOptions) -> AnalysisOptions:
    """The original's compile flags for a copy elsewhere: its compile command's flags (include
    paths already absolute), the user's, and the original directory for quoted includes."""
    cc = find_compile_command(source, options.compile_commands)
    flags = (*(cc.flags if cc is not None else ()), *options.flags, f"-I{source.parent}")
    return options.model_copy(update={"flags": flags, "compile_commands": None})


def _errors(result: AnalysisResult) -> list[tuple[str, int | None, str]]:
    return [(m.file, m.line, m.message) for m in result.messages if m.severity == "error"]


def _describe_mix(delta: Mapping[str, int]) -> str:
    moved = [f"{k} {v:+d}" for k, v in sorted(delta.items(), key=lambda kv: -abs(kv[1])) if v][:4]
    return f"; SASS {', '.join(moved)}" if moved else "; identical SASS instruction mix"


def verify(source: Path, advice: Advice, options: AnalysisOptions, *, remodel: Remodel, toolchain_version: str,
           baseline: AnalysisResult | None = None, measure: Measure | None = None,
           cache: VerificationCache | None = None, fast_math: bool = False, data: bytes | None = None) -> Verification:
    """Apply `advice`'s fix to a shadow copy of `source`, recompile, re-model (`remodel`: the
    analysis the caller runs, with the toolchain of version `toolchain_version`), and compare.

    `baseline` is the analysis of `source` as it is (reused when its digest matches the file,
    recomputed otherwise). Raises VerifyError when the advice has no mechanical fix, and the
    pipeline's setup errors (toolchain, arch) as `remodel` does. `data` is the file's bytes where
    the caller has read them (one read per request), else they are read here."""
    start = time.perf_counter()
    source = source.resolve()
    if data is None:
        data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()  # as results.source_sha256
    text = data.decode("utf-8", errors="replace")
    fix = fix_for(advice, parse_source(text), text, fast_math=fast_math)
    if fix is None:
        raise VerifyError(f"advice {advice.id} ({advice.title}) has no mechanical fix to verify; it is guidance")
    key = verification_key(digest, advice.id, fix_digest(fix), options, toolchain_version)
    if cache is not None and (hit := cache.get(key)) is not None:
        return hit[0].model_copy(update={"from_cache": True})

    def done(**fields) -> Verification:
        v = Verification(advice_id=advice.id, kernel=advice.kernel_name, fix_kind=fix.kind, fix_digest=fix_digest(fix),
                         seconds=time.perf_counter() - start, **fields)
        if cache is not None:
            cache.put(key, v)
        return v

    edits = plain_edits(fix)
    try:
        new_text = apply_edits(text, edits)
    except EditError as e:
        return done(compiles=False, compiler_errors=(f"{source}: the edit does not apply: {e}",),
                    status="does_not_compile", reason=f"the edit does not apply to the file: {e}")
    if baseline is None or baseline.source_sha256 != digest:
        baseline = remodel(source, options)
    before = _kernel(baseline, advice)

    with tempfile.TemporaryDirectory(prefix="kernelscope-verify-") as work:
        shadow = Path(work) / source.name
        shadow.write_text(new_text, encoding="utf-8", errors="surrogateescape")
        after_result = remodel(shadow, _shadow_options(source, options))
        new_errors = [e for e in _errors(after_result)
                      if e[2] not in {m for _, _, m in _errors(baseline)}]
        if not after_result.compiled or new_errors:
            shown = tuple(
                f"{source if Path(f) == shadow else f}:{original_line(ln, edits) if ln and Path(f) == shadow else ln}: "
                f"{msg.replace(str(shadow), str(source))}" for f, ln, msg in new_errors) or ("the compiler failed",)
            return done(compiles=False, compiler_errors=shown, status="does_not_compile",
                        reason=f"the edited file does not compile: {shown[0]}")
        after = _kernel(after_result, advice)
        measured = None
        measure_note = ""
        if measure is not None and after is not None:
            try:
                measured = measure(source, advice.kernel_name) / measure(shadow, advice.kernel_name)
            except Exception as e:  # a measurement failure must not hide the modeled answer
                measure_note = f"; measurement failed: {e}"

    mix_delta: dict[str, int] = {}
    registers = None
    if before is not None and after is not None:
        for k in set(before.instruction_mix) | set(after.instruction_mix):
            d = after.instruction_mix.get(k, 0) - before.instruction_mix.get(k, 0)
            if d:
                mix_delta[k] = d
        registers = (before.resources.registers, after.resources.registers)
    t0 = before.predicted_duration_s if before is not None else None
    t1 = after.predicted_duration_s if after is not None else None
    common = dict(compiles=True, baseline_s=t0, new_s=t1, measured_speedup=measured, instruction_mix_delta=mix_delta,
                  registers=registers)
    if not t0 or not t1:
        return done(**common, status="no_change",
                    reason="compiles; no modeled duration to compare (emulation off, or the launch is unknown)"
                           + measure_note)
    ratio = t0 / t1
    decisive = measured if measured is not None else ratio
    how = "measured" if measured is not None else "re-modeled"
    regs = f"; registers {registers[0]} -> {registers[1]}" if registers and registers[0] != registers[1] else ""
    figures = f"{t0 * 1e6:.2f} us -> {t1 * 1e6:.2f} us ({ratio:.3f}x){_describe_mix(mix_delta)}{regs}{measure_note}"
    if decisive > 1 + NO_CHANGE_TOLERANCE:
        status, reason = "verified", f"compiles; {how} faster: {figures}"
    elif decisive < 1 - NO_CHANGE_TOLERANCE:
        status, reason = "slower", f"compiles, but {how} slower: {figures}"
    else:
        status, reason = "no_change", f"compiles; {how} time unchanged: {figures}"
    if fix.is_snippet:
        reason += "; a template: its gain comes once the placeholders are filled in"
    return done(**common, verified_speedup=ratio, status=status, reason=reason)


def with_verifications(advice: Iterable[Advice],
                       verifications: Mapping[str, Verification] | Iterable[Verification]) -> tuple[Advice, ...]:
    """The advice with what each fix's re-model said (the verified figure, or no modeled gain).
    A verification counts only for the exact edit it compiled (same fix digest)."""
    by_id = dict(verifications) if isinstance(verifications, Mapping) else {v.advice_id: v for v in verifications}
    out = []
    for a in advice:
        v = by_id.get(a.id)
        if v is None or a.fix is None or v.fix_digest != fix_digest(a.fix):
            out.append(a)
            continue
        out.append(a.model_copy(update={"verification": v.status, "verified_speedup": v.verified_speedup}))
    return tuple(out)


def verify_all(source: Path, result: AnalysisResult, options: AnalysisOptions, *, limit: int, remodel: Remodel,
               toolchain_version: str, cancel: CancelToken | None = None, cache: VerificationCache | None = None,
               fast_math: bool = False,
               on_each: Callable[[Verification], None] | None = None) -> tuple[Verification, ...]:
    """Verify the `limit` advice with a mechanical fix that promise the most (issue 15: verified by
    default). Each verification is one quick analysis of a shadow copy; `cancel` stops between them."""
    try:
        data = source.read_bytes()  # once: each verification below takes these bytes
    except OSError:
        return ()
    text = data.decode("utf-8", errors="replace")
    fixed = [a for a in attach_fixes(result.advice, text, fast_math=fast_math) if a.fix is not None and not a.fix.is_snippet]
    out = []
    # the equation's own figure first: above 1.5x an unmodeled estimate is shown capped (issue 34), and
    # those are the ones the re-model must confirm
    for a in sorted(fixed, key=lambda a: -a.estimate.inputs.get("uncapped", a.estimate.speedup))[:limit]:
        if cancel is not None:
            cancel.check()
        v = verify(source, a, options, remodel=remodel, toolchain_version=toolchain_version, baseline=result,
                   cache=cache, fast_math=fast_math, data=data)
        out.append(v)
        if on_each is not None:
            on_each(v)
    return tuple(out)


# ---------------------------------------------------------------------------- ranking


#: What the edit does, as a code-action title starts (the figures follow in parentheses).
ACTION_TITLES: dict[str, str] = {
    "pragma_unroll": "Unroll loop", "float_literal": "Make literal float", "float_math_function": "Use float math function",
    "forceinline": "Force-inline device function", "restrict_const": "Mark pointers const __restrict__",
    "launch_bounds": "Add __launch_bounds__", "block_size": "Change block size", "hoist_load": "Hoist load",
    "shared_memory_tiling": "Insert shared-memory tiling template",
}


class ActionPlan(BaseModel):
    """One code action, decided: the server only translates it to LSP."""

    model_config = ConfigDict(frozen=True)

    advice: Advice  # with verified_speedup filled when verified
    fix: Fix | None  # None for guidance
    title: str  # e.g. "Unroll loop (verified 1.21×, est. 1.25×)"
    kind: Literal["quickfix", "guidance"]
    reason: str  # why it is (not) offered as an edit
    speedup: float  # the figure it is ranked by: measured, else verified, else estimated
    verification: Verification | None = None


def _figures(a: Advice, v: Verification | None) -> str:
    parts = []
    if v is not None and v.measured_speedup is not None:
        parts.append(f"measured {v.measured_speedup:.2f}×")
    if v is not None and v.verified_speedup is not None:
        parts.append(f"verified {v.verified_speedup:.2f}×")
    parts.append(f"est. {a.estimate.speedup:.2f}×")
    return ", ".join(parts)


def rank_actions(advice: Iterable[Advice],
                 verifications: Mapping[str, Verification] | Iterable[Verification] = ()) -> list[ActionPlan]:
    """The code actions for `advice`, best first.

    A fix is offered as an edit unless its verification says it does not compile or is slower;
    then (and for advice without a fix) it is guidance with the reason. A verification counts
    only for the exact edit it compiled (same fix digest): a stale one is ignored."""
    by_id = dict(verifications) if isinstance(verifications, Mapping) else {v.advice_id: v for v in verifications}
    plans = []
    for a in advice:
        v = by_id.get(a.id)
        if v is not None and (a.fix is None or v.fix_digest != fix_digest(a.fix)):
            v = None
        speedup = a.estimate.speedup
        if v is not None and v.measured_speedup is not None:
            speedup = v.measured_speedup
        elif v is not None and v.verified_speedup is not None:
            speedup = v.verified_speedup
        shown = a.model_copy(update={"verified_speedup": v.verified_speedup}) if v and v.verified_speedup else a
        figures = _figures(a, v)
        if a.fix is None:
            plans.append(ActionPlan(advice=shown, fix=None, title=f"{a.title} ({figures})", kind="guidance",
                                    reason="no mechanical edit for this advice: follow the explanation",
                                    speedup=speedup, verification=v))
        elif v is not None and v.status in ("does_not_compile", "slower"):
            why = "the edit does not compile" if v.status == "does_not_compile" else "the re-model predicts it slower"
            plans.append(ActionPlan(advice=shown, fix=None, title=f"{a.title} ({figures})", kind="guidance",
                                    reason=f"not offered as an edit: {why} ({v.reason})", speedup=speedup,
                                    verification=v))
        else:
            label = ACTION_TITLES.get(a.fix.kind, a.title)
            reason = v.reason if v is not None else "not verified yet: the figure is the estimate"
            plans.append(ActionPlan(advice=shown, fix=a.fix, title=f"{label} ({figures})", kind="quickfix",
                                    reason=reason, speedup=speedup, verification=v))
    return sorted(plans, key=lambda p: (-p.speedup, p.kind != "quickfix", p.advice.id))
