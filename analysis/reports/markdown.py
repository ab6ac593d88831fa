"""The editor's Markdown: hovers, a kernel's report (`kernelscope.showReport`), an advice
explained, a verification's one line. The language server wraps these in lsprotocol types; the
facts they print are text.py's (launch, grid fill, assumed values) so the editor and the command
line say the same thing.

Every number says where it came from (modeled or measured, which device, which
assumptions), because a modeled 30 % and a measured 30 % deserve different trust.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..advisor.advice import Advice
from ..frontend.kernel_names import base_name
from ..prediction_error import model_error
from ..results import AnalysisResult, KernelReport, LineReport
from . import docs
from .text import advice_order, assumed_values, grid_fill

if TYPE_CHECKING:  # verification's module loads the fix machinery (tree-sitter): not for a hover
    from ..advisor.verify import Verification

#: SASS lines shown in a hover; a long unrolled line would otherwise fill the screen
MAX_SASS = 16
MAX_STALLS = 6


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def short_name(kernel: KernelReport) -> str:
    """`saxpy` for `saxpy(int, float, float const*, float*)`: the identifier a user types."""
    return base_name(kernel.name)


def provenance(result: AnalysisResult) -> str:
    p = result.profile.provenance if result.profile is not None else None
    if p is None:
        return f"static (no profile), {result.arch}, device {result.device}"
    return f"{p.kind} with {p.tool} {p.tool_version} on {p.device} ({p.arch})"


def kind(result: AnalysisResult) -> str:
    return result.profile.provenance.kind if result.profile is not None else "static"


def kernel_kind(result: AnalysisResult, kernel: KernelReport) -> str:
    """Where this kernel's numbers come from: a report may cover some kernels of a file and not others."""
    if kernel.measured_duration_s is not None:
        return "measured"
    return "modeled" if kernel.predicted_duration_s is not None else kind(result).replace("measured", "modeled")


