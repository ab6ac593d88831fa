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


def test_a_path_only_the_grids_first_warp_takes_keeps_the_guard_rule_and_is_named(toolchain, assumptions):
    """`if (i == 0)` around a serial loop: the walked warps (the middle block's first and last)
    skip it, the grid's first warp takes it. The branch keeps the guard rule (the loop stays in
    the time: skipped, a one-thread loop of any length would cost nothing) and the result says
    that every warp is modeled running it."""
    (paths,) = [a for a in assumptions["serial_head"] if a.name == "warp_paths"]
    assert paths.source == "default" and "warp 0 of block (0, 0, 0) go different ways at" in paths.detail
    assert "at line 48" in paths.detail, paths.detail  # the `if (i == 0)` line
    # the loop is still modeled: its trip count (n = 4096 from the annotation) is among the assumptions
    assert any(a.name.startswith("trip_count@") for a in assumptions["serial_head"]), assumptions["serial_head"]
    # a guard every block's warp 0 takes alike (threadIdx.x == 0) is no such path
    assert not [a for a in assumptions["block_head"] if a.name == "warp_paths"]


def test_a_slow_path_most_of_the_grid_takes_is_run_though_the_first_warp_skips_it(assumptions):
    """`sinf((float)i)` over 4M threads: from i = 105,615 on, the reduction is Payne-Hanek's. The
    middle block's warps take it and the grid's first warp does not. Where the warps disagree the
    engine runs the side with more code, here the slow path; the guard rule alone skips it, and
    the grid's first warp had vetoed the walked warps' way (code-samples/async.cu on the H100:
    0.73x -> 0.44x). Under nvcc 13.0 the reduction is on the guard rule's side, nothing to veto."""
    names = {a.name: a for a in assumptions["big_angles"]}
    slow = names.get("math_slow_path")
    assert slow is None or "Payne-Hanek" not in slow.detail, slow.detail
    paths = names.get("warp_paths")
    assert paths is None or "more code" in paths.detail, paths.detail
