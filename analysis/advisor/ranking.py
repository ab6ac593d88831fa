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
from typing import TYPE_CHECKING, Any

from ..frontend.program import FunctionProgram, outer_file, same_path
from ..machine.roofline import KernelRoofline, RooflineModel, TrajectoryPoint, kernel_roofline
from ..profile import KernelProfile, Profile
from ..results import StaticFact
from .advice import Advice, SourceEdit
from .blame import BlameResult, blame
from .call_sites import call_sites
from .optimizers import REGISTRY, MatchContext, Optimizer, WhatIfReads
from .optimizers.base import grounded, named_lines, restated, roofline_bounded

if TYPE_CHECKING:
    from ..context import AnalysisContext

log = logging.getLogger(__name__)

#: the units each optimizer's change takes work from (`Optimizer.relieves`), by name
_RELIEVES = {o.name: o.relieves for o in REGISTRY}

#: Advice below this estimated speedup is not worth a diagnostic (a 1 % gain is within the model's error).
MIN_SPEEDUP = 1.01


def rank_key(a: Advice) -> tuple[float, float, str]:
    return (-(a.speedup * a.importance), -a.speedup, a.id)


def kernel_context(context: AnalysisContext, function: FunctionProgram, profile: KernelProfile | None, *,
                   facts: Sequence[StaticFact] = (), source_lines: Sequence[str] = (),
                   roofline_model: RooflineModel | None = None, sensitivity: Any = None, what_if: Any = None,
                   memory: Mapping[int, Any] | None = None) -> MatchContext:
    """Everything the optimizers need about one kernel of `context.program`, computed once."""
    program, arch, device = context.program, context.arch, context.device
    blamed: BlameResult | None = blame(function, profile) if profile is not None else None
    roof: KernelRoofline | None = None
    if profile is not None and roofline_model is not None and profile.duration_s > 0:
        roof = kernel_roofline(profile, roofline_model, _trajectory(what_if))
    return MatchContext(
        kernel=function.mangled, kernel_name=function.name, instructions=function.sass.instructions,
        source=program.source, source_lines=tuple(source_lines), profile=profile, blame=blamed, facts=tuple(facts),
        resources=function.resources, arch=arch, device=device, roofline=roof, sensitivity=sensitivity,
        what_if=what_if, call_sites=call_sites(program, function, profile) if profile is not None else (),
        memory=dict(memory or {}))


def what_if_reads(context: AnalysisContext, function: FunctionProgram, profile: KernelProfile,
                  optimizers: Iterable[Optimizer] = REGISTRY) -> WhatIfReads | None:
    """The what-if points the optimizers may read for `function` (`Optimizer.what_if_reads`), from
    its launch, occupancy and quick-stage `profile`: what the second stage must model of the
    block-size and grid sweeps for the full result's advice to be what the whole sweeps would give.
    The context has no blame (GPA's slices, the advice's dearest part), which no such answer reads.
    None where an optimizer failed to say: then every point is modeled."""
    ctx = MatchContext(kernel=function.mangled, kernel_name=function.name, instructions=function.sass.instructions,
                       source=context.program.source, profile=profile, resources=function.resources,
                       arch=context.arch, device=context.device)
    reads = WhatIfReads()
    for opt in optimizers:
        try:
            reads |= opt.what_if_reads(ctx)
        except Exception:  # as in `run_optimizers`; its match then fails alike, on the whole sweeps
            log.exception("optimizer %s failed on %s", opt.name, ctx.kernel_name)
            return None
    return reads


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


def _same_fix(a: Advice, b: Advice) -> bool:
    """One edit or one set of instructions: the same change, however many rules matched it."""
    if a.fix is not None and b.fix is not None and (set(a.fix.edits) & set(b.fix.edits) or set(a.changes) & set(b.changes)):
        return True  # one edit, or two edits of the same instructions (`2.0` and `sqrt` of one FP64 chain)
    return bool(a.changes) and a.changes == b.changes


def merge_same_fix(items: Sequence[Advice], ctx: MatchContext) -> list[Advice]:
    """One fix, one item (issue 34): items of one kernel that share an edit or change the same
    instructions become the best-ranked of them, naming every line they name. The gain of items on
    different instructions adds up (each removes its own stalls, GPA Eq. 2), of items on the same
    ones it does not; either way it stays within the Amdahl bound of the lines' share."""
    groups: list[list[Advice]] = []
    for a in sorted(items, key=rank_key):
        g = next((g for g in groups if any(_same_fix(a, b) for b in g)), None)
        if g is None:
            groups.append([a])
        else:
            g.append(a)
    return [g[0] if len(g) == 1 else _merged(g, ctx) for g in groups]


