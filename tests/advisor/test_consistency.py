"""Issue 15, point 1, over every example and test kernel: each advice's numbers are consistent with
the profile they came from. The share it quotes lies on its own lines (or the lines its blamed
hotspots stall, or what its calls reach); its baseline T is the kernel's own total; a line-local
estimate stays under Amdahl's bound 1/(1 - share); the equation its message cites is the one that
produced the number. And the top advice of a public optimisation series' step names the change
its next step made."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

REPO = Path(__file__).resolve().parents[2]
FILES = sorted([*(REPO / "examples").glob("*.cu"), *(REPO / "tests" / "emulator" / "kernels").glob("*.cu"),
                *(REPO / "tests" / "actions" / "kernels").glob("*.cu"),
                *(p for p in (REPO / "tests" / "data" / "lsp").glob("*.cu") if p.stem not in ("broken", "slow_template"))])
_LINE_LOCAL = ("GPA Eq. 2", "GPA Eq. 4", "GPA Eq. 5", "Starlight Eq. 3")
_CITED = re.compile(r"\((GPA Eq\. \d+|Starlight Eq\. \d+)")


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_advice_is_consistent_with_its_profile(path, toolchain):
    r = analyze(path, AnalysisOptions(), toolchain=toolchain, depth="quick")
    assert r.compiled, [m.message for m in r.messages]
    for a in r.advice:
        if a.provenance == "static":
            continue
        k = next(k for k in r.kernels if k.mangled == a.kernel)
        profile = r.profile.kernel(a.kernel)
        by_line = {lr.line: lr.share + lr.callee_share for lr in k.lines}
        where = set(a.lines) | {h.use_line for h in a.hotspots if h.use_line} | {h.def_line for h in a.hotspots if h.def_line}
        on_its_lines = sum(by_line.get(ln, 0.0) for ln in where)
        # the share is on the lines it names (blame moves samples only between those lines)
        assert a.importance <= on_its_lines + 0.02 or a.optimizer in _WHOLE_KERNEL, \
            (path.name, a.optimizer, a.lines, round(a.importance, 3), round(on_its_lines, 3))
        if "T" in a.estimate.inputs:  # samples: the kernel's own total is the baseline
            assert a.estimate.inputs["T"] == pytest.approx(profile.total_samples, rel=1e-6), (path.name, a.optimizer)
        if a.estimate.formula.startswith(_LINE_LOCAL):
            bound = 1 / (1 - a.importance) if a.importance < 1 else float("inf")
            assert a.estimate.speedup <= bound + 1e-6, (path.name, a.optimizer, a.estimate, a.importance)
        for cited in _CITED.findall(a.message):
            assert cited in a.estimate.formula or a.estimate.formula in a.message, (path.name, a.optimizer, cited,
                                                                                 a.estimate.formula)


#: advice about the whole kernel, not lines of it (launch shape, occupancy): its share is the kernel's
_WHOLE_KERNEL = {"block_increase", "thread_increase", "occupancy_limit", "warp_balance"}


def test_the_top_advice_names_the_next_step_of_a_public_series(toolchain):
    """waynehacking8/blackwell-tensorcore-kernels (benchmarks/accuracy, MIT): its naive GEMM's next step
    is the shared-memory tiled one; kernelscope's top advice on the naive kernel is to tile."""
    sys.path.insert(0, str(REPO / "benchmarks" / "accuracy"))
    import run

    case = next(c for c in run.CASES if c.name == "naive")
    result = run.analyze_case(case)
    k = run.kernel_report(case, result)
    top = max((a for a in result.advice if a.kernel == k.mangled), key=lambda a: a.speedup)
    assert top.optimizer == "shared_memory_tiling", [(a.optimizer, a.speedup) for a in result.advice]
