"""While an analysis runs, the cycle collector does young collections only, and the interpreter's
own thresholds come back when the last analysis ends, an error or a concurrent one included
(analysis/collector.py). A real analysis, through `pipeline.analyze`."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from kernelscope.analysis import collector
from kernelscope.analysis.options import AnalysisBudget, AnalysisOptions
from kernelscope.analysis.pipeline import analyze

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def interpreter_thresholds():
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_an_analysis_runs_with_young_collections_and_gives_the_thresholds_back(toolchain, interpreter_thresholds):
    seen: set[tuple[int, int, int]] = set()
    result = analyze(REPO / "examples" / "small_grid.cu", AnalysisOptions(budget=AnalysisBudget(run_ahead=False)),
                     toolchain=toolchain, depth="quick", progress=lambda stage, fraction: seen.add(gc.get_threshold()))
    assert result.compiled and result.kernels
    assert seen == {collector.THRESHOLDS}
    assert gc.get_threshold() == interpreter_thresholds


def test_the_thresholds_come_back_when_the_last_of_two_concurrent_analyses_ends(interpreter_thresholds):
    first_in, second_done = threading.Event(), threading.Event()
    during: list[tuple[int, int, int]] = []

    def first():
        with collector.young_only():
            first_in.set()
            second_done.wait(10)
            during.append(gc.get_threshold())  # the other one ended; this one still runs

    t = threading.Thread(target=first)
    t.start()
    first_in.wait(10)
    with collector.young_only():
        during.append(gc.get_threshold())
    second_done.set()
    t.join(10)
    assert during == [collector.THRESHOLDS, collector.THRESHOLDS]
    assert gc.get_threshold() == interpreter_thresholds


def test_an_analysis_that_raises_gives_the_thresholds_back(interpreter_thresholds):
    with pytest.raises(RuntimeError):
        with collector.young_only():
            raise RuntimeError("a stage failed")
    assert gc.get_threshold() == interpreter_thresholds
