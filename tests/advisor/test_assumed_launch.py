"""A default is a first-class state (issue 31 item 4). tests/advisor/programs/assumed_launch.cu
launches the same one-warp-per-row kernel twice: `rows_real` with 32 blocks the source states,
`rows_assumed` with a grid read from the environment, which the model assumes (one thread per
element of N = 8192: 32 blocks). "Launch more blocks" is a warning on the first and only
information on the second, whose text names the assumption and how to give the real launch; its
percentage is the share of idle SMs, said as such, not a share of samples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from kernelscope.analysis.emulator.launch import GIVE_A_LAUNCH
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.reports.sarif import render_sarif
from kernelscope.analysis.reports.text import render_text
from kernelscope.server.features.diagnostics import advice_severity

PROGRAM = Path(__file__).resolve().parent / "programs" / "assumed_launch.cu"


@pytest.fixture(scope="module")
def result(toolchain):
    return analyze(PROGRAM, AnalysisOptions(), toolchain=toolchain, depth="full")


def _more_blocks(result, kernel: str):
    (a,) = [a for a in result.advice if a.optimizer == "block_increase" and a.kernel_name.startswith(kernel)]
    return a


def test_launch_advice_on_an_assumed_launch_is_never_a_warning(result):
    real, assumed = _more_blocks(result, "rows_real"), _more_blocks(result, "rows_assumed")
    # the same 32 blocks of 256 threads on 132 SMs: the same estimate, one launch given, one assumed
    assert real.estimate.speedup == pytest.approx(assumed.estimate.speedup) and real.speedup > 1.2
    # the estimate is the emulator's run of the split the text proposes (256 -> 128, 64 blocks)
    assert "blockDim 256 -> 128 with 2× the blocks (32 -> 64)" in real.message
    assert real.estimate.formula.startswith("emulator what-if (block 128)")
    assert (real.assumed, assumed.assumed) == ((), ("grid",))
    assert advice_severity(real) == types.DiagnosticSeverity.Warning
    assert advice_severity(assumed) == types.DiagnosticSeverity.Information
    assert "assumed launch (grid (32, 1, 1), a default, not the program's launch)" in assumed.message
    assert "the launch at line 51 (`grid`) does not fold" in assumed.message and GIVE_A_LAUNCH in assumed.message
    assert "assumed" not in real.message
    sarif = json.loads(render_sarif(result))["runs"][0]["results"]
    levels = {r["locations"][0]["logicalLocations"][0]["name"].split("(")[0]: (r["level"], r["properties"]["assumed"])
              for r in sarif if r["ruleId"] == "block_increase"}
    assert levels == {"rows_real": ("warning", []), "rows_assumed": ("note", ["grid"])}


def test_the_idle_share_is_not_called_a_share_of_samples(result):
    a = _more_blocks(result, "rows_assumed")
    assert a.importance == pytest.approx(1 - 32 / 132) and a.importance_basis == "of the SMs idle"
    lines = [ln for ln in render_text(result).splitlines() if "Launch more blocks" in ln]
    assert len(lines) == 2 and all("76 % of the SMs idle" in ln and "of samples" not in ln for ln in lines)
    assert sum("on the assumed launch" in ln for ln in lines) == 1


def test_the_command_line_says_how_to_give_the_launch_once_and_names_no_setting_it_cannot_read():
    proc = subprocess.run([sys.executable, "-m", "kernelscope.cli", "analyze", str(PROGRAM), "--quick"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "launchHints" not in out and "launch_hints" not in out
    # one kernel's launch is assumed: the way to give it is said once, on its `assumed` line
    assert out.count("kernelscope analyze --capture") == 1
    (assumed,) = [ln for ln in out.splitlines() if ln.strip().startswith("assumed")]
    assert "grid = (32, 1, 1)" in assumed
    (launch,) = [ln for ln in out.splitlines() if ln.strip().startswith("launch") and "assumed:" in ln]
    assert "the launch at line 51 (`grid`) does not fold" in launch
