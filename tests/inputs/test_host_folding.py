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


FIRST = "with each loop around it at its first value"


def test_a_sweep_over_a_list_of_block_sizes_is_read_at_its_first(toolchain):
    """block_sweep.cu: main() runs `softmax_forward(..., block_sizes[j])` for each block size of a
    local list, and the launcher computes `grid_size = ceil_div(N * 32, block_size)`. The program's
    first launch is block_sizes[0] = 32 threads: 8192 blocks, one warp per row; row_mean's
    `<<<N, block_size, block_size * sizeof(float)>>>` is 8192 blocks of 32 with 128 B. Each is the
    program's own launch, labelled as its sweep's first configuration (what capture keeps of
    equally frequent ones), not an assumption."""
    result = analyze(HERE / "block_sweep.cu", AnalysisOptions(), toolchain=toolchain, depth="quick")
    k, mean = (next(k for k in result.kernels if k.name.startswith(name)) for name in ("softmax_rows", "row_mean"))
    assert (k.launch.grid, k.launch.block) == ((8192, 1, 1), (32, 1, 1))
    assert (mean.launch.grid, mean.launch.block, mean.launch.dynamic_smem) == ((8192, 1, 1), (32, 1, 1), 128)
    for kernel, swept in ((k, ("grid", "block")), (mean, ("block", "dynamic_smem"))):
        launch = {a.name: a for a in kernel.assumptions if a.name in ("grid", "block", "dynamic_smem")}
        assert {a.source for a in launch.values()} == {SITE}
        assert all(FIRST in launch[name].detail for name in swept), launch
    assert FIRST not in next(a.detail for a in mean.assumptions if a.name == "grid")  # N folds on its own


def test_a_hint_outranks_the_first_value_of_a_sweep(toolchain):
    """A hint names the configuration of the sweep the user means: block 512 for softmax_rows, and
    the grid is the launch's own formula for it (ceil_div(8192 * 32, 512) = 512 blocks), a default
    since it rests on the block; row_mean, without a hint, keeps the sweep's first launch."""
    hints = {"softmax_rows": LaunchHint(block=512)}
    result = analyze(HERE / "block_sweep.cu", AnalysisOptions(launch_hints=hints), toolchain=toolchain, depth="quick")
    k, mean = (next(k for k in result.kernels if k.name.startswith(name)) for name in ("softmax_rows", "row_mean"))
    assert (k.launch.block, k.launch.grid) == ((512, 1, 1), (512, 1, 1))
    sources = {a.name: a.source for a in k.assumptions}
    assert (sources["block"], sources["grid"]) == ("settings", "default")
    detail = next(a.detail for a in k.assumptions if a.name == "grid")
    assert "the grid is what the launch's own `grid_size` computes for a block of 512 threads" in detail
    assert detail.startswith("(8192, 1, 1), from the launch at line 40, with each loop around it at its first value")
    assert "is one of the kernel's several launches and the hint or annotation names another" in detail
    assert not [a for a in result.advice if a.optimizer == "block_increase" and a.kernel == k.mangled]
    assert (mean.launch.grid, mean.launch.block, mean.launch.dynamic_smem) == ((8192, 1, 1), (32, 1, 1), 128)


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


LAUNCHERS = HERE / "launchers.cu"


@pytest.fixture(scope="module")
def launchers(toolchain):
    result = analyze(LAUNCHERS, AnalysisOptions(), toolchain=toolchain, depth="quick")
    assert result.compiled
    return {k.name.split("(")[0].removeprefix("void "): k for k in result.kernels}


# kernel -> (grid, block, dynamic shared bytes, the fields read at the sweep's first value), read off
# launchers.cu by hand: B * T * C = 4 * 256 * 512, the sweep's first block block_sizes[0] = 64
SWEPT = {
    # dispatch() -> launch_scale(x, B * T * C, block_size): ceil_div(524288, 64)
    "scale_kernel": ("(8192, 1, 1)", "(64, 1, 1)", "0", {"grid", "block"}),
    # launch_rows(x, B * T, C, block_size): <<<rows, block_size, block_size * sizeof(float)>>>
    "row_kernel": ("(1024, 1, 1)", "(64, 1, 1)", "256", {"block", "dynamic_smem"}),
    # launch_warps sets `block_size = 64;` before its launch, whatever it is given: no sweep
    "warp_kernel": ("(512, 1, 1)", "(64, 1, 1)", "0", set()),
    # packed_kernel(x, n, block_size), the launcher of the same name: ceil_div(524288, 64 * pack::size)
    # with `typedef Pack<real> pack;` and Pack's `static constexpr int size = sizeof(int4) / sizeof(Element)`
    "packed_kernel": ("(2048, 1, 1)", "(64, 1, 1)", "0", {"grid", "block"}),
    # reduce(partial, x, n, 256): `<<<blocks, ...>>>` does not fold (`blocks` reads the SM count
    # at run time), `<<<1, threads, threads * sizeof(float)>>>` does: the grid is that launch's
    "partial_sum": ("(1, 1, 1)", "(256, 1, 1)", "1024", set()),
}


@pytest.mark.parametrize("kernel", sorted(SWEPT))
def test_a_launcher_reached_through_a_dispatcher_folds_with_mains_values(launchers, kernel):
    grid, block, smem, swept = SWEPT[kernel]
    k = launchers[kernel]
    assert _launch(k) == {"grid": (grid, SITE), "block": (block, SITE), "dynamic_smem": (smem, SITE)}
    for a in k.assumptions:
        if a.name in ("grid", "block", "dynamic_smem"):
            assert (FIRST in a.detail) == (a.name in swept), a


