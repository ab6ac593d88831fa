"""Advice on code the model runs only on a guessed branch is said to rest on that guess, and is
never a warning (the brief: "never put a guess into a warning"). tests/advisor/programs/
guessed_branch.cu has one sinf/cosf loop twice: `trig_always` runs it for every thread,
`trig_on_data` only where a loaded value is above 0.5, a branch the model cannot compute and
takes as falling through. The same advice, the same estimate: a warning on the first; on the
second information naming the guess (JSON `assumed`, the message, the text report, SARIF)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.reports.sarif import render_sarif
from kernelscope.analysis.reports.text import render_text
from kernelscope.server.features.diagnostics import advice_severity

PROGRAM = Path(__file__).resolve().parent / "programs" / "guessed_branch.cu"
LOOP_LINES = {"trig_always": 8, "trig_on_data": 17}


@pytest.fixture(scope="module")
def result(toolchain):
    return analyze(PROGRAM, AnalysisOptions(), toolchain=toolchain, depth="quick")


def _fast_math(result, kernel: str):
    (a,) = [a for a in result.advice if a.optimizer == "fast_math" and a.kernel_name.startswith(kernel)]
    return a


def test_the_guessed_side_of_a_data_branch_is_named_with_its_lines(result):
    by_name = {k.name.split("(")[0]: k for k in result.kernels}
    guessed = [a for a in by_name["trig_on_data"].assumptions if a.name == "control_flow"]
    assert len(guessed) == 1 and LOOP_LINES["trig_on_data"] in guessed[0].lines
    assert 19 not in guessed[0].lines  # the store after the branch joins runs either way
    assert not [a for a in by_name["trig_always"].assumptions if a.lines]


def test_advice_on_a_guessed_branch_is_never_a_warning(result):
    always, on_data = _fast_math(result, "trig_always"), _fast_math(result, "trig_on_data")
    assert always.lines[0] == LOOP_LINES["trig_always"] and on_data.lines[0] == LOOP_LINES["trig_on_data"]
    assert always.estimate.speedup == pytest.approx(on_data.estimate.speedup) and always.speedup > 1.2
    assert (always.assumed, on_data.assumed) == ((), ("control_flow",))
    assert advice_severity(always) == types.DiagnosticSeverity.Warning
    assert advice_severity(on_data) in (types.DiagnosticSeverity.Information, types.DiagnosticSeverity.Hint)
    assert "rests on that guess" in on_data.message and "guess" not in always.message
    shown = [ln for ln in render_text(result).splitlines() if "Use fast math intrinsics" in ln]
    assert [("on a guessed branch" in ln) for ln in shown] == [False, True]
    sarif = json.loads(render_sarif(result))["runs"][0]["results"]
    levels = {r["locations"][0]["logicalLocations"][0]["name"].split("(")[0]: (r["level"], r["properties"]["assumed"])
              for r in sarif if r["ruleId"] == "fast_math"}
    assert levels == {"trig_always": ("warning", []), "trig_on_data": ("note", ["control_flow"])}
