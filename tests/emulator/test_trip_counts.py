"""Trip counts of each loop shape, from the induction variable's step in the SASS and the bound
folded from the launch site (issue 20 item 2, issue 14 item 3), and the source each is labelled with.

The kernels are tests/emulator/kernels/loop_shapes.cu, compiled by the real nvcc; `main()`
launches each with literal values.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelscope.analysis.arch import load_arch_specs
from kernelscope.analysis.emulator.launch import loop_step
from kernelscope.analysis.emulator.model import prepare
from kernelscope.analysis.options import AnalysisOptions, LaunchHint

from _build import build_example

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def target():
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    return arch, cat.default_device(arch)


@pytest.fixture(scope="module")
def shapes(toolchain):
    return build_example(KERNELS / "loop_shapes.cu", toolchain)


def _kernel(prog, name):
    return next(k for k in prog.kernels if k.name.split("(")[0] == name)


def _trips(prog, name, target, options=None):
    """(step, modeled trips, assumption) of each SASS loop of kernel `name`, in order."""
    k = _kernel(prog, name)
    prep = prepare(k, *target, options or AnalysisOptions(), program=prog)
    trips = [a for a in prep.assumptions if a.name.startswith("trip_count@")]
    ins = k.sass.instructions
    out = []
    for L, a in zip(prep.decoded.loops, trips, strict=True):
        body = [ins[i] for i in sorted(L.body)]
        out.append((loop_step(body, ins[L.latches[-1]], list(ins), target[0].constant_bank), L.trip, a))
    return out


def _source_iterations(loops) -> int:
    """Source iterations the SASS loops of one counted source loop run together."""
    return sum(trip * step[1] for step, trip, _ in loops)


def _slack(loops) -> int:
    """Extra iterations the model may run: each remainder loop runs at least once (its guard is
    not modeled, see `prepare`)."""
    return sum(step[1] for step, _, _ in loops[1:])


@pytest.mark.parametrize("name", ["count_up", "count_le"])
def test_counted_loop_bounded_by_an_argument_is_never_grid_stride(shapes, target, name):
    loops = _trips(shapes, name, target)
    assert all(step[0] == "const" for step, _, _ in loops)
    # 1000 iterations split over the unrolled main loop and its remainders, within one unroll step
    assert 1000 <= _source_iterations(loops) <= 1000 + _slack(loops)
    assert all(a.source == "launch_site" for *_, a in loops)


def test_unrolled_main_loop_divides_the_bound_by_its_step(shapes, target):
    (main_step, main_trips, a), *_ = _trips(shapes, "count_up", target)
    assert main_step[0] == "const" and main_step[1] > 1
    assert main_trips == 1000 // main_step[1]
    assert "bound 1000" in a.detail


def test_counting_down_steps_by_a_positive_amount(shapes, target):
    # the counter falls by 16 (`0xfffffff0`): the step is its magnitude, not 2**32 - 16
    steps = [step for step, _, _ in _trips(shapes, "count_down", target)]
    assert all(kind == "const" and 1 <= k <= 64 for kind, k in steps), steps


def test_counting_down_runs_from_its_start_to_its_bound(shapes, target):
    # `for (i = n - 1; i >= 0; --i)` with n = 1000: the extent is (n - 1) - 0 + 1 = 1000, not the
    # bound 0; ptxas runs the remainder first here, so the split is within one unroll step
    loops = _trips(shapes, "count_down", target)
    assert abs(_source_iterations(loops) - 1000) <= _slack(loops), loops
    assert all(a.source in ("launch_site", "sass") for *_, a in loops)


def test_stride_k_loop_is_counted_not_grid_stride(shapes, target):
    loops = _trips(shapes, "stride_k", target)
    assert all(step[0] == "const" for step, _, _ in loops)
    # `i += 3` up to 1000: ptxas counts the 334 iterations (16 per unrolled trip), not i; the
    # model divides ⌈1000 / 3⌉ by the counter's step
    assert sum(trip * step[1] for step, trip, _ in loops) == math.ceil(1000 / 3)


def test_a_stride_from_an_argument_is_not_a_grid_stride(shapes, target):
    # `i += stride` bounded by the argument n: the stride is a kernel argument, not blockDim *
    # gridDim, so the loop is never taken for a grid-stride one; with stride = 4096 from the
    # launch it runs about ⌈100000 / 4096⌉ = 25 iterations, not n / unroll
    loops = _trips(shapes, "arg_stride", target)
    assert all(step[0] != "grid" and "grid-stride" not in a.detail for step, _, a in loops)
    # SASS trips: at most the 25 iterations (plus a remainder's guard), at least 25 / unroll 4
    assert math.ceil(25 / 4) <= sum(trip for _, trip, _ in loops) <= 25 + 3, loops


def test_bound_from_blockdim_folds_with_the_launch(shapes, target):
    loops = _trips(shapes, "bound_blockdim", target)
    assert 128 <= _source_iterations(loops) <= 128 + _slack(loops)
    assert loops[0][2].source == "launch_site"


def test_grid_stride_loop(shapes, target):
    ((step, trips, a),) = _trips(shapes, "grid_stride", target)
    assert step == ("grid", 0)
    assert trips == math.ceil(100000 / (8 * 128))
    assert "grid-stride" in a.detail and a.source == "launch_site"


def test_2d_grid_stride_loops_stride_by_their_own_dimension(shapes, target):
    (outer, inner) = _trips(shapes, "grid_stride_2d", target)
    assert outer[0] == ("grid", 1) and inner[0] == ("grid", 0)
    assert outer[1] == math.ceil(256 / (4 * 4))  # h / (blockDim.y * gridDim.y)
    assert inner[1] == math.ceil(512 / (32 * 8))  # w / (blockDim.x * gridDim.x)


@pytest.mark.parametrize("name,kind", [("halving", "shr"), ("doubling", "mul")])
def test_geometric_loops_run_log2_blockdim_trips(shapes, target, name, kind):
    ((step, trips, a),) = _trips(shapes, name, target)
    assert step == (kind, 2)
    assert trips == int(math.log2(256))  # block of 256 threads, not the default 64
    assert a.source == "launch_site"


def test_unknown_bound_is_a_default_shown_as_an_assumption(tmp_path, toolchain, target):
    text = (KERNELS / "loop_shapes.cu").read_text().replace("count_up<<<8, 128>>>(x, 1000);", "")
    src = tmp_path / "no_launch.cu"
    src.write_text(text)
    prog = build_example(src, toolchain)
    default = AnalysisOptions().default_trip_count
    loops = _trips(prog, "count_up", target)
    assert loops[0][2].source == "default" and "unknown bound" in loops[0][2].detail
    assert loops[0][1] == math.ceil(default / loops[0][0][1])


def test_trip_sources_name_annotation_and_settings(tmp_path, toolchain, target):
    text = (KERNELS / "loop_shapes.cu").read_text()
    text = text.replace("count_up<<<8, 128>>>(x, 1000);", "")
    text = text.replace("__global__ void count_up(", "// kernelscope: trip=500\n__global__ void count_up(")
    src = tmp_path / "annotated.cu"
    src.write_text(text)
    prog = build_example(src, toolchain)
    loops = _trips(prog, "count_up", target)
    assert loops[0][2].source == "annotation" and "500 iterations" in loops[0][2].detail

    hinted = AnalysisOptions(launch_hints={"count_up": LaunchHint(trip_count=300)})
    loops = _trips(prog, "count_up", target, hinted)
    assert loops[0][2].source == "settings" and "300 iterations" in loops[0][2].detail


def test_bound_from_an_annotation_value_is_labelled_annotation(tmp_path, toolchain, target):
    text = (KERNELS / "loop_shapes.cu").read_text()
    text = text.replace("count_up<<<8, 128>>>(x, 1000);", "")
    text = text.replace("__global__ void count_up(", "// kernelscope: n=2000 block=128\n__global__ void count_up(")
    src = tmp_path / "annotated_n.cu"
    src.write_text(text)
    prog = build_example(src, toolchain)
    loops = _trips(prog, "count_up", target)
    assert loops[0][2].source == "annotation" and "bound 2000" in loops[0][2].detail