def seconds(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def duration(kernel: KernelReport) -> str | None:
    """"duration 1.20 ms measured · 0.95 ms predicted": the honesty check, side by side."""
    parts = []
    if kernel.measured_duration_s is not None:
        parts.append(f"{seconds(kernel.measured_duration_s)} measured")
    if kernel.predicted_duration_s is not None:
        err = model_error()
        parts.append(f"{seconds(kernel.predicted_duration_s)} predicted" + (f" ({err.note()})" if err else ""))
    return "duration " + " · ".join(parts) if parts else None


def _has_measured_lines(kernel: KernelReport) -> bool:
    return any(lr.share > 0 for lr in kernel.lines)


def share(kernel: KernelReport, line: LineReport, k: str) -> str:
    """The line's share of the kernel's samples, each number with its kind."""
    below = (f", plus **{pct(line.callee_share)}** in the functions it calls" if line.callee_share >= 0.005 else "")
    if line.modeled_share is None:
        return f"**{pct(line.share)}** of the kernel's samples ({k}){below}"
    measured = f"**{pct(line.share)}** measured" if _has_measured_lines(kernel) else \
        "measured n/a (the report has no line information: profile a `-lineinfo` build)"
    return f"hotspot {measured} · {pct(line.modeled_share)} modeled, of the kernel's samples{below}"


def occupancy(kernel: KernelReport) -> str:
    occ = kernel.occupancy
    if occ is None:
        return "occupancy n/a"
    text = f"occupancy {pct(occ.occupancy)} theoretical (limited by {occ.limiter.replace('_', ' ')}, block {occ.block_size})"
    fill = grid_fill(kernel)
    return f"{text}; {fill}" if fill else text


def resources(kernel: KernelReport) -> str:
    r = kernel.resources
    parts = [f"{r.registers} registers"]
    if r.static_smem:
        parts.append(f"{r.static_smem} B shared")
    if r.spill_stores or r.spill_loads:
        parts.append(f"spills {r.spill_stores} B stored / {r.spill_loads} B loaded")
    return ", ".join(parts)


def assumptions(kernel: KernelReport) -> str:
    if not kernel.assumptions:
        return ""
    # A default is not a fact about the user's code: say "assumed" beside it (#14 item 5).
    items = "; ".join(f"{a.name} = {a.value} ({'assumed' if a.source == 'default' else a.source})"
                      for a in kernel.assumptions[:8])
    more = f"; +{len(kernel.assumptions) - 8} more" if len(kernel.assumptions) > 8 else ""
    return f"Assumptions: {items}{more}"


def stall_table(line: LineReport, k: str = "") -> list[str]:
    total = sum(line.samples.values())
    if total <= 0:
        return []
    top = sorted(line.samples.items(), key=lambda kv: -kv[1])[:MAX_STALLS]
    rows = [f"| stall reason{f' ({k})' if k else ''} | share of line |", "|---|---:|"]
    rows += [f"| {reason.replace('_', ' ')} | {pct(n / total)} |" for reason, n in top]
    return rows


def advice_line(a: Advice) -> str:
    """"- **Tile through shared memory** — est. 2.62× ([Starlight Eq. 3](…advisor.md#L104), modeled)"."""
    eq = docs.cited(a.estimate.formula) if a.verified_speedup is None else None  # a verified figure cites no equation
    return f"- **{a.title}** — est. {a.speedup:.2f}× ({f'{eq}, ' if eq else ''}{a.provenance})"


def line_hover(result: AnalysisResult, kernel: KernelReport, line: LineReport | None, line1: int,
               advice: list[Advice]) -> str:
    k = kernel_kind(result, kernel)
    out = [f"**kernelscope** · line {line1} in `{short_name(kernel)}`"]
    if line is not None:
        out[0] += f" — {share(kernel, line, k)}"
        out += ["", *stall_table(line, k)]
    if advice:
        out += ["", *map(advice_line, advice)]
    if line is not None and line.sass:
        shown = line.sass[:MAX_SASS]
        more = [f"// … {len(line.sass) - MAX_SASS} more"] if len(line.sass) > MAX_SASS else []
        out += ["", "```sass", *shown, *more, "```"]
    out += ["", f"`{short_name(kernel)}`: {resources(kernel)}; {occupancy(kernel)}"
            + (f"; {d}" if (d := duration(kernel)) else ""), "", f"Provenance: {provenance(result)}"]
    if a := assumptions(kernel):
        out += ["", a]
    return "\n".join(out)


def best_first(advice: Iterable[Advice]) -> list[Advice]:
    """A line's advice as its hover lists it: highest (verified, else estimated) speedup first, as
    `text.advice_order` orders a kernel's."""
    return sorted(advice, key=lambda a: -a.speedup)


def kernel_summary(result: AnalysisResult, kernel: KernelReport) -> str:
    out = [f"### `{kernel.name}`", ""]
    facts = []
    k = kernel_kind(result, kernel)
    if kernel.bound:
        facts.append(f"**{kernel.bound_label}** ({k})")
    if kernel.bottleneck:
        facts.append(f"bottleneck {kernel.bottleneck} (sensitivity, {k})")
    if kernel.roofline_fraction is not None:
        facts.append(f"{pct(kernel.roofline_fraction)} of roofline ({k})")
    if d := duration(kernel):
        facts.append(d)
    if facts:
        out += [" · ".join(facts), ""]
    out += [f"- {resources(kernel)}", f"- {occupancy(kernel)}"]
    if kernel.launch is not None:
        out.append(f"- launch grid {kernel.launch.grid}, block {kernel.launch.block}")
    both = any(lr.modeled_share is not None for lr in kernel.lines)
    hot = sorted(kernel.lines, key=lambda lr: -(lr.share or lr.modeled_share or 0.0))[:5]
    if hot and any(lr.share > 0 or (lr.modeled_share or 0) > 0 for lr in hot):
        if both:
            out += ["", "| line | share (measured) | share (modeled) | top stall (measured) |", "|---:|---:|---:|---|"]
        else:
            out += ["", f"| line | share ({k}) | top stall |", "|---:|---:|---|"]
        for lr in hot:
            top = max(lr.samples.items(), key=lambda kv: kv[1])[0].replace("_", " ") if lr.samples else ""
            measured = pct(lr.share) if _has_measured_lines(kernel) else "n/a"
            out.append(f"| {lr.line} | {measured} | {pct(lr.modeled_share)} | {top} |" if both
                       else f"| {lr.line} | {pct(lr.share)} | {top} |")
    mine = advice_order(result, kernel)  # the order of every report
    if mine:
        out += ["", "**Advice**", *(f"{advice_line(a)}, {a.where}" for a in mine)]
    out += ["", f"Provenance: {provenance(result)}"]
    if a := assumptions(kernel):
        out += ["", a]
    return "\n".join(out)


def explanation(a: Advice) -> str:
    out = [f"### {a.title}", "", f"[{a.provenance}] {a.message}", "",
           f"Estimated speedup {a.speedup:.2f}× — {a.estimate.formula}"]
    if a.estimate.inputs:
        out.append("; ".join(f"{k} = {v:g}" for k, v in a.estimate.inputs.items()))
    if a.fix is not None:
        out += ["", f"Fix: {a.fix.description}"]
    return "\n".join(out)


def verification(v: Verification) -> str:
    """One line for window/showMessage after `kernelscope.verifyAdvice`: the re-modeled figure first."""
    if v.status == "does_not_compile":
        return f"kernelscope: {v.kernel}: the fix does not compile ({v.reason})"
    figure = f"{v.verified_speedup:.2f}×" if v.verified_speedup is not None else "n/a"
    times = (f" ({seconds(v.baseline_s)} → {seconds(v.new_s)})"
             if v.baseline_s is not None and v.new_s is not None else "")
    measured = f", measured {v.measured_speedup:.2f}×" if v.measured_speedup is not None else ""
    return f"kernelscope: {v.kernel}: {v.status.replace('_', ' ')}, re-modeled {figure}{times}{measured}. {v.reason}"


def launch_assumed(kernel: KernelReport) -> bool:
    """The grid or block the model used is the default, not read from the code, a capture or a setting."""
    return any(a.name in ("grid", "block") for a in assumed_values(kernel))
