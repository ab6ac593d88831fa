"""The roofline chart of one analysis result, shared by the HTML report and the editor's chart view.

It draws the pipeline's own `result.rooflines` (each kernel's points at every memory level and, for
modeled kernels, its SM-scaling trajectory) against the ceilings of the device the analysis assumed,
so a chart can never disagree with the diagnostics it sits beside.
"""

from __future__ import annotations

from pathlib import Path

from ..machine.arch import ArchCatalog
from ..machine.roofline import roofline_model, roofline_svg
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
