"""`kernelscope.roofline`: the file's kernels on one roofline chart, from the result on screen
(`analysis/reports/chart.py` draws it; the HTML report uses the same chart)."""

from __future__ import annotations

from typing import Any

from kernelscope.analysis import application
from kernelscope.analysis.application import AnalysisOptions, AnalysisResult
from kernelscope.analysis.reports import provenance_kind

ROOFLINE = "kernelscope.roofline"


def build(result: AnalysisResult, options: AnalysisOptions) -> dict[str, Any]:
    """{svg, kind, device, kernels: [{kernel, name, precision, bound, fraction, bindingLevel, provenance, trajectory}]}.

    `precision` is what the kernel's points count: "fp32" (any floating-point precision first),
    "int32" for integer work alone, "none" for a memory-only kernel (intensity 0; `fraction` is
    then its best bandwidth utilisation), as in docs/cli.md#the-roofline-chart.

    Blocking (reads the arch catalogue): call it from an executor.
    """
    return {
        "svg": application.roofline_chart(result, application.arch_catalog(options.arch_file)),
        "kind": provenance_kind(result),
        "device": result.device,
        "kernels": [{"kernel": r.kernel, "name": r.name, "precision": r.precision, "bound": r.bound, "fraction": r.fraction,
                     "bindingLevel": r.binding_level, "provenance": r.provenance,
                     "trajectory": len(r.trajectory)} for r in result.rooflines],
    }
