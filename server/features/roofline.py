"""`kernelscope.roofline`: the file's kernels on one roofline chart, from the result on screen.

The chart is the pipeline's own `result.rooflines` (each kernel's points at every memory level
and, for modeled kernels, its SM-scaling trajectory), drawn against the ceilings of the device
the analysis assumed, so the chart and the diagnostics can never disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelscope.analysis.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.results import AnalysisResult
from kernelscope.analysis.roofline import roofline_model, roofline_svg

ROOFLINE = "kernelscope.roofline"


def kind(result: AnalysisResult) -> str:
    """"measured", "modeled", "measured and modeled" (a report that covers some kernels) or "static"."""
    kinds = sorted({r.provenance for r in result.rooflines})
    return " and ".join(kinds) if kinds else "static"


def build(result: AnalysisResult, options: AnalysisOptions) -> dict[str, Any]:
    """{svg, kind, device, kernels: [{kernel, name, bound, fraction, bindingLevel, provenance, trajectory}]}.

    Blocking (reads the arch catalogue): call it from an executor.
    """
    catalog = load_arch_specs(options.arch_file)
    model = roofline_model(catalog, catalog.device(result.device))
    title = f"Roofline — {Path(result.source).name} on {result.device} ({kind(result)})"
    return {
        "svg": roofline_svg(model, result.rooflines, title=title),
        "kind": kind(result),
        "device": result.device,
        "kernels": [{"kernel": r.kernel, "name": r.name, "bound": r.bound, "fraction": r.fraction,
                     "bindingLevel": r.binding_level, "provenance": r.provenance,
                     "trajectory": len(r.trajectory)} for r in result.rooflines],
    }
