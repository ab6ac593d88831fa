"""The tiling estimate follows the kernel's time, not how ptxas scheduled its loop (issue #15).

`#pragma unroll 4` on sgemm_naive's K loop leaves the predicted time where it was, but batches
the loop's loads so that more of the FMAs' waits are blamed on them: Starlight Eq. 3 over those
stalls went from 2.6× to 8.6×. The full analysis re-models the loop with its global loads served
from shared memory (emulator/staging.py), a ceiling both forms share."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

REPO = Path(__file__).resolve().parents[2]


def _tiling(path: Path, toolchain):
    r = analyze(path, AnalysisOptions(), toolchain=toolchain, depth="full")
    assert r.compiled, [m.message for m in r.messages]
    (k,) = r.kernels
    (a,) = [a for a in r.advice if a.optimizer == "shared_memory_tiling"]
    return k, a


def test_unrolling_the_loop_does_not_move_the_tiling_estimate(tmp_path, toolchain):
    src = (REPO / "examples" / "sgemm_naive.cu").read_text()
    loop = "    for (int k = 0; k < n; ++k)\n"
    assert loop in src
    plain, unrolled = tmp_path / "plain.cu", tmp_path / "unrolled.cu"
    plain.write_text(src)
    unrolled.write_text(src.replace(loop, "#pragma unroll 4\n" + loop))
    k1, a1 = _tiling(plain, toolchain)
    k2, a2 = _tiling(unrolled, toolchain)
    assert k2.predicted_duration_s == pytest.approx(k1.predicted_duration_s, rel=0.1)
    for a in (a1, a2):
        assert a.estimate.formula.startswith("emulator what-if") and "served from shared memory" in a.estimate.formula
        assert "ceiling" in a.message and a.estimate.speedup > 1.05
        assert a.estimate.inputs["T_now_s"] == pytest.approx(k1.predicted_duration_s if a is a1
                                                             else k2.predicted_duration_s)
    assert a2.estimate.speedup == pytest.approx(a1.estimate.speedup, rel=0.15), (a1.estimate, a2.estimate)


def test_the_quick_stage_keeps_eq3_and_says_so(toolchain):
    r = analyze(REPO / "examples" / "sgemm_naive.cu", AnalysisOptions(), toolchain=toolchain, depth="quick")
    (a,) = [a for a in r.advice if a.optimizer == "shared_memory_tiling"]
    assert a.estimate.formula.startswith("Starlight Eq. 3") and "(Starlight Eq. 3)" in a.message
