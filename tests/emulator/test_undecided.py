"""What the lanes cannot decide is labeled, never silently defaulted (issue 32 item 2): a loop
whose exit reads loaded data, and a branch a floating-point value decides."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator import emulate_detailed
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions

from _build import build_example

KERNELS = Path(__file__).parent / "kernels" / "undecided.cu"


@pytest.fixture(scope="module")
def assumptions(toolchain):
    prog = build_example(KERNELS, toolchain)
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    out = {}
    for fn in prog.kernels:
        e = emulate_detailed(AnalysisContext.of(arch, cat.default_device(arch), AnalysisOptions(), program=prog), fn)
        out[fn.name.split("(")[0]] = e.profile.provenance.assumptions
    return out


def test_a_loop_bounded_by_loaded_offsets_says_its_trips_are_data_dependent(assumptions):
    # the unrolled main loop's trips are a default, and say why; its remainder is capped by the SASS
    trips = [a for a in assumptions["csr_rows"] if a.name.startswith("trip_count@") and a.source == "default"]
    assert trips and all(a.detail.startswith("data-dependent: the loop's exit is not computed") for a in trips), trips
    flow = next(a for a in assumptions["csr_rows"] if a.name == "control_flow")
    assert "the value loaded by" in flow.detail, flow.detail


def test_a_branch_on_a_float_is_named(assumptions):
    flow = next(a for a in assumptions["threshold"] if a.name == "control_flow")
    assert flow.source == "default" and "floating-point value decides it" in flow.detail, flow.detail


def test_a_branch_on_a_double_from_an_argument_names_the_argument(assumptions):
    """The double `threadIdx.x * cut` is executed (I2F.F64, DMUL, DSETP): what it lacks is the
    argument, which the assumption names, so that giving it decides the branch."""
    flow = next(a for a in assumptions["threshold_arg"] if a.name == "control_flow")
    assert "kernel argument `cut` is not known" in flow.detail, flow.detail
