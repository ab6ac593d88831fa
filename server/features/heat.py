"""`kernelscope.lineHeat(uri)`: every line that costs its kernel at least 1 % of the samples, where
that line is in the buffer now, as data for an editor's heat decoration (VS Code's
`kernelscope.heat.style` colours the gutter or the line by it). The shares are the inlay hints'
(`inlay.hot_lines`); only the threshold differs: a heat map shades warm lines too."""

from __future__ import annotations

from typing import Any

from kernelscope.analysis.reports import provenance_kind

from ..tracking import ResultView
from .inlay import hot_lines, top_reason

LINE_HEAT = "kernelscope.lineHeat"

#: below this share a line is left unshaded
MIN_SHARE = 0.01


def build(view: ResultView) -> dict[str, Any]:
    """{kind, lines: [{line (0-based, now), share (0..1 of its kernel's samples), reason, kernel}]}."""
    return {"kind": provenance_kind(view.result),
            "lines": [{"line": r.start.line, "share": round(share, 4), "reason": top_reason(lr.samples),
                       "kernel": k.name}
                      for k, lr, share, r in hot_lines(view, MIN_SHARE)]}
