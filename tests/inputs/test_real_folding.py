"""Static folding on the real programs of tests/data/real (an untrusted workspace: no capture).

Each expected figure was read off the program's source by hand (the comment says where). Where
the source does not fix a value (a size read from the command line, a function parameter), the
value is a default that says so, why, and how to give the real one: never a silent default.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.analysis.emulator.launch import GIVE_A_LAUNCH, resolve_launch
from kernelscope.analysis.frontend.inclusion import with_context
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.frontend.source import parse_source

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
_FLAGS = json.loads((REAL / "build_flags.json").read_text())
SM_COUNT = 132


def _flags(name: str) -> tuple[str, ...]:
    return tuple(f.format(real=REAL) for f in (*_FLAGS["*"], *_FLAGS.get(name, ())))


def _resolved(name: str, toolchain) -> dict[str, dict[str, tuple[str, str]]]:
    """Kernel base name -> {assumption name: (value, source)} for the file and its local headers."""
    path = REAL / name
    src = with_context(parse_source(path.read_text()), path, path, _flags(name), toolchain)
    kernels = [k.name for k in src.kernels] + [k.name for c in src.context for k in c.source.kernels]
    out = {}
    for k in kernels:
        r = resolve_launch(k, src, AnalysisOptions(), SM_COUNT)
        out[k] = {a.name: (a.value, a.source) for a in r.assumptions} | {"_detail": {a.name: a.detail for a in r.assumptions}}
    return out


def _launch(got: dict) -> tuple:
    return tuple(got[n] for n in ("grid", "block", "dynamic_smem"))


SITE = "launch_site"

# file -> kernel -> (grid, block, dynamic smem, {parameter: value}), each folded from the source
FOLDED = {
    # dim3 gridBlock(1, 1) and threadBlock(VOTE_DATA_GROUP * warp_size, 1), declared again in each
    # `{ ... }` block of main(); the kernels are defined in the included simpleVote_kernel.cuh
    "cuda-samples/simpleVoteIntrinsics.cu": {
        "VoteAnyKernel1": ("(1, 1, 1)", "(128, 1, 1)", "0", {"size": "128"}),
        "VoteAllKernel2": ("(1, 1, 1)", "(128, 1, 1)", "0", {"size": "128"}),
        "VoteAnyKernel3": ("(1, 1, 1)", "(96, 1, 1)", "0", {"warp_size": "32"})},
    # NUM_PER_BLOCK = 2 * 256 and block_num = N / NUM_PER_BLOCK, plain ints assigned once
    "how-to-optimize-in-gpu/reduce_v3_add_during_load.cu": {"reduce3": ("(65536, 1, 1)", "(256, 1, 1)", "0", {})},
    # const int block_num = 1024; template arguments at the launch; n = N = 32 * 1024 * 1024
    "how-to-optimize-in-gpu/reduce_v6_multi_add.cu": {"reduce6": ("(1024, 1, 1)", "(256, 1, 1)", "0", {"n": "33554432"})},
    "how-to-optimize-in-gpu/reduce_v7_shuffle.cu": {"reduce7": ("(1024, 1, 1)", "(256, 1, 1)", "0", {"n": "33554432"})},
    "how-to-optimize-in-gpu/elementwise_add.cu": {"vec4_add": ("(32768, 1, 1)", "(256, 1, 1)", "0", {})},
    # #define N 1024, BLOCK_SIZE 32; dim3 gridSize(N/BLOCK_SIZE, N/BLOCK_SIZE, 1)
    "learn-cuda-programming/conflict_solved.cu": {
        "matrix_transpose_naive": ("(32, 32, 1)", "(32, 32, 1)", "0", {}),
        "matrix_transpose_shared": ("(32, 32, 1)", "(32, 32, 1)", "0", {})},
    # launched from a host function other than main: IMG_SIZE / NUM_THREADS
    "learn-cuda-programming/soa.cu": {"complicatedCalculation": ("(4096, 1, 1)", "(256, 1, 1)", "0", {})},
    # dimGrid(M / dimBlock.x, N / dimBlock.y) in sgemm_gpu, which main() hands to
    # performance_estimation(sgemm_gpu, ..., N, M, K) after `N = M = K = 2048;`: the calls through its
    # function-pointer parameter `sgemm` are sgemm_gpu's (issue 31)
    "learn-cuda-programming/sgemm.cu": {"sgemm_gpu_kernel": ("(128, 128, 1)", "(16, 16, 1)", "0", {"M": "2048"})},
}

# file -> kernel -> (block folded from the source, text of the grid that does not fold): the
# grid depends on a function parameter or on argv, so it is a default that says which launch
PARTIAL = {
    # dimGrid(size / dimBlock.x) in Operator::async_operation, size a parameter; dimBlock(256)
    "learn-cuda-programming/cuda_pipelining.cu": {"vecAdd_kernel": ("(256, 1, 1)", "line 42 (`dimGrid`)")},
    # nx, ny from get_argval(argv, "-nx", 16384); constexpr dim_block_x = dim_block_y = 32 in a
    # braced block `{dim_block_x, dim_block_y, 1}`
    "multi-gpu-programming-models/jacobi.cu": {
        "jacobi_kernel": ("(32, 32, 1)", "line 254 (`dim_grid`)"),
        "initialize_boundaries": ("(128, 1, 1)", "line 204 (`ny / 128 + 1`)")},
}


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_launches_fold_from_the_source(toolchain, name):
    got = _resolved(name, toolchain)
    for kernel, (grid, block, smem, args) in FOLDED[name].items():
        k = got[kernel]
        assert _launch(k) == ((grid, SITE), (block, SITE), (smem, SITE)), kernel
        assert {p: k[p] for p in args} == {p: (v, SITE) for p, v in args.items()}, kernel


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_a_block_that_folds_is_used_when_the_grid_does_not(toolchain, name):
    got = _resolved(name, toolchain)
    for kernel, (block, where) in PARTIAL[name].items():
        k = got[kernel]
        assert k["block"] == (block, SITE), kernel
        assert k["grid"][1] == "default"
        assert f"the launch at {where} does not fold" in k["_detail"]["grid"] and GIVE_A_LAUNCH in k["_detail"]["grid"]
    # iy_start is `int iy_start = 1;` in main()
    if name.endswith("jacobi.cu"):
        assert got["jacobi_kernel"]["iy_start"] == ("1", SITE)


def test_no_kernel_of_a_program_silently_uses_a_default(toolchain):
    """Every real program has a main(): a launch value not folded is a default that says why and
    how to give the real one, and a kernel never launched says that too."""
    programs = sorted(p.relative_to(REAL).as_posix() for p in REAL.rglob("*.cu"))
    seen = 0
    for name in programs:
        for kernel, k in _resolved(name, toolchain).items():
            for what in ("grid", "block", "dynamic_smem"):
                value, source = k[what]
                assert source in ("launch_site", "default"), (name, kernel, what)
                if source == "default":
                    assert GIVE_A_LAUNCH in k["_detail"][what], (name, kernel, what)
                    seen += 1
    assert seen  # some programs' launches do not fold (sizes from argv, parameters, arrays of dim3)
    never = _resolved("how-to-optimize-in-gpu/elementwise_add.cu", toolchain)["add"]["_detail"]["grid"]
    assert never.startswith("no launch of `add` in this file or the files of its translation unit")
