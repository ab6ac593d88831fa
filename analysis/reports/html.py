"""A self-contained HTML report: per kernel the roofline (inline SVG), the per-line table and the advice.

No scripts, fonts or images are fetched: the file opens offline and can be attached to a ticket.
"""

from __future__ import annotations

from html import escape

from ..machine.arch import ArchCatalog, ArchSpecError, load_arch_specs
from ..results import AnalysisResult, KernelReport
from .chart import roofline_chart
from .text import COMMAND_LINE_FIX, advice_order, assumed_values, in_source_order, launch_source, occupancy_text

_CSS = """
body{font:14px/1.45 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;
vertical-align:top}th{background:#f6f6f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:SFMono-Regular,Consolas,monospace;font-size:12.5px}.bar{background:#e76f51;height:8px}
.advice{border-left:4px solid #1d3557;padding:4px 12px;margin:10px 0;background:#fafbfd}
.prov{color:#666;font-size:12px}.est{font-weight:bold;color:#1d3557}
"""


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _roofline(result: AnalysisResult, catalog: ArchCatalog | None) -> str:
    """The chart whenever a kernel was modeled or measured: one with no arithmetic (a copy, an
    integer hash) has no point, and the chart says so and why rather than vanishing."""
    if not result.rooflines:
        return ""
    try:
        return roofline_chart(result, catalog if catalog is not None else load_arch_specs())
    except ArchSpecError:  # a device only a user's arch file names: no chart rather than no report
        return ""


def _kernel(result: AnalysisResult, k: KernelReport, src: list[str]) -> str:
    r = k.resources
    rows = [("registers", str(r.registers)), ("shared memory", f"{r.static_smem} B static"),
            ("spills", f"{r.spill_stores} B stores / {r.spill_loads} B loads")]
    if k.launch:
        rows.append(("launch", f"grid {k.launch.grid}, block {k.launch.block} [{launch_source(k)}]"))
    if k.measured_duration_s is not None:
        dev = result.profile.provenance.device if result.profile else "the report's device"
        rows.append(("measured", f"{k.measured_duration_s * 1e6:.1f} µs on {dev}"))
    if k.predicted_duration_s:
        rows.append(("predicted", f"{k.predicted_duration_s * 1e6:.1f} µs (modeled, {result.device})"))
    if assumed := assumed_values(k):
        rows.append(("assumed", ", ".join(f"{a.name.replace('@', ' at ')} = {a.value}" for a in assumed)
                     + f" (defaults: {COMMAND_LINE_FIX})"))
    if k.occupancy:  # the text report's words: theoretical, and how the grid fills the device
        rows.append(("occupancy", occupancy_text(k)))
    if k.bound:
        rows.append(("bound", f"{k.bound_label}" + (f", {_pct(k.roofline_fraction)} of roofline" if k.roofline_fraction else "")
                     + (" [measured]" if k.measured_duration_s is not None else " [modeled]")))
    if k.instruction_mix:
        rows.append(("instruction mix", ", ".join(f"{n} {c}" for n, c in sorted(k.instruction_mix.items(),
                                                                                key=lambda kv: -kv[1]))))
    out = [f"<h2>{escape(k.name)}</h2><table>"]
    out += [f"<tr><th>{escape(a)}</th><td>{escape(b)}</td></tr>" for a, b in rows]
    out.append("</table>")
    has = any(lr.share > 0 for lr in k.lines)
    total_cost = sum(lr.static_cost for lr in k.lines) or 1.0
    lines = sorted(k.lines, key=lambda lr: -(lr.share if has else lr.static_cost / total_cost))[:15]
    if lines:
        out.append(f"<h3>Lines by {'share of samples (Starlight Eq. 2)' if has else 'static issue cost'}</h3>"
                   "<table><tr><th>line</th><th>share</th><th></th><th>top stall reasons</th><th>source</th></tr>")
        for lr in lines:
            share = lr.share if has else lr.static_cost / total_cost
            tot = sum(lr.samples.values()) or 1.0
            reasons = ", ".join(f"{n.replace('_', ' ')} {v / tot:.0%}" for n, v in
                                sorted(lr.samples.items(), key=lambda kv: -kv[1])[:3])
            text = src[lr.line - 1].strip() if 0 < lr.line <= len(src) else ""
            out.append(f"<tr><td class=num>{lr.line}</td><td class=num>{_pct(share)}</td>"
                       f"<td><div class=bar style='width:{max(1, int(share * 160))}px'></div></td>"
                       f"<td>{escape(reasons)}</td><td><code>{escape(text)}</code></td></tr>")
        out.append("</table>")
    adv = advice_order(result, k)
    if adv:
        out.append("<h3>Advice</h3>")
    for a in adv:
        hs = "".join(f"<li>{escape(h.def_opcode)} line {h.def_line} → {escape(h.use_opcode)} line {h.use_line}, "
                     f"distance {h.distance}, {h.samples:.0f} samples ({escape(h.category)})</li>" for h in a.hotspots)
        fix = f"<p>Fix: {escape(a.fix.description)}</p>" if a.fix else ""
        out.append(f"<div class=advice><b>{escape(a.title)}</b> — {escape(a.where)} "
                   f"<span class=est>est. {a.speedup:.2f}×</span> <span class=prov>{escape(a.estimate.formula)}; "
                   f"{_pct(a.importance)} {escape(a.importance_basis)}; {a.provenance}"
                   f"{'; ' + escape(a.rests_on) if a.rests_on else ''}</span><p>{escape(a.message)}</p>{fix}"
                   + (f"<ul>{hs}</ul>" if hs else "") + "</div>")
    return "\n".join(out)


def render_html(result: AnalysisResult, source_text: str | None = None, catalog: ArchCatalog | None = None) -> str:
    """The page. `catalog`: the arch catalog the analysis used (`application.arch_catalog`), so the
    chart's ceilings are the device's the analysis assumed, a user's arch file included; without
    it, the built-in catalog (a result rendered on its own)."""
    if source_text is None:
        try:
            with open(result.source, encoding="utf-8", errors="replace") as fh:
                source_text = fh.read()
        except OSError:
            source_text = ""
    src = source_text.splitlines()
    prov = result.profile.provenance.summary if result.profile else "static analysis only (no profile)"
    body = [f"<h1>kernelscope — {escape(result.source)}</h1>",
            f"<p class=prov>{escape(result.arch)}, {escape(result.device)}; {escape(prov)}</p>"]
    svg = _roofline(result, catalog)
    if svg:
        body.append(f"<figure>{svg}</figure>")
    body += [_kernel(result, k, src) for k in in_source_order(result.kernels)]
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>kernelscope report</title>"
            f"<style>{_CSS}</style></head><body>" + "\n".join(body) + "</body></html>")
