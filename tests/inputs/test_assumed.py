"""A default launch is said, never silent (issue #14 item 5), on a real program whose grid does not
fold: Learn-CUDA-Programming's cuda_pipelining.cu launches `vecAdd_kernel<<<dimGrid, dimBlock, 0,
stream>>>` from the member function `Operator::async_operation(..., int size)`, with
`dim3 dimGrid(size / dimBlock.x)` (line 41). The text report, the hover's assumptions and the lens
say "assumed", and the kernel's diagnostic says why and how to give the real launch. (Until issue
31 this was sgemm.cu, whose grid now folds through the function pointer `main()` passes.)"""

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
PIPELINING = REAL / "learn-cuda-programming" / "cuda_pipelining.cu"
KERNEL_LINE = 135  # `__global__ void` opens the definition one line above the name
WHY = "the launch at line 42 (`dimGrid`) does not fold to a constant"


@pytest.fixture(scope="module")
def result(toolchain):
    flags = tuple(f.format(real=REAL) for f in json.loads((REAL / "build_flags.json").read_text())["*"])
    return analyze(PIPELINING, AnalysisOptions(flags=flags), depth="quick")


def test_the_kernels_diagnostic_says_the_launch_is_assumed_why_and_how_to_give_it(result):
    (note,) = [m for m in result.messages if "assumed launch" in m.message]
    assert (note.line, note.severity, note.source) == (KERNEL_LINE, "info", "kernelscope")
    assert "grid (1056, 1, 1)" in note.message and "block" not in note.message.split(":")[0]  # the block folded
    assert WHY in note.message and GIVE_A_LAUNCH in note.message


def test_the_text_report_hover_and_lens_say_assumed(result):
    (k,) = result.kernels
    launch = next(ln for ln in render_text(result).splitlines() if ln.strip().startswith("launch"))
    assert "block (256, 1, 1)" in launch and f"[assumed: {WHY}" in launch
    assert "grid = (1056, 1, 1) (assumed)" in render.assumptions(k)
    assert "block = (256, 1, 1) (launch_site)" in render.assumptions(k)
    assert render.launch_assumed(k)  # the lens adds "launch assumed"
