"""Trip counts of unrolled loops: the main loop runs the source trips / its unroll factor, and a
remainder loop never runs more than `LoopInfo.max_trip_count`, whatever the trip source.

Unrolling by 4 a loop whose trip count the compiler does not know replicates its body four
times and runs it a quarter as often; the re-modeled time should stay roughly the same.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.emulator.launch import resolve_trip
from kernelscope.analysis.emulator.model import EmulationSettings, prepare
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.profile import KernelProfile, LaunchConfig

from _build import build_example

LOOPS = {  # example -> text of the loop header that gets `#pragma unroll 4`
    "local_array": "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)",
    "reduction_divergent": "for (unsigned int s = 1; s < blockDim.x; s *= 2)",
}


def _with_pragma(src: Path, header: str, directory: Path) -> Path:
    """`src` with `#pragma unroll 4` above the loop."""
    lines = src.read_text().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if header in line]
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines.insert(at, f"{indent}#pragma unroll 4\n")
    out = directory / src.name
    out.write_text("".join(lines))
    return out


def _kernel(path: Path) -> KernelProfile:
    result = analyze(path, AnalysisOptions(), depth="quick")
    assert result.profile is not None, result.messages
    (kernel,) = result.profile.kernels
    return kernel


def _trip(kernel: KernelProfile) -> int:
    (a,) = [a for a in kernel.provenance.assumptions if a.name.startswith("trip_count@")]  # the one loop
    return int(a.value)


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_unroll_by_4_remodels_about_as_fast(examples_dir, tmp_path, name):
    src = examples_dir / f"{name}.cu"
    rolled = _kernel(src)
    unrolled = _kernel(_with_pragma(src, LOOPS[name], tmp_path))
    # the pragma took effect: the SASS loop runs a quarter of the source loop's trips
    assert _trip(unrolled) == math.ceil(_trip(rolled) / 4)
    ratio = unrolled.duration_s / rolled.duration_s
    assert 0.8 <= ratio <= 1.5, ratio


@pytest.fixture(scope="module")
def target():
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    return arch, cat.default_device(arch)


def _loops(path: Path, toolchain, target) -> list[tuple[str, int, int | None, int, str]]:
    """(role, unroll factor, max trips, modeled trips, assumption detail) of each SASS loop, by the
    folding rules (with the walked lanes, a remainder loop the launch does not enter is not run at
    all: test_lanes.py)."""
    prog = build_example(path, toolchain)
    (k,) = prog.kernels
    prep = prepare(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k, settings=EmulationSettings(execute_lanes=False))
    infos = {li.index: li for li in k.loops}
    trips = [a for a in prep.assumptions if a.name.startswith("trip_count@")]
    return [(infos[L.info_index].role, infos[L.info_index].unroll_factor, infos[L.info_index].max_trip_count,
             L.trip, a.detail) for L, a in zip(prep.decoded.loops, trips, strict=True)]


def test_sgemm_naive_k_loop_siblings_follow_their_roles(examples_dir, toolchain, target, tmp_path):
    src = examples_dir / "sgemm_naive.cu"
    loops = _loops(src, toolchain, target)
    assert [r for r, *_ in loops] == ["main", "remainder", "remainder"]
    (_, main_factor, _, main_trips, _), *rest = loops
    n = 1024  # the annotation's n=N
    assert main_trips == n // main_factor
    for _, factor, cap, trips, detail in rest:
        assert 1 <= trips <= cap and "remainder of the unrolled loop" in detail

    # n read at run time: every loop falls back to the default trip count, which must not be
    # given in full to the remainders (before: 64 trips of each sibling, 4× the main loop's work)
    text = src.read_text().replace("// kernelscope: n=N block=BLOCK*BLOCK", "// kernelscope: block=BLOCK*BLOCK")
    text = text.replace("(dA, dB, dC, N)", "(dA, dB, dC, atoi(getenv(\"N\")))")
    runtime = tmp_path / "sgemm_runtime_n.cu"
    runtime.write_text(text)
    loops = _loops(runtime, toolchain, target)
    default = AnalysisOptions().default_trip_count
    assert [r for r, *_ in loops] == ["main", "remainder", "remainder"]
    (_, main_factor, _, main_trips, _), *rest = loops
    assert main_trips == math.ceil(default / main_factor)
    for _, factor, cap, trips, detail in rest:
        assert trips == min(cap, math.ceil(default / factor))
        assert f"at most {cap} trips" in detail


def test_hints_and_unknown_steps_are_divided_by_the_unroll_factor():
    launch = LaunchConfig(grid=(64, 1, 1), block=(256, 1, 1), dynamic_smem=0)
    common = dict(info_trip=None, launch=launch, default=64, where="line 1")
    # a known constant step wins over the replicated body
    assert resolve_trip(bound_value=1000, step=("const", 8), trip_hint=None, unroll=4, **common)[0] == 125
    assert resolve_trip(bound_value=1000, step=("?", None), trip_hint=None, unroll=4, **common)[0] == 250
    assert resolve_trip(bound_value=None, step=("?", None), trip_hint=100, unroll=4, **common)[0] == 25
    trip, a = resolve_trip(bound_value=None, step=("?", None), trip_hint=None, unroll=4, **common)
    assert trip == 16 and a.source == "default"
    # a grid-stride loop unrolled by 4 covers four strides per SASS iteration
    assert resolve_trip(bound_value=64 * 256 * 40, step=("dims", (("block", 0), ("grid", 0))), trip_hint=None, unroll=4, **common)[0] == 10
    assert resolve_trip(bound_value=None, step=("?", None), trip_hint=None, unroll=None, **common)[0] == 64
