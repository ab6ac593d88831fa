"""Folding that reads host code as a compiler would (issue 31 item 3). tests/inputs/host_folding/
holds one program whose main() launches each kernel through one shape of host code seen on public
programs (llm.c's `ceil_div` helper, a `const uint BM = 64, ...` tile, a block size assigned after its
declaration, integer types other than `int`, a macro from a header reached through -I, template
arguments and `sizeof`, a loop bound held in a local, dynamic shared memory from an expression), and
one whose OpenACC/CUDA branches only balance when read as the compile reads them. Each is compiled
by nvcc and analysed through the real pipeline; the assertions are on the launch the model uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.capture.run import has_main
from kernelscope.analysis.emulator.launch import GIVE_A_LAUNCH, resolve_launch
from kernelscope.analysis.frontend.conditional import compile_passes
from kernelscope.analysis.frontend.source import parse_source
from kernelscope.analysis.options import AnalysisOptions, LaunchHint
from kernelscope.analysis.pipeline import analyze

HERE = Path(__file__).resolve().parent / "host_folding"
PROGRAM = HERE / "host_folding.cu"
OPENACC = HERE / "openacc.cu"
SITE = "launch_site"


@pytest.fixture(scope="module")
def kernels(toolchain):
    result = analyze(PROGRAM, AnalysisOptions(flags=(f"-I{HERE / 'include'}",)), toolchain=toolchain, depth="quick")
    assert result.compiled
    return {k.name.split("(")[0].removeprefix("void "): k for k in result.kernels}


def _launch(k) -> dict[str, tuple[str, str]]:
    return {a.name: (a.value, a.source) for a in k.assumptions if a.name in ("grid", "block", "dynamic_smem")}


# kernel -> (grid, block, dynamic shared bytes), each read off host_folding.cu by hand
FOLDED = {
    # ceil_div(N * 32, block_size) through a template helper; N = B * T = 8 * 1024, block 256
    "rows_kernel": ("(1024, 1, 1)", "(256, 1, 1)", "0"),
    # const uint BM = 64, BN = 64; TM = 8; gridDim(CEIL_DIV(N, BN), CEIL_DIV(M, BM)) with M = N = 1024
    "tiled_kernel<64, 64, 8>": ("(16, 16, 1)", "(512, 1, 1)", "0"),
    # `int threads; threads = 128;` then (n + threads - 1) / threads with n = 1 << 20
    "assigned_kernel": ("(8192, 1, 1)", "(128, 1, 1)", "0"),
    # const std::size_t rows = 2048, const int64_t per_block = 16, const long unsigned int grid,
    # constexpr unsigned long kTypesBlock = 64
    "types_kernel": ("(128, 1, 1)", "(64, 1, 1)", "0"),
    # NUM_BLOCKS (4 * 66) and BLOCK_SIZE 192 from include/params.h, found through -I
    "header_kernel": ("(264, 1, 1)", "(192, 1, 1)", "0"),
    # run_template<128>(x, 1 << 16): <<<n / THREADS, THREADS, THREADS * sizeof(float)>>>
    "template_kernel<128>": ("(512, 1, 1)", "(128, 1, 1)", "512"),
    # size_t halo_bytes = (tile + 2) * sizeof(float); <<<CEIL_DIV(n, tile), tile, halo_bytes>>>
    "smem_kernel": ("(256, 1, 1)", "(256, 1, 1)", "1032"),
}


@pytest.mark.parametrize("kernel", sorted(FOLDED))
def test_the_launch_folds_from_the_host_code(kernels, kernel):
    grid, block, smem = FOLDED[kernel]
    k = kernels[kernel]
    assert _launch(k) == {"grid": (grid, SITE), "block": (block, SITE), "dynamic_smem": (smem, SITE)}
    assert k.launch.dynamic_smem == int(smem)


def test_a_loop_bound_held_in_a_local_computed_from_arguments(kernels):
    """`int steps = n / chunk; for (k = 0; k < steps; ++k)` with n = 1 << 16 and chunk = 256 from
    the launch: 256 iterations, which ptxas unrolls by 4 (64 trips and a remainder loop)."""
    trips = {(a.value, a.source) for a in kernels["chunk_kernel"].assumptions if a.name.startswith("trip_count@")}
    assert ("64", SITE) in trips
    detail = next(a.detail for a in kernels["chunk_kernel"].assumptions if a.value == "64")
    assert detail.startswith("bound 256")


@pytest.mark.parametrize("kernel, why", [
    # <<<shape.grid, shape.block>>>: members of a struct set at run time (from argv)
    ("struct_kernel", "the launch at line 149 (`shape.grid`) does not fold"),
    # chosen<<<2, 64>>> with `chosen` a pointer picked at run time: neither kernel's own launch
    ("pointer_a", "no launch of `pointer_a`"),
    ("pointer_b", "no launch of `pointer_b`"),
])
def test_a_launch_that_cannot_fold_is_an_assumption_that_says_so(kernels, kernel, why):
    launch = _launch(kernels[kernel])
    assert launch["grid"][1] == launch["block"][1] == "default"
    detail = next(a.detail for a in kernels[kernel].assumptions if a.name == "grid")
    assert why in detail and GIVE_A_LAUNCH in detail


def test_a_name_the_compile_leaves_undefined_is_undefined(toolchain):
    text = OPENACC.read_text()
    # both branches of `#if defined(_OPENACC)` read at once: two `{` for one `}`, no main()
    assert "main" not in [f.name for f in parse_source(text).functions]
    cuda = parse_source(text, compile_passes(["nvcc"], "sm_90", toolchain.version))
    assert "main" in [f.name for f in cuda.functions]
    assert [(s.kernel, s.grid.value, s.block.value) for s in cuda.launch_sites] == [("relax", 4096, 256)]
    # with -fopenacc the other branch is the program, and the kernel is not launched in it
    acc = parse_source(text, compile_passes(["nvcc", "-Xcompiler", "-fopenacc"], "sm_90", toolchain.version))
    assert "main" in [f.name for f in acc.functions] and acc.launch_sites == ()
    result = analyze(OPENACC, AnalysisOptions(), toolchain=toolchain, depth="quick")
    (k,) = result.kernels
    assert _launch(k) == {"grid": ("(4096, 1, 1)", SITE), "block": ("(256, 1, 1)", SITE), "dynamic_smem": ("0", SITE)}


def test_capture_finds_the_main_the_compile_sees():
    """Launch capture runs a file's main(): it is found in the host pass's reading of the file."""
    assert has_main(OPENACC) and has_main(OPENACC, ("-Xcompiler", "-fopenacc"))
    assert not has_main(HERE / "include" / "params.h")


@pytest.mark.parametrize("hint, block, grid", [(None, 256, 1024), (512, 512, 512)])
def test_a_grid_computed_from_an_unknown_block_follows_the_block_the_model_uses(toolchain, hint, block, grid):
    """block_sweep.cu: `grid_size = ceil_div(N * 32, block_size)` with the block from a list. The
    block is a default (or a hint), and the grid is the program's formula for it: 8192 rows of 32
    threads, 1024 blocks of 256 where the grid alone was one thread per row (32 blocks)."""
    hints = {"softmax_rows": LaunchHint(block=hint)} if hint else {}
    result = analyze(HERE / "block_sweep.cu", AnalysisOptions(launch_hints=hints), toolchain=toolchain, depth="quick")
    k, mean = (next(k for k in result.kernels if k.name.startswith(name)) for name in ("softmax_rows", "row_mean"))
    assert (k.launch.block, k.launch.grid) == ((block, 1, 1), (grid, 1, 1))
    detail = next(a.detail for a in k.assumptions if a.name == "grid")
    assert f"the grid is what the launch's own `grid_size` computes for a block of {block} threads" in detail
    assert {a.name: a.source for a in k.assumptions}["grid"] == "default"  # it rests on the block: never certain
    assert not [a for a in result.advice if a.optimizer == "block_increase" and a.kernel == k.mangled]
    # row_mean<<<N, block_size, block_size * sizeof(float)>>> (no hint: the default block): the grid
    # folds, the shared memory follows the block
    assert (mean.launch.grid, mean.launch.block, mean.launch.dynamic_smem) == ((8192, 1, 1), (256, 1, 1), 1024)
    smem = next(a for a in mean.assumptions if a.name == "dynamic_smem")
    assert smem.source == "default" and "`block_size * sizeof(float)` computes" in smem.detail


def test_the_configuration_launched_most_often_is_the_one_modeled():
    """code-samples' async.cu launches `kernel` once over the whole array (n / blockSize = 16384
    blocks) and then nStreams = 4 times per stream in two loops (streamSize / blockSize = 4096):
    the program's most frequent launch, which capture reports too, is the 4096-block one."""
    src = parse_source((HERE.parents[1] / "data" / "real" / "code-samples" / "async.cu").read_text())
    assert sorted((s.grid.value, s.repeats) for s in src.launch_sites if s.kernel == "kernel") == \
        [(4096, 4), (4096, 4), (16384, 1)]
    resolved = resolve_launch("kernel(float*, int)", src, AnalysisOptions(), 132)
    assert resolved.launch.grid == (4096, 1, 1)
    assert {a.name: a.source for a in resolved.assumptions}["grid"] == SITE


