"""The advisor: blame → optimizers → estimators → ranked advice (GPA §III's dynamic analyzer).

`advise` is the single entry the pipeline calls. Per kernel it blames the profile's stalls
(GPA §IV), places the kernel on the roofline (Starlight §4.2), builds one `MatchContext` and
runs every registered optimizer over it. Advice is ranked by estimated speedup × importance
(GPA Fig. 8 orders by speedup within a kernel; importance keeps a large gain on a tiny share
from outranking a solid one on most of the kernel).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..frontend.program import FunctionProgram, Program
from ..machine.roofline import KernelRoofline, RooflineModel, TrajectoryPoint, kernel_roofline
from ..profile import KernelProfile, Profile
from ..results import StaticFact
from .advice import Advice
from .blame import BlameResult, blame
from .call_sites import call_sites
from .optimizers import REGISTRY, MatchContext, Optimizer

log = logging.getLogger(__name__)

#: Advice below this estimated speedup is not worth a diagnostic (a 1 % gain is within the model's error).
MIN_SPEEDUP = 1.01


def rank_key(a: Advice) -> tuple[float, float, str]:
    return (-(a.speedup * a.importance), -a.speedup, a.id)


def kernel_context(program: Program, function: FunctionProgram, profile: KernelProfile | None, *,
                   facts: Sequence[StaticFact] = (), source_lines: Sequence[str] = (), arch: Any = None,
                   device: Any = None, roofline_model: RooflineModel | None = None, sensitivity: Any = None,
                   what_if: Any = None) -> MatchContext:
    """Everything the optimizers need about one kernel, computed once."""
    blamed: BlameResult | None = blame(function, profile) if profile is not None else None
    roof: KernelRoofline | None = None
    if profile is not None and roofline_model is not None and profile.duration_s > 0:
        roof = kernel_roofline(profile, roofline_model, _trajectory(what_if))
    return MatchContext(
        kernel=function.mangled, kernel_name=function.name, instructions=function.sass.instructions,
        source=program.source, source_lines=tuple(source_lines), profile=profile, blame=blamed, facts=tuple(facts),
        resources=function.resources, arch=arch, device=device, roofline=roof, sensitivity=sensitivity,
        what_if=what_if, call_sites=call_sites(program, function, profile) if profile is not None else ())


def _trajectory(what_if: Any) -> tuple[TrajectoryPoint, ...]:
    """The emulator's SM-count scaling as roofline points (roofline scaling trajectories §3)."""
    pts = getattr(what_if, "sm_scaling", ()) or ()
    return tuple(TrajectoryPoint(label=f"{p.sms} SMs", concurrency=p.sms, intensity=p.intensity,
                                 performance=p.flops_per_s) for p in pts if p.intensity and p.flops_per_s > 0)


def run_optimizers(ctx: MatchContext, optimizers: Iterable[Optimizer] = REGISTRY) -> list[Advice]:
    out: list[Advice] = []
    for opt in optimizers:
        try:
            out.extend(opt.match(ctx))
        except Exception:  # one broken rule must not hide every other finding in the editor
            log.exception("optimizer %s failed on %s", opt.name, ctx.kernel_name)
    return out


def advise(program: Program, profiles: Profile | Sequence[KernelProfile] | None = None, *,
           facts: Mapping[str, Sequence[StaticFact]] | None = None, source_text: str | None = None, arch: Any = None,
           device: Any = None, roofline_model: RooflineModel | None = None,
           sensitivity: Mapping[str, Any] | None = None, what_if: Mapping[str, Any] | None = None,
           optimizers: Iterable[Optimizer] = REGISTRY) -> tuple[Advice, ...]:
    """Ranked advice for every kernel of `program`.

    `profiles` may be modeled or measured; `facts`, `sensitivity` and `what_if` are keyed by
    the kernel's mangled name. Without `source_text` the file at `program.source_path` is read.
    """
    kprofs = profiles.kernels if isinstance(profiles, Profile) else tuple(profiles or ())
    if source_text is None:
        try:
            source_text = Path(program.source_path).read_text(errors="replace")
        except OSError:
            source_text = ""
    lines = tuple(source_text.splitlines())
    optimizers = tuple(optimizers)
    found: dict[str, Advice] = {}
    for fn in program.kernels:
        prof = next((k for k in kprofs if k.kernel == fn.mangled), None)
        ctx = kernel_context(program, fn, prof, facts=(facts or {}).get(fn.mangled, ()), source_lines=lines, arch=arch,
                             device=device, roofline_model=roofline_model,
                             sensitivity=(sensitivity or {}).get(fn.mangled),
                             what_if=(what_if or {}).get(fn.mangled))
        for a in run_optimizers(ctx, optimizers):
            if a.estimate.speedup >= MIN_SPEEDUP:
                found.setdefault(a.id, a)
    return tuple(sorted(found.values(), key=rank_key))
