"""Code lens above each kernel: bound, roofline, occupancy and the best predicted speedup."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from kernelscope.analysis import application
from kernelscope.analysis.application import Advice, KernelReport
from kernelscope.analysis.reports import markdown as render
from kernelscope.analysis.reports import sms_used

from ..tracking import ResultView

SHOW_REPORT = "kernelscope.showReport"


def title(view: ResultView, k: KernelReport, shown: Sequence[Advice]) -> str:
    """`shown`: the file's advice as the editor shows it (with what verification said)."""
    parts = []
    if k.bound:
        parts.append(k.bound_label)
    if k.roofline_fraction is not None:
        parts.append(f"{render.pct(k.roofline_fraction)} of roofline")
    if k.occupancy is not None:
        parts.append(f"occupancy {render.pct(k.occupancy.occupancy)} ({k.occupancy.limiter.replace('_', ' ')})")
        if (used := sms_used(k)) is not None:
            parts.append(f"grid fills {used[0]}/{used[1]} SMs")
    else:
        parts.append(f"{k.resources.registers} registers, occupancy n/a (launch unknown)")
    mine = [a for a in shown if a.kernel == k.mangled and not a.no_modeled_gain]
    best = max(mine, key=lambda a: a.speedup, default=None)
    if best is not None:
        label = "verified" if best.verification == "verified" and best.verified_speedup else "est."
        parts.append(f"best fix {label} {best.speedup:.2f}×")
    if render.launch_assumed(k):
        parts.append("launch assumed")
    parts.append(render.kind(view.result))
    return " · ".join(parts)


def build(view: ResultView, uri: str, shown: Sequence[Advice] | None = None) -> list[types.CodeLens]:
    """A lens above each kernel; `shown`: the advice with verified figures (default: none verified yet)."""
    if shown is None:
        shown = application.shown_advice(view.result, ())
    out: list[types.CodeLens] = []
    for k in view.result.kernels:
        rng = view.range(k.line)
        if rng is None:
            continue
        out.append(types.CodeLens(range=rng, command=types.Command(
            title=title(view, k, shown), command=SHOW_REPORT, arguments=[uri, k.mangled])))
    return out


def report(view: ResultView, kernel: str) -> str | None:
    """The kernel's Markdown report, for `kernelscope.showReport`; clients display the returned text."""
    k = view.result.kernel(kernel)
    return None if k is None else render.kernel_summary(view.result, k)
