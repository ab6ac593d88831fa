"""Trip counts of each loop shape, from the induction variable's step in the SASS and the bound
folded from the launch site (issue 20 item 2, issue 14 item 3), and the source each is labelled with.

The kernels are tests/emulator/kernels/loop_shapes.cu, compiled by the real nvcc; `main()`
launches each with literal values.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.emulator.launch import loop_step
from kernelscope.analysis.emulator.model import EmulationSettings, prepare
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
    """(step, modeled trips, assumption) of each SASS loop of kernel `name`, in order, as the
    folding rules give them (the walked lanes' executed trips, which replace these where the walk
    decides a loop, are tested in test_lanes.py)."""
    k = _kernel(prog, name)
    prep = prepare(AnalysisContext.of(*target, options or AnalysisOptions(), program=prog), k, settings=EmulationSettings(execute_lanes=False))
    trips = [a for a in prep.assumptions if a.name.startswith("trip_count@")]
    ins = k.sass.instructions
    out = []
    for L, a in zip(prep.decoded.loops, trips, strict=True):
        body = [ins[i] for i in sorted(L.body)]
        out.append((loop_step(body, ins[L.latches[-1]], list(ins), target[0].constant_bank), L.trip, a))
    return out


def _one_kernel(file: str, toolchain, arch: str):
    """(program, its one kernel, (arch, default device)) of a test kernel built for `arch`."""
    cat = load_arch_specs()
    spec = cat.arch(arch)
    prog = build_example(KERNELS / file, toolchain, arch=arch)
    (k,) = prog.kernels
    return prog, k, (spec, cat.default_device(spec))


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
    assert all(step[0] != "dims" and "grid-stride" not in a.detail for step, _, a in loops)
    # SASS trips: at most the 25 iterations (plus a remainder's guard), at least 25 / unroll 4
    assert math.ceil(25 / 4) <= sum(trip for _, trip, _ in loops) <= 25 + 3, loops


def test_bound_from_blockdim_folds_with_the_launch(shapes, target):
    loops = _trips(shapes, "bound_blockdim", target)
    assert 128 <= _source_iterations(loops) <= 128 + _slack(loops)
    assert loops[0][2].source == "launch_site"


#: the step of a loop adding blockDim.x * gridDim.x (loop_step)
GRID_X = ("dims", (("block", 0), ("grid", 0)))


@pytest.mark.parametrize("name,dims,trips", [
    # `j += blockDim.y` over 64 rows, 8 per step: 8 trips (a grid stride, 8 x 4, would give 2)
    ("block_stride_y", (("block", 1),), 64 // 8),
    # `b += gridDim.x` over 4096 rows, 128 blocks: 32 trips (blockDim x gridDim would give 1)
    ("grid_dim_stride", (("grid", 0),), 4096 // 128),
    # `i += blockDim.x * blockDim.y` over 10000 elements, 32 x 8 threads: 40 trips
    ("block_2d_stride", (("block", 0), ("block", 1)), math.ceil(10000 / (32 * 8))),
])
def test_a_stride_of_launch_dimensions_is_their_product(shapes, target, name, dims, trips):
    ((step, t, a),) = _trips(shapes, name, target)
    assert step == ("dims", dims)
    assert t == trips, a
    assert a.source in ("launch_site", "sass") and "grid-stride" not in a.detail, a


def test_grid_stride_loop(shapes, target):
    ((step, trips, a),) = _trips(shapes, "grid_stride", target)
    assert step == GRID_X
    assert trips == math.ceil(100000 / (8 * 128))
    assert "grid-stride" in a.detail and a.source == "launch_site"


def test_an_unrolled_grid_stride_loop_covers_its_unroll_factor_per_trip(shapes, target):
    # `#pragma unroll 4` over a grid-stride loop: the counter is advanced by the stride register
    # (`IMAD.IADD Rc, Rstride, 0x1, Rc`, an add of blockDim.x * gridDim.x, not the constant 1);
    # each SASS trip runs 4 strides, so ⌈100000 / (128 * 8 * 4)⌉ trips, not 4 times as many
    ((step, trips, a),) = _trips(shapes, "grid_stride_unroll4", target)
    assert step == GRID_X
    assert trips == math.ceil(100000 / (8 * 128 * 4))
    assert "grid-stride" in a.detail and "4 per SASS iteration" in a.detail


def test_a_grid_stride_loop_bounded_by_a_long_is_grid_stride(shapes, target):
    # `int i < long n`: the exit test is a 64-bit compare of the sign-extended index; the counter
    # is the index the grid stride is added to, not the 64-bit byte offset the body shifts it into
    ((step, trips, a),) = _trips(shapes, "grid_stride_long", target)
    assert step == GRID_X
    assert trips == math.ceil(100000 / (8 * 128))
    assert "grid-stride" in a.detail


def test_2d_grid_stride_loops_stride_by_their_own_dimension(shapes, target):
    (outer, inner) = _trips(shapes, "grid_stride_2d", target)
    assert outer[0] == ("dims", (("block", 1), ("grid", 1))) and inner[0] == GRID_X
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


# ---- 64-bit (size_t) counters: register-tiled GEMMs that index with size_t (issue 16, cause 3) ----

ROOT = Path(__file__).resolve().parents[2]
LEIMAO = ROOT / "benchmarks" / "accuracy" / "kernels" / "leimao-gemm"


@pytest.mark.parametrize("arch", ["sm_90", "sm_86"])
def test_a_size_t_k_loop_counts_its_tiles(toolchain, arch):
    # `for (size_t t = 0; t < (k + TK - 1) / TK; ++t)`: ptxas compares the two halves (ISETP, then
    # ISETP.EX on the high words chained to it; on sm_90 in uniform registers, copied to the
    # branch's predicate by PLOP3). The counter is the low half's, stepping by 1: 256 tiles at
    # k = 4096, not 256 divided by the 4-fold replication of the fully unrolled inner loops
    cat = load_arch_specs()
    spec = cat.arch(arch)
    prog = build_example(KERNELS / "tiled_k_loop.cu", toolchain, arch=arch)
    (step, trips, a), = _trips(prog, "ktiles_sizet", (spec, cat.default_device(spec)))
    assert step == ("const", 1)
    assert trips == 4096 // 16, a
    assert a.source == "launch_site" and a.detail == "bound 256"


def test_a_bound_rebuilt_in_the_latch_is_not_the_counter(toolchain):
    # Lei Mao's FP16 WMMA GEMM (V07, MIT, benchmarks/accuracy/README.md) at 4096^3 on sm_86:
    # under register pressure ptxas rebuilds `num_thread_block_tiles = (k + 15) >> 4` from the
    # constant bank in the latch (IMAD.MOV, IADD3, SHF.R) and compares it with the uniform
    # counter (UIADD3 UR4, UR4, 0x1). The rebuilt value is not loop-carried, so it is not the
    # induction variable; the loop was taken for a grid-stride one and ran once (0.02x measured)
    cat = load_arch_specs()
    spec = cat.arch("sm_86")
    prog = build_example(LEIMAO / "07_2d_block_tiling_2d_warp_tiling_2d_thread_tiling_matrix_transpose_wmma.cu",
                         toolchain, arch="sm_86")
    k = next(f for f in prog.kernels if f.name.startswith("void gemm_v07<__half"))
    values = {"m": 4096, "n": 4096, "k": 4096, "lda": 4096, "ldb": 4096, "ldc": 4096, "num_thread_block_tiles": 256}
    opts = AnalysisOptions(launch_hints={"gemm_v07": LaunchHint(grid=(32, 32, 1), block=(256, 1, 1), values=values)})
    loops = _trips(prog, k.name.split("(")[0], (spec, cat.device("RTX 3090")), opts)
    (step, trips, a), = loops
    assert step == ("const", 1)
    assert trips == 256 and "grid-stride" not in a.detail


def test_the_counter_is_updated_by_the_definition_the_compare_reads(toolchain):
    # llm.c's adamw_kernel2 (MIT, benchmarks/accuracy/README.md) on sm_86: `int i < long n`, the
    # grid stride added into R0 just before the 64-bit exit test, while the body's first write
    # of R0 is `SHF.L.U64.HI R0, R0, 0x2, R7` (the byte offset's high word). Read as the update,
    # that shift made the loop geometric (10 trips of x4); the definition the compare reads is
    # the grid-stride add, so 2^20 elements over 2048 x 512 threads is one trip
    cat = load_arch_specs()
    spec = cat.arch("sm_86")
    prog = build_example(ROOT / "benchmarks" / "accuracy" / "kernels" / "llm-c" / "adamw-b4819205" / "adamw.cu",
                         toolchain, arch="sm_86")
    opts = AnalysisOptions(launch_hints={"adamw_kernel2": LaunchHint(
        grid=(2048, 1, 1), block=(512, 1, 1), values={"num_parameters": 1 << 20})})
    ((step, trips, a),) = _trips(prog, "adamw_kernel2", (spec, cat.device("RTX 3060 Ti")), opts)
    assert step == GRID_X
    assert trips == 1 and "grid-stride" in a.detail


def test_a_loop_of_an_inlined_function_is_not_the_loop_around_its_call():
    """ptxas charges an inlined function's code to the line of its call, inside the caller's loop;
    the callee's loop took that enclosing loop's bound (Lei Mao's vectorized GEMMs: a masking loop
    of at most 3 trips in cuda_gemm_utils.cuh ran the tile loop's 128). It is now matched with
    its own source loop in the header, whose bound is the callee's parameter: unknown here (the
    call's argument is not followed), so the default, and said so, never the caller's n = 1000."""
    from kernelscope.analysis.pipeline import analyze

    report = analyze(KERNELS / "inlined_loop.cu", AnalysisOptions(), depth="quick")
    (k,) = report.kernels
    trips = [a for a in k.assumptions if a.name.startswith("trip_count")]
    outer = [a for a in trips if "inlined" not in a.detail]
    inner = [a for a in trips if "inlined" in a.detail]
    assert [(a.value, a.detail) for a in outer] == [("1000", "bound 1000")]
    assert inner and all("inlined_helper.cuh:5" in a.detail and "1000" not in a.detail for a in inner), \
        [(a.value, a.detail) for a in inner]


def test_a_grid_stride_loop_over_locals_folds_through_their_initialisers():
    """code-samples' haxpy: `for (int i = start; i < n2; i += stride)` with `int start = threadIdx.x
    + blockDim.x * blockIdx.x`, `int n2 = n/2` and n = 100 at the launch, one block of 256: the
    locals read as their initialisers, so the loop is a grid stride over 50 elements, one trip.
    It took the default 64 trips (the extent was `(n2) - (start)`, which folds to nothing), and
    the kernel was predicted at 14.3 us where an H100 measured 2.7 us."""
    from kernelscope.analysis.pipeline import analyze

    src = ROOT / "tests" / "data" / "real" / "code-samples" / "haxpy.cu"
    (k,) = analyze(src, AnalysisOptions(device="H100 SXM"), depth="quick").kernels
    trips = [a for a in k.assumptions if a.name.startswith("trip_count")]
    assert [(a.value, a.source, a.detail) for a in trips] == [("1", "launch_site", "grid-stride loop over 50 elements")]


@pytest.mark.parametrize("arch", ["sm_90", "sm_86"])
def test_a_loop_stepping_stages_by_hand_is_rolled(toolchain, arch):
    # `for (ko = 0; ko < k; ko += 2)` whose body loads two stages through one inlined helper with a
    # fully unrolled `for (i < 4)`: each load appears 4 or 8 times on its line, which read as an
    # unroll factor of 4 divided the counter's step-2 bound once more (32 trips instead of 128; the
    # same shape ran KnowingNothing/MatmulTutorial's 4-stage GEMMs at a quarter of their K loop,
    # benchmarks/accuracy). The helper's two call sites are two keys, and the four barriers appear
    # once each: the loop is rolled and runs k / 2 = 128 trips
    prog, k, target = _one_kernel("staged_k_loop.cu", toolchain, arch)
    assert [li.unroll_factor for li in k.loops] == [1]
    (step, trips, a), = _trips(prog, "two_stages", target)
    assert step == ("const", 2)
    assert trips == 256 // 2, a


@pytest.mark.parametrize("arch", ["sm_90", "sm_86"])
def test_a_k_loop_under_dropped_tile_loops_keeps_its_own_bound(toolchain, arch):
    # `for (s = 0; s < steps; ++s)` with `steps = (K + 63) / 64`, inside two `for (< TILES)` tile
    # loops that TILES = 1 removes. At 255 registers ptxas recomputes the tile loops' row and column
    # bases inside the K loop, on the tile loops' lines, so the tile loop's span covers more of
    # the SASS loop's lines than the K loop's: the SASS loop was matched to the tile loop, whose
    # `TILES` does not fold, and ran the default 64 trips (Pupking/01_tiled_gemm's regblock,
    # warp_rebalance and bank_pad_vec kernels ran twice their K loop). The back edge is charged to
    # the K loop's own `for`: 2048 / 64 = 32 trips, from the launch
    prog, k, target = _one_kernel("outer_tile_loops.cu", toolchain, arch)
    src = (KERNELS / "outer_tile_loops.cu").read_text().splitlines()
    k_line = next(i for i, text in enumerate(src, 1) if "for (int s = 0; s < steps" in text)
    assert [li.source_line for li in k.loops] == [k_line]
    (_, trips, a), = _trips(prog, k.name.split("(")[0], target)
    assert (trips, a.source) == (32, "launch_site"), a


@pytest.mark.parametrize("arch", ["sm_90", "sm_86"])
def test_a_header_template_k_loop_takes_its_trips_from_the_walk(arch):
    # header_k_loop.cuh's `for (s < (K + Cfg::TILE - 1) / Cfg::TILE)`: a bound the source model does
    # not fold (a member of the template argument), in a kernel defined in a header. The walked
    # warp decides it from K = 2048, which reaches the constant bank only through the parameter
    # names of the header's definition (until 2026-11-29 the analysed file's own kernels only:
    # none here); the loop closes with `@P0 CALL.REL.NOINC exit; BRA head`, an unconditional back
    # edge whose test is the exit's, and the unrolled body takes the walk's step bound within its
    # first trips, so the trips come from the SASS counter's step from there on (before: the
    # default 64 trips, twice the K loop)
    from kernelscope.analysis.pipeline import analyze

    (k,) = analyze(KERNELS / "header_k_loop.cu", AnalysisOptions(arch=arch), depth="quick").kernels
    (a,) = [a for a in k.assumptions if a.name.startswith("trip_count")]
    assert (a.value, a.source) == ("32", "launch_site") and a.detail.startswith("executed"), a
    assert k.flops_per_thread["fp32"] == 2 * 2048 ** 3 / (32 * 32 * 64)


@pytest.mark.parametrize("arch", ["sm_90", "sm_86"])
def test_a_k_loop_whose_first_trip_outlasts_the_walk_takes_its_trips_from_the_walk(arch):
    # long_k_body.cu: each trip fills two 64 x 64 shared tiles and runs a 64-deep unrolled inner
    # product, more than the walk's step bound, so the walk stops inside the first trip before the
    # exit compare `while (k0 < K)` has run (a do-while: the source model does not count it). The
    # compare's operands are then the registers' values where the walk stopped, the counter's SASS
    # step added where its update lies ahead, and the bound's register, which ptxas reuses in the
    # body and loads K into again (sm_90: `LDC R32, c[0x0][0x230]`) before the compare, is that
    # argument (before: the default, one trip of the 32)
    from kernelscope.analysis.pipeline import analyze

    hint = LaunchHint(grid=(32, 32, 1), block=(64, 1, 1), values={"M": 2048, "N": 2048, "K": 2048})
    (k,) = analyze(KERNELS / "long_k_body.cu", AnalysisOptions(arch=arch, launch_hints={"long_k_body": hint}),
                   depth="quick").kernels
    trips = [a for a in k.assumptions if a.name.startswith("trip_count")]
    assert not any(a.source == "default" for a in trips), trips
    assert k.flops_per_thread["fp32"] == 2 * 2048 ** 3 / (32 * 32 * 64)
