"""The roofline chart of one analysis result, shared by the HTML report and the editor's chart view.

It draws the pipeline's own `result.rooflines` (each kernel's points at every memory level and, for
modeled kernels, its SM-scaling trajectory) against the ceilings of the device the analysis assumed,
so a chart can never disagree with the diagnostics it sits beside. The roofline model itself (ceilings,
points, bound) is `machine/roofline.py`; this module only draws it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape as _html_escape
from pathlib import Path

from ..frontend.kernel_names import without_parameters
from ..machine.arch import ArchCatalog, MemoryLevel, Precision
from ..machine.roofline import LABELS, MEMORY_ONLY, Ceiling, KernelRoofline, RooflineModel, roofline_model
from ..results import AnalysisResult


def provenance_kind(result: AnalysisResult) -> str:
    """"measured", "modeled", "measured and modeled" (a report that covers some kernels) or "static"."""
    kinds = sorted({r.provenance for r in result.rooflines})
    return " and ".join(kinds) if kinds else "static"


def roofline_chart(result: AnalysisResult, catalog: ArchCatalog) -> str:
    """The chart as a standalone SVG (the device's ceilings alone when no kernel has a point)."""
    model = roofline_model(catalog, catalog.device(result.device))
    title = f"Roofline — {Path(result.source).name} on {result.device} ({provenance_kind(result)})"
    return roofline_svg(model, result.rooflines, title=title)


def escape(text: str) -> str:
    """&, < and > as XML entities (xml.sax.saxutils.escape, without its import of urllib and ssl)."""
    return _html_escape(text, quote=False)


_MEM_COLORS = {"l1": "#2a9d8f", "shared": "#8ab17d", "l2": "#e9c46a", "dram": "#e76f51"}
_COMP_COLORS = {"fp64": "#264653", "fp32": "#1d3557", "fp16": "#457b9d", "int32": "#6d597a", "tensor_fp16": "#9d4edd"}
_POINT_COLORS = ("#d62828", "#003049", "#f77f00", "#588157", "#7209b7", "#3a0ca3")


def _fmt_rate(v: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if v >= scale:
            return f"{v / scale:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def _marker(level: str, cx: float, cy: float) -> tuple[str, str]:
    """One marker shape per memory level, so the points of one kernel read apart at a glance."""
    if level == "l2":
        return "rect", f'x="{cx - 4.5:.1f}" y="{cy - 4.5:.1f}" width="9" height="9"'
    if level == "l1":
        return "polygon", f'points="{cx:.1f},{cy - 6:.1f} {cx + 6:.1f},{cy:.1f} {cx:.1f},{cy + 6:.1f} {cx - 6:.1f},{cy:.1f}"'
    if level == "shared":
        return "polygon", f'points="{cx:.1f},{cy - 6:.1f} {cx + 6:.1f},{cy + 5:.1f} {cx - 6:.1f},{cy + 5:.1f}"'
    return "circle", f'cx="{cx:.1f}" cy="{cy:.1f}" r="5"'


_ROW = 17  # px per line of the notes and of the bandwidth panel (14 px text)
_BAR_W = 110  # px of a full bandwidth bar


def _note(k: KernelRoofline) -> list[str]:
    """Why `k` (not memory-only, see `_bandwidth_row`) has no point, in lines that fit the plot's width."""
    name = without_parameters(k.name)
    if k.precision == MEMORY_ONLY:
        return [f"{name}: no operations and", "no memory traffic modeled"]
    if not k.points:
        return [f"{name}: no memory traffic,", "so no intensity to place"]
    return [f"{name}: no duration,", "so no point here"]


def _bandwidth_row(k: KernelRoofline, y: float, width: int) -> str:
    """A memory-only kernel's bytes/s at its binding level (its best bandwidth utilisation, see
    `classify`) as a bar filled to that level's bandwidth; every level's figure is in the tooltip."""
    p = next((q for q in k.points if q.level == k.binding_level),
             max(k.points, key=lambda q: q.bandwidth))  # no level with a slope: the busiest
    color = _MEM_COLORS.get(p.level, "#999")
    level = LABELS[MemoryLevel(p.level)]
    frac = p.bandwidth / p.peak_bandwidth if p.peak_bandwidth else None
    value = (f"{100 * frac:.0f} % of {_fmt_rate(p.peak_bandwidth, 'B/s')}" if frac is not None  # type: ignore[arg-type]
             else f"{_fmt_rate(p.bandwidth, 'B/s')} (no slope)")
    name = without_parameters(k.name)
    name = name if len(name) <= 22 else name[:21] + "…"
    tip = "; ".join(f"{LABELS[MemoryLevel(q.level)]} {_fmt_rate(q.bandwidth, 'B/s')}"
                    + (f" = {100 * q.bandwidth / q.peak_bandwidth:.0f} %" if q.peak_bandwidth else "")
                    for q in k.points)
    x_level, x_bar = 226, 300  # name column, then level, bar and value
    tag, attrs = _marker(p.level, x_level, y - 5)
    fill = (f'<rect x="{x_bar}" y="{y - 10}" width="{_BAR_W * min(frac, 1.0):.1f}" height="11" fill="{color}"/>'
            if frac is not None else "")
    return (f'<g class="bandwidth-bar" data-kernel="{escape(k.name).replace(chr(34), "&quot;")}" data-level="{p.level}"'
            + (f' data-fraction="{frac:.4f}"' if frac is not None else "") + '>'
            f'<title>{escape(k.name)}: intensity 0, {k.bound or "unclassified"}'
            f'{"-bound" if k.bound else ""} ({k.provenance}); {tip}</title>'
            f'<text x="20" y="{y}">{escape(name)}</text>'
            f'<{tag} {attrs} fill="{color}" stroke="white"/>'
            f'<text x="{x_level + 9}" y="{y}" fill="{color}">{level}</text>'
            f'<rect x="{x_bar}" y="{y - 10}" width="{_BAR_W}" height="11" fill="#f1f1f1" stroke="{color}"/>{fill}'
            f'<text x="{width - 14}" y="{y}" text-anchor="end">{escape(value)}</text></g>')


def _merge_twins(ceilings: Sequence[Ceiling]) -> list[Ceiling]:
    """Ceilings of equal value share one line and one label ("L1 / Shared", "FP64 / INT32")."""
    out: list[Ceiling] = []
    for c in ceilings:
        twin = next((i for i, o in enumerate(out) if math.isclose(o.value, c.value, rel_tol=1e-9)), None)
        if twin is None:
            out.append(c)
        else:
            out[twin] = out[twin].model_copy(update={"label": f"{out[twin].label} / {c.label}"})
    return out


def roofline_svg(model: RooflineModel, kernels: Sequence[KernelRoofline] = (), *, title: str | None = None,
                 width: int = 600, height: int = 440, precisions: Sequence[str] | None = None) -> str:
    """A self-contained log-log roofline: labelled axes, ceilings, ridge points, kernel points, trajectories."""
    shown_p = list(precisions) if precisions else sorted(
        {k.precision for k in kernels} | {"fp32", "fp64"}, key=lambda p: [c.name for c in model.compute].index(p)
        if p in [c.name for c in model.compute] else 99)
    # Levels with the same bandwidth (L1 and shared are one SRAM) share one slope and label, and
    # roofs of the same rate (FP64 and INT32 on the H100) one line.
    comp = _merge_twins([c for c in model.compute if c.name in shown_p])
    mem = _merge_twins(model.memory)
    top = max((c.value for c in comp), default=1e12)
    # Axis ranges: decades that hold every ridge, point and roof (a memory-only kernel's intensity
    # 0 has no place on a log axis: it is drawn in the bandwidth panel below the plot).
    xs = [r for c in comp for m in mem if (r := c.value / m.value) > 0]
    xs += [p.intensity for k in kernels for p in k.points if p.intensity > 0]
    xs += [t.intensity for k in kernels for t in k.trajectory]
    ys = [c.value for c in comp] + [p.performance for k in kernels for p in k.points if p.performance > 0]
    ys += [t.performance for k in kernels for t in k.trajectory if t.performance > 0]
    x_lo = 10 ** math.floor(math.log10(max(min(xs, default=0.01), 1e-6)) - 1)
    x_hi = 10 ** math.ceil(math.log10(max(xs, default=100)) + 0.5)
    y_hi = 10 ** math.ceil(math.log10(top * 1.5))
    y_lo = 10 ** math.floor(math.log10(max(min(ys, default=top / 1e4), 1.0)) - 0.5)
    y_lo = min(y_lo, y_hi / 1e3)
    # A memory-only kernel (no operations: intensity 0) gets a row of the bandwidth panel below the
    # plot; any other kernel without a point is named at the plot's bottom right, below the
    # slowest slope (the y axis reaches down far enough to leave them that room).
    memory_only = [k for k in kernels if k.precision == MEMORY_ONLY and k.points]
    unplaced = [k for k in kernels if not any(p.performance > 0 for p in k.points) and k not in memory_only]
    notes = [_note(k) for k in unplaced]
    plot_height = height
    if memory_only:
        height += 2 * _ROW + _ROW * len(memory_only) + 4
    # Text is sized for the editor's panel, which scales the chart down to its width: a VS Code
    # webview beside a 1400 px editor is ~480 px wide, a factor 0.8, so 14 px text reads as 11 px
    # there (tests/lsp/test_features.py checks the chart the server sends).
    ml, mr, mt, mb = 86, 190, 44 if title else 20, 60
    pw, ph = width - ml - mr, plot_height - mt - mb
    if notes and mem:  # room for them under the slowest slope, where no ceiling is drawn
        need = _ROW * sum(len(n) for n in notes) + 8 * (len(notes) - 1) + 16
        floor_y = min(m.value for m in mem) * x_lo  # the slowest slope at the left edge
        for _ in range(8):
            if ph * math.log10(floor_y / y_lo) / math.log10(y_hi / y_lo) >= need:
                break
            y_lo /= 10

    def X(v: float) -> float:
        return ml + (math.log10(v) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo)) * pw

    def Y(v: float) -> float:
        return mt + ph - (math.log10(v) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'font-family="Helvetica, Arial, sans-serif" font-size="15" role="img" aria-label="Roofline">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="17" font-weight="bold">{escape(title)}</text>')
    out.append(f'<g class="grid" stroke="#e6e6e6" stroke-width="1">')
    for e in range(round(math.log10(x_lo)), round(math.log10(x_hi)) + 1):
        out.append(f'<line x1="{X(10 ** e):.1f}" y1="{mt}" x2="{X(10 ** e):.1f}" y2="{mt + ph}"/>')
    for e in range(round(math.log10(y_lo)), round(math.log10(y_hi)) + 1):
        out.append(f'<line x1="{ml}" y1="{Y(10 ** e):.1f}" x2="{ml + pw}" y2="{Y(10 ** e):.1f}"/>')
    out.append('</g>')
    out.append(f'<g class="axes" stroke="#333" fill="#333"><rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none"/>')
    for e in range(round(math.log10(x_lo)), round(math.log10(x_hi)) + 1):
        out.append(f'<text x="{X(10 ** e):.1f}" y="{mt + ph + 18}" text-anchor="middle" stroke="none">{10.0 ** e:g}</text>')
    for e in range(round(math.log10(y_lo)), round(math.log10(y_hi)) + 1):
        out.append(f'<text x="{ml - 6}" y="{Y(10 ** e) + 4:.1f}" text-anchor="end" stroke="none">{_fmt_rate(10.0 ** e, "")}</text>')
    out.append(f'<text x="{ml + pw / 2:.1f}" y="{plot_height - 14}" text-anchor="middle" stroke="none" font-size="15">'
               f'Operational intensity (operations / byte)</text>')
    out.append(f'<text x="18" y="{mt + ph / 2:.1f}" text-anchor="middle" stroke="none" font-size="15" '
               f'transform="rotate(-90 18 {mt + ph / 2:.1f})">Performance (operations / s)</text></g>')
    # Bandwidth slopes run from the left edge to the ridge with the highest shown roof.
    out.append('<g class="ceilings">')
    for m in mem:
        color = _MEM_COLORS.get(m.name, "#999")
        x0, x1 = x_lo, top / m.value
        y0 = m.value * x0
        if y0 < y_lo:
            x0 = y_lo / m.value
            y0 = y_lo
        out.append(f'<line class="ceiling memory" data-level="{m.name}" x1="{X(x0):.1f}" y1="{Y(y0):.1f}" '
                   f'x2="{X(x1):.1f}" y2="{Y(top):.1f}" stroke="{color}" stroke-width="2"/>')
        lx = max(x0 * 2, x_lo * 3)
        out.append(f'<text class="ceiling-label" x="{X(lx):.1f}" y="{Y(m.value * lx) - 6:.1f}" fill="{color}" '
                   f'transform="rotate({-math.degrees(math.atan2(Y(m.value * lx) - Y(m.value * lx * 10), X(lx * 10) - X(lx))):.1f} '
                   f'{X(lx):.1f} {Y(m.value * lx) - 6:.1f})">{escape(m.label)} {_fmt_rate(m.value, "B/s")}'
                   f'{" (measured)" if m.empirical else ""}</text>')
    for c in comp:
        color = _COMP_COLORS.get(c.name, "#333")
        x0 = min(c.value / max(m.value for m in mem), x_hi) if mem else x_lo
        out.append(f'<line class="ceiling compute" data-precision="{c.name}" x1="{X(x0):.1f}" y1="{Y(c.value):.1f}" '
                   f'x2="{ml + pw}" y2="{Y(c.value):.1f}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text class="ceiling-label" x="{ml + pw + 6}" y="{Y(c.value) + 4:.1f}" fill="{color}">'
                   f'{escape(c.label)} {_fmt_rate(c.value, "OP/s")}{" (measured)" if c.empirical else ""}</text>')
        for m in mem:  # ridge points
            r = c.value / m.value
            if x_lo < r < x_hi:
                out.append(f'<circle class="ridge" cx="{X(r):.1f}" cy="{Y(c.value):.1f}" r="3" fill="white" '
                           f'stroke="{_MEM_COLORS.get(m.name, "#999")}"><title>ridge {c.label}/{m.label}: {r:.3g} op/B</title></circle>')
    out.append('</g><g class="kernels">')
    placed: list[tuple[float, float, float]] = []  # kernel names drawn: (x, baseline y, width)
    for n, k in enumerate(kernels):
        color = _POINT_COLORS[n % len(_POINT_COLORS)]
        if len(k.trajectory) > 1:
            pts = " ".join(f"{X(t.intensity):.1f},{Y(t.performance):.1f}" for t in k.trajectory if t.performance > 0)
            out.append(f'<polyline class="trajectory" points="{pts}" fill="none" stroke="{color}" stroke-dasharray="4 3"/>')
            for t in k.trajectory:
                out.append(f'<circle cx="{X(t.intensity):.1f}" cy="{Y(t.performance):.1f}" r="2.5" fill="{color}">'
                           f'<title>{escape(k.name)} @ {escape(t.label)}</title></circle>')
        for p in k.points:
            if p.performance <= 0:
                continue
            cx, cy = X(p.intensity), Y(p.performance)
            tag, attrs = _marker(p.level, cx, cy)
            tip = (f"{escape(k.name)} — {LABELS[MemoryLevel(p.level)]}: {p.intensity:.3g} "
                   f"{LABELS[Precision(p.precision)]} op/B, {_fmt_rate(p.performance, 'OP/s')} ({k.provenance})")
            out.append(f'<g class="kernel-point" data-kernel="{escape(k.name).replace(chr(34), "&quot;")}" data-level="{p.level}">'
                       f'<{tag} {attrs} fill="{color}" stroke="white"><title>{tip}</title></{tag}></g>')
        named = next((p for p in k.points if p.level == "dram" and p.performance > 0),
                     next((p for p in k.points if p.performance > 0), None))
        if named is not None:  # one name per kernel; the marker shape tells the level
            x, y = X(named.intensity), Y(named.performance) - 7
            # an integer kernel's point is its INT32 ops (floating-point first, see `dominant_precision`)
            label = without_parameters(k.name) + (" (INT32)" if k.precision == Precision.int32.value else "")
            # left of the point when the name would run past the plot into the roofs' labels, and
            # inside the plot's left edge; moved down a line while it would cover an earlier name
            w = 0.62 * 15 * len(label)
            x0 = x + 8 if x + 8 + w <= ml + pw or x - 8 - w < ml else x - 8 - w
            x0 = max(ml + 2.0, min(x0, ml + pw - w))
            for _ in range(len(placed)):
                if not any(abs(y - py) < 16 and x0 < px + pw_ and px < x0 + w for px, py, pw_ in placed):
                    break
                y += 17
            placed.append((x0, y, w))
            out.append(f'<text class="kernel-label" x="{x0:.1f}" y="{y:.1f}" fill="{color}" font-weight="bold">'
                       f'{escape(label)}</text>')
    out.append('</g><g class="notes">')
    y = mt + ph - 10 - _ROW * (sum(len(n) for n in notes) - 1) - 8 * (len(notes) - 1)
    for lines in notes:
        out.append(f'<text class="no-point" x="{ml + pw - 8}" y="{y}" text-anchor="end" font-size="14" fill="#555">'
                   + "".join(f'<tspan x="{ml + pw - 8}" dy="{0 if j == 0 else _ROW}">{escape(t)}</tspan>'
                             + (" " if j < len(lines) - 1 else "") for j, t in enumerate(lines)) + '</text>')
        y += _ROW * len(lines) + 8
    out.append('</g>')
    if memory_only:  # the bandwidth panel: what a roofline of bytes alone says
        y = plot_height + _ROW
        out.append(f'<g class="bandwidth-panel" font-size="14" fill="#333">'
                   f'<line x1="14" y1="{plot_height - 2}" x2="{width - 14}" y2="{plot_height - 2}" stroke="#ccc"/>'
                   f'<text class="no-point" x="14" y="{y}" font-weight="bold">No operations, so intensity 0 '
                   f'(no point): achieved bandwidth</text>')
        for k in memory_only:
            y += _ROW
            out.append(_bandwidth_row(k, y, width))
        out.append('</g>')
    # Legend: point shapes per level, and the trajectory's line when one is drawn.
    # A level the catalogue has no bandwidth for still gets its points, but no slope: say so, or
    # a point floats beside no line of its colour.
    sloped = {m.name for m in model.memory}
    pointed = {p.level for k in kernels for p in k.points if p.performance > 0}
    entries = [f"{shape} {LABELS[MemoryLevel(lv)]} intensity" + (" (no slope)" if lv in pointed - sloped else "")
               for lv, shape in (("dram", "●"), ("l2", "■"), ("l1", "◆"), ("shared", "▲"))]
    has_trajectory = any(len(k.trajectory) > 1 for k in kernels)
    ly = mt + ph - 18 * (len(entries) + (3 if has_trajectory else 0)) - 4
    out.append(f'<g class="legend" font-size="14"><text x="{ml + pw + 6}" y="{ly}" font-weight="bold">points</text>')
    for i, text in enumerate(entries):
        out.append(f'<text x="{ml + pw + 6}" y="{ly + 18 * (i + 1)}">{text}</text>')
    if has_trajectory:
        y = ly + 18 * (len(entries) + 1) + 4
        out.append(f'<line class="legend-trajectory" x1="{ml + pw + 6}" y1="{y - 4}" x2="{ml + pw + 30}" y2="{y - 4}" '
                   f'stroke="#333" stroke-dasharray="4 3"/>'
                   f'<text x="{ml + pw + 34}" y="{y}">SM-scaling</text>'
                   f'<text x="{ml + pw + 34}" y="{y + 17}">trajectory (DRAM,</text>'
                   f'<text x="{ml + pw + 34}" y="{y + 34}">modeled, fewer SMs)</text>')
    out.append('</g></svg>')
    return "\n".join(out)