def test_one_launch_of_several_says_so_and_a_hint_outranks_it(toolchain, launchers):
    """partial_sum's grid of 1 is the launch over the partial sums; the launch over the input does
    not fold. The detail says so, and a hint's grid (the launch the user means) replaces it, while
    the block and shared memory both launches agree on stay the program's."""
    grid = next(a for a in launchers["partial_sum"].assumptions if a.name == "grid")
    assert "one of the kernel's 2 launches: the launch at line 121 (`blocks`) does not fold" in grid.detail
    hints = {"partial_sum": LaunchHint(grid=528)}
    result = analyze(LAUNCHERS, AnalysisOptions(launch_hints=hints), toolchain=toolchain, depth="quick")
    k = next(k for k in result.kernels if k.name.startswith("partial_sum"))
    assert (k.launch.grid, k.launch.block, k.launch.dynamic_smem) == ((528, 1, 1), (256, 1, 1), 1024)
    assert _launch(k) == {"grid": ("(528, 1, 1)", "settings"), "block": ("(256, 1, 1)", SITE),
                          "dynamic_smem": ("1024", SITE)}


def test_a_list_handed_to_a_call_is_not_read_as_its_initialiser(launchers):
    """`int sizes[] = {64, 32}; choose_sizes(sizes, 2);` may rewrite the list: the launch with
    sizes[0] stays an assumption that says which launch did not fold."""
    launch = _launch(launchers["handed_kernel"])
    assert launch["grid"][1] == launch["block"][1] == "default"
    detail = next(a.detail for a in launchers["handed_kernel"].assumptions if a.name == "block")
    assert "(`sizes[0]`) does not fold" in detail and GIVE_A_LAUNCH in detail


@pytest.mark.parametrize("body, block", [
    ("int b[] = {128, 256}; k<<<4, b[1]>>>();", 256),
    ("int b[3] = {128, 256, 512}; int j = 2; k<<<4, b[j]>>>();", 512),
    ("int b[] = {128, 256}; b[0] = 64; k<<<4, b[0]>>>();", None),  # written: not its initialiser
    ("int b[] = {128, 256}; k<<<4, b[2]>>>();", None),  # past the list
    ("int b[] = {128, 256}; fill(b + 1); k<<<4, b[0]>>>();", None),  # handed on
    ("int b[2][2] = {{1, 2}, {3, 4}}; k<<<4, b[0][1]>>>();", None),  # two dimensions: not read
])
def test_an_element_of_a_local_list_folds_while_nothing_writes_the_list(body, block):
    src = parse_source("__global__ void k() {}\nvoid fill(int *p);\nint main() { " + body + " }\n")
    (site,) = src.launch_sites
    assert site.block.value == block


def test_a_parameter_assigned_once_holds_the_assignment_after_it():
    """`block = 32;` in the launcher's own body: the call's value before it, 32 after it; an
    assignment in a branch leaves the parameter unknown after it."""
    src = parse_source("__global__ void k() {}\n"
                       "void a(int n, int block) {\n"
                       "  k<<<n / block, block>>>(); block = 32; k<<<n / block, block>>>(); }\n"
                       "void b(int n, int block) { if (n > 4) block = 32; k<<<n / block, block>>>(); }\n"
                       "int main() { a(1024, 128); b(1024, 128); }\n")
    assert [(s.function, s.grid.value, s.block.value) for s in src.launch_sites] == \
        [("a", 8, 128), ("a", 32, 32), ("b", None, None)]


@pytest.mark.parametrize("grid", [
    ("Tile::W", 32),  # a struct's static const member
    ("wide::size", 2),  # `using wide = Pack<double>;`: sizeof(int4) / sizeof(double)
    ("Pack<short>::size", 8),  # an instance named in place
    ("Pack<half_t>::size", 8),  # through a typedef of the argument
    ("Tile::H", None),  # not a static constant: a plain member
    ("Other::W", None),  # no such type
])
def test_a_static_member_folds_through_its_type_name(grid):
    text, value = grid
    src = parse_source("struct Tile { static const int W = 32; int H = 8; };\n"
                       "template <class E> struct Pack { static constexpr int size = sizeof(int4) / sizeof(E); };\n"
                       "using wide = Pack<double>; typedef short half_t;\n"
                       f"__global__ void k() {{}}\nint main() {{ k<<<{text}, 1>>>(); }}\n")
    assert src.launch_sites[0].grid.value == value


def test_a_function_sharing_its_name_takes_only_the_calls_of_its_arity():
    """`run(x, n, b)` calls the launcher, `run<<<...>>>(x, n)` launches the kernel; with a default
    argument on either, which calls are whose is not read."""
    one = ("__global__ void run(float* x, int n) {}\n"
           "void run(float* x, int n, int b) { run<<<n / b, b>>>(x, n); }\n"
           "int main() { run(0, 4096, 128); }\n")
    assert [(s.grid.value, s.block.value) for s in parse_source(one).launch_sites] == [(32, 128)]
    defaulted = one.replace("int n, int b)", "int n, int b = 64)")
    assert [(s.grid.value, s.block.value) for s in parse_source(defaulted).launch_sites] == [(None, None)]