@pytest.mark.parametrize("instance, block, smem", [("void testKernel<float>(float*, float*)", 32, 128),
                                                   ("void testKernel<int>(int*, int*)", 64, 256)])
def test_each_instance_of_a_launching_template_folds_with_its_own_arguments(instance, block, smem):
    """cuda-samples' simpleTemplates.cu: `runTest<float>(argc, argv, 32)` and `runTest<int>(argc,
    argv, 64)` launch `testKernel<T><<<grid, threads, mem_size>>>` with `threads(len)` and
    `mem_size = sizeof(float) * len`: the calls disagree on `len`, each instance has its own."""
    src = parse_source((HERE.parents[1] / "data" / "real" / "cuda-samples" / "simpleTemplates.cu").read_text())
    resolved = resolve_launch(instance, src, AnalysisOptions(), 132)
    assert (resolved.launch.grid, resolved.launch.block, resolved.launch.dynamic_smem) == \
        ((1, 1, 1), (block, 1, 1), smem)
    assert {a.name: a.source for a in resolved.assumptions}["block"] == SITE


def test_sizeof_a_type_parameter_folds_in_each_instance():
    src = parse_source("template <typename T> __global__ void k(T* x) {}\n"
                       "template <typename T> void run(T* x, int n) { k<T><<<n / 256, 256, 256 * sizeof(T)>>>(x); }\n"
                       "int main() { run<double>(0, 1 << 20); run<short>(0, 1 << 10); }\n")
    (site,) = src.launch_sites
    assert [(v.kernel_text, v.grid.value, v.shared_mem.value) for v in site.variants] == \
        [("k<double>", 4096, 2048), ("k<short>", 4, 512)]