def _merged(group: list[Advice], ctx: MatchContext) -> Advice:
    head = group[0]
    lines = tuple(dict.fromkeys(ln for a in group for ln in a.lines))
    disjoint = all(not set(a.changes) & set(b.changes) for i, a in enumerate(group) for b in group[i + 1:])
    saved = [1.0 - 1.0 / a.estimate.speedup for a in group]  # the fraction of T each removes
    importance = sum(a.importance for a in group) if disjoint else max(a.importance for a in group)
    gain = sum(saved) if disjoint else max(saved)
    if ctx.profile is not None and head.importance_basis == "of samples":
        named = named_lines(lines, (h for a in group for h in a.hotspots))
        importance = min(importance, sum(ctx.line_shares.get(ln, 0.0) for ln in named))
        gain = min(gain, importance)
    speedup = 1.0 / (1.0 - gain) if gain < 1.0 else head.estimate.speedup
    estimate = head.estimate
    if abs(speedup - estimate.speedup) > 1e-9:
        d = estimate.inputs.get("T_now_s")
        inputs = {**estimate.inputs, **({"T_new_s": d / speedup} if d else {}), "merged": float(len(group))}
        estimate = estimate.model_copy(update={
            "speedup": speedup, "formula": estimate.formula + " summed over the merged items", "inputs": inputs})
        if ctx.profile is not None:  # the fixes together relieve what each relieves, and no more
            relieves = frozenset().union(*(_RELIEVES.get(a.optimizer, frozenset()) for a in group))
            estimate = roofline_bounded(estimate, ctx.profile.utilization, relieves)
        estimate = grounded(estimate, d)
    fix = head.fix
    fixes = [a.fix for a in group if a.fix is not None and not a.fix.is_snippet]
    if fix is not None and not fix.is_snippet:
        edits = tuple(dict.fromkeys(e for f in fixes for e in f.edits if not any(_overlap(e, g) for g in head.fix.edits
                                                                                 if g != e) or f is head.fix))
        fix = fix.model_copy(update={"edits": edits, "description": "; ".join(dict.fromkeys(
            f.description for f in fixes if any(e in edits for e in f.edits)))})
    others = tuple(dict.fromkeys(a.optimizer for a in group[1:] if a.optimizer != head.optimizer))
    more = [ln for ln in lines if ln not in head.lines]
    note = (f" The same fix covers line{'s' if len(more) != 1 else ''} {', '.join(map(str, more))}." if more else "")
    note += f" ({', '.join(others)} found the same change.)" if others else ""
    message = head.message if estimate is head.estimate else restated(head.message, estimate, "the merged items together")
    return head.model_copy(update={"lines": lines, "importance": importance, "estimate": estimate, "fix": fix,
                                   "changes": tuple(sorted({pc for a in group for pc in a.changes})),
                                   "also": others, "message": message + note,
                                   "hotspots": tuple(dict.fromkeys(h for a in group for h in a.hotspots))})


def _overlap(a: SourceEdit, b: SourceEdit) -> bool:
    return (a.line, a.col) < (b.end_line, b.end_col) and (b.line, b.col) < (a.end_line, a.end_col) or \
        (a.line, a.col) == (b.line, b.col)


def advise(context: AnalysisContext, profiles: Profile | Sequence[KernelProfile] | None = None, *,
           facts: Mapping[str, Sequence[StaticFact]] | None = None, roofline_model: RooflineModel | None = None,
           sensitivity: Mapping[str, Any] | None = None, what_if: Mapping[str, Any] | None = None,
           memory: Mapping[str, Mapping[int, Any]] | None = None,
           optimizers: Iterable[Optimizer] = REGISTRY) -> tuple[Advice, ...]:
    """Ranked advice for every kernel of `context.program`, whose source is `context.text`.

    `profiles` may be modeled or measured; `facts`, `sensitivity`, `what_if` and `memory` (the
    walked warp's memory shapes by pc, `static_facts.KernelFacts.memory`) are keyed by the kernel's
    mangled name.
    """
    program = context.program
    kprofs = profiles.kernels if isinstance(profiles, Profile) else tuple(profiles or ())
    lines = tuple(context.text.splitlines())
    optimizers = tuple(optimizers)
    found: dict[str, Advice] = {}
    by_kernel: dict[str, KernelProfile] = {}
    for k in kprofs:  # the first profile of each kernel
        by_kernel.setdefault(k.kernel, k)
    for fn in program.kernels:
        prof = by_kernel.get(fn.mangled)
        ctx = kernel_context(context, fn, prof, facts=(facts or {}).get(fn.mangled, ()), source_lines=lines,
                             roofline_model=roofline_model,
                             sensitivity=(sensitivity or {}).get(fn.mangled),
                             what_if=(what_if or {}).get(fn.mangled), memory=(memory or {}).get(fn.mangled))
        elsewhere = _defined_elsewhere(fn, program.source_path)
        for a in merge_same_fix(run_optimizers(ctx, optimizers), ctx):
            if a.estimate.speedup >= MIN_SPEEDUP:
                if elsewhere is not None:  # its lines are that file's; an edit built here would be this file's
                    a = a.model_copy(update={"file": elsewhere, "fix": None, "columns": None})
                found.setdefault(a.id, a)
    return tuple(sorted(found.values(), key=rank_key))


def _defined_elsewhere(function: FunctionProgram, source_path: str) -> str | None:
    """The file a kernel is defined in when it is not `source_path` (an included `.cu`): where its
    instructions' outermost line is, the file whose lines its advice names (`base.kernel_line`)."""
    file = next((f for i in function.sass.instructions if (f := outer_file(i)) is not None), None)
    return None if file is None or same_path(file, source_path) else file
