"""A default launch is said, never silent (issue #14 item 5), on a real program: How_to_optimize_in_GPU's
elementwise_add.cu defines `add` (line 14) and never launches it (main() launches only vec4_add), so
nothing in the program gives its launch. The text report, the hover's assumptions and the lens say
"assumed", and the kernel's diagnostic says why and how to give the real launch. (Until issue 31
this was sgemm.cu, then cuda_pipelining.cu, whose grids now fold: through the function pointer
main() passes, and through the member call with the program's default operator count.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.analysis.emulator.launch import GIVE_A_LAUNCH
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.reports.text import render_text
from kernelscope.analysis.reports import markdown as render

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
PROGRAM = REAL / "how-to-optimize-in-gpu" / "elementwise_add.cu"
KERNEL_LINE = 14
WHY = "no launch of `add` in this file or the files of its translation unit"


@pytest.fixture(scope="module")
def result(toolchain):
    flags = tuple(f.format(real=REAL) for f in json.loads((REAL / "build_flags.json").read_text())["*"])
    return analyze(PROGRAM, AnalysisOptions(flags=flags), depth="quick")


def _add(result):
    return next(k for k in result.kernels if k.name.split("(")[0].removeprefix("void ") == "add")


def test_the_kernels_diagnostic_says_the_launch_is_assumed_why_and_how_to_give_it(result):
    (note,) = [m for m in result.messages if "assumed launch" in m.message and m.line == KERNEL_LINE]
    assert (note.severity, note.source) == ("info", "kernelscope")
    assert "grid (1056, 1, 1)" in note.message and "block (256, 1, 1)" in note.message
    assert WHY in note.message and GIVE_A_LAUNCH in note.message


def test_the_text_report_hover_and_lens_say_assumed(result):
    k = _add(result)
    assert "grid = (1056, 1, 1) (assumed)" in render.assumptions(k)
    assert "block = (256, 1, 1) (assumed)" in render.assumptions(k)
    assert render.launch_assumed(k)  # the lens adds "launch assumed"
    assert any(f"[assumed: {WHY}" in ln for ln in render_text(result).splitlines() if ln.strip().startswith("launch"))
    # vec4_add's launch folds (N / THREAD_PER_BLOCK / 4 blocks of 256): not assumed
    vec4 = next(k for k in result.kernels if k.name.split("(")[0].removeprefix("void ") == "vec4_add")
    assert not render.launch_assumed(vec4)