@pytest.mark.parametrize("instance, grid", [("void offset<float>(float*, int)", 4096),
                                            ("void offset<double>(double*, int)", 2048)])
def test_a_deduced_launch_in_a_template_takes_the_instance_its_arguments_deduce(instance, grid):
    """code-samples' coalescing.cu: `offset<<<n/blockSize, blockSize>>>(d_a, 0)` in `runTest<T>`,
    with `T *d_a;` and `n = nMB*1024*1024/sizeof(T)`, called as runTest<double> and
    runTest<float> with nMB = 4: `offset(T* a, int s)` deduces T from `d_a`, so each instance of
    the kernel has its own launch (float: 4096 blocks, as capture records)."""
    src = parse_source((HERE.parents[1] / "data" / "real" / "code-samples" / "coalescing.cu").read_text())
    resolved = resolve_launch(instance, src, AnalysisOptions(), 132)
    assert resolved.launch.grid == (grid, 1, 1)
    assert {a.name: a.source for a in resolved.assumptions}["grid"] == SITE


def test_a_launch_whose_instance_is_not_deduced_is_not_given_another_instances_launch():
    """The argument is an expression, not a declared name: which instance the launch makes is not
    read, and the instances fold differently, so neither takes the other's launch."""
    src = parse_source("template <typename T> __global__ void k(T* a) {}\n"
                       "template <typename T> void run(char* p, int n) {\n"
                       "  k<<<n / sizeof(T), 256>>>(reinterpret_cast<T*>(p)); }\n"
                       "int main() { run<float>(0, 1 << 20); run<double>(0, 1 << 20); }\n")
    assert [v.grid.value for v in src.launch_sites[0].variants] == [262144, 131072]
    resolved = resolve_launch("void k<float>(float*)", src, AnalysisOptions(), 132)
    grid = next(a for a in resolved.assumptions if a.name == "grid")
    assert grid.source == "default" and "(`n / sizeof(T)`) does not fold" in grid.detail
