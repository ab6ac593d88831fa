"""The error figure editors show beside a predicted time is the accuracy benchmark's own, and
docs/accuracy.md quotes the same run (issue #16, item 5)."""

from __future__ import annotations

import sys
from pathlib import Path

from kernelscope.analysis.prediction_error import model_error

REPO = Path(__file__).resolve().parents[2]


def test_the_recorded_error_is_the_benchmarks_last_run_over_its_whole_set():
    sys.path.insert(0, str(REPO / "benchmarks" / "accuracy"))
    import run

    err = model_error()
    assert err is not None, "run: python benchmarks/accuracy/run.py --record"
    assert err.overall.kernels == len(run.CASES)
    assert err.test.kernels == sum(run.split_of(c) == "test" for c in run.CASES)
    assert err.gpus == len({c.device for c in run.CASES})
    assert err.overall.geomean >= 1.0 and 0.0 <= err.overall.within_2x <= 1.0
    assert "typical error" in err.note() and f"{err.overall.kernels} published" in err.note()


def test_docs_quote_the_recorded_run():
    err = model_error()
    doc = (REPO / "docs" / "accuracy.md").read_text()
    assert f"all: n={err.overall.kernels}, geomean error {err.overall.geomean:.2f}x" in doc
    assert f"test: n={err.test.kernels}, geomean error {err.test.geomean:.2f}x" in doc


def test_the_text_report_says_it_beside_its_predicted_times(toolchain):
    from kernelscope.analysis.options import AnalysisOptions
    from kernelscope.analysis.pipeline import analyze
    from kernelscope.analysis.reports.text import render_text

    result = analyze(REPO / "examples" / "small_grid.cu", AnalysisOptions(), toolchain=toolchain, depth="quick")
    assert any(k.predicted_duration_s for k in result.kernels)
    assert f"predicted times: {model_error().note()}" in render_text(result).splitlines()
