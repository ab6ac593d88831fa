"""Static folding on the real programs of tests/data/real (an untrusted workspace: no capture).

Each expected figure was read off the program's source by hand (the comment says where). A size
the command line may change is the program's own default when run without arguments, and says so;
where the source does not fix a value at all, the value is a default that says so, why, and how
to give the real one: never a silent default.
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

# file -> kernel -> (grid, block): sizes the command line may change, read as the program runs
# without arguments (what launch capture runs), each labeled so in its detail
WITHOUT_ARGUMENTS = {
    # nx = ny = get_argval<int>(argv, argv + argc, "-nx", 16384): the helper returns its default
    # unless the flag is given; dim_grid((nx + 31) / 32, (ny + 31) / 32); ny / 128 + 1 blocks
    "multi-gpu-programming-models/jacobi.cu": {
        "jacobi_kernel": ("(512, 512, 1)", "(32, 32, 1)"),
        "initialize_boundaries": ("(129, 1, 1)", "(128, 1, 1)")},
    # dimsA(5 * 2 * block_size, ...) and dimsB(5 * 4 * block_size, ...) with block_size 32, changed
    # only under `if (checkCmdLineFlag(argc, argv, "wA"))` and its like; grid(dimsB.x / 32, dimsA.y / 32)
    "cuda-samples/matrixMul.cu": {"MatrixMulCUDA": ("(20, 10, 1)", "(32, 32, 1)")},
    # dimGrid(size / dimBlock.x) in the member function Operator::async_operation, which main()
    # calls as ls_operator[i].async_operation(..., size / num_operator, ...) with size 1 << 24 and
    # num_operator 4 unless `if (argc > 1) num_operator = atoi(argv[1]);`; dimBlock(256)
    "learn-cuda-programming/cuda_pipelining.cu": {"vecAdd_kernel": ("(16384, 1, 1)", "(256, 1, 1)")},
}


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_launches_fold_from_the_source(toolchain, name):
    got = _resolved(name, toolchain)
    for kernel, (grid, block, smem, args) in FOLDED[name].items():
        k = got[kernel]
        assert _launch(k) == ((grid, SITE), (block, SITE), (smem, SITE)), kernel
        assert {p: k[p] for p in args} == {p: (v, SITE) for p, v in args.items()}, kernel


@pytest.mark.parametrize("name", sorted(WITHOUT_ARGUMENTS))
def test_sizes_from_the_command_line_are_the_programs_defaults_and_say_so(toolchain, name):
    got = _resolved(name, toolchain)
    for kernel, (grid, block) in WITHOUT_ARGUMENTS[name].items():
        k = got[kernel]
        assert (k["grid"], k["block"]) == ((grid, SITE), (block, SITE)), kernel
        assert "as the program runs without command-line arguments" in k["_detail"]["grid"], kernel
    # iy_start is `int iy_start = 1;` in main()
    if name.endswith("jacobi.cu"):
        assert got["jacobi_kernel"]["iy_start"] == ("1", SITE)


def test_kernels_launched_through_an_array_of_pointers(toolchain):
    """finite-difference.cu: `switch (dimension) { case 0: fpDeriv[0] = derivative_x; fpDeriv[1] =
    derivative_x_lPencils; ... }` then `fpDeriv[fp]<<<grid[dimension][fp], block[dimension][fp]>>>` in
    a loop over fp, with the file's `dim3 grid[3][2], block[3][2]` set element by element in
    setDerivativeParameters() (mx = my = mz = 64, sPencils 4, lPencils 32)."""
    got = _resolved("code-samples/finite-difference.cu", toolchain)
    expected = {
        "derivative_x": ("(16, 64, 1)", "(64, 4, 1)"), "derivative_x_lPencils": ("(2, 64, 1)", "(64, 4, 1)"),
        "derivative_y": ("(16, 64, 1)", "(4, 64, 1)"), "derivative_y_lPencils": ("(2, 64, 1)", "(32, 8, 1)"),
        "derivative_z": ("(16, 64, 1)", "(4, 64, 1)"), "derivative_z_lPencils": ("(2, 64, 1)", "(32, 8, 1)"),
    }
    assert {k: (got[k]["grid"], got[k]["block"]) for k in expected} == {
        k: ((g, SITE), (b, SITE)) for k, (g, b) in expected.items()}
    assert "without command-line arguments" not in got["derivative_x"]["_detail"]["grid"]  # main(void)


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
