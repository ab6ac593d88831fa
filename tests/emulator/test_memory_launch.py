"""Address analysis (coalescing, bank conflicts, L2 reuse) and launch/trip resolution."""

from __future__ import annotations

from kernelscope.analysis.emulator.launch import loop_step, resolve_launch
from kernelscope.analysis.emulator.memory import memory_shapes
from kernelscope.analysis.options import AnalysisOptions, LaunchHint
from kernelscope.analysis.frontend.source import parse_source

from synthetic import ins, loop_kernel, machine, run


def _shape(op: str, space: str, scale_imm: str, block=(256, 1, 1), grid=(64, 1, 1), uses_ctaid=True):
    s = [
        ins(0, "S2R", ("R0",), (), operands=("R0", "SR_TID.X")),
        ins(1, "S2R", ("R1",), (), operands=("R1", "SR_CTAID.X")),
        ins(2, "IMAD", ("R0",), ("R1", "R0"), operands=("R0", "R1", "c[0x0][0x0]", "R0")) if uses_ctaid else
        ins(2, "MOV", ("R5",), (), operands=("R5", "RZ")),
        ins(3, "IMAD", ("R2", "R3"), ("R0",), mods=("WIDE",), operands=("R2", "R0", scale_imm, "c[0x0][0x160]")),
        ins(4, op, ("R4",), ("R2", "R3"), mods=("E",), operands=("R4", "desc[UR4][R2.64]"), space=space),
    ]
    if space == "shared":
        s[3] = ins(3, "IMAD", ("R2",), ("R0",), mods=("SHL", "U32"), operands=("R2", "R0", scale_imm, "RZ"))
        s[4] = ins(4, op, ("R4",), ("R2",), operands=("R4", "[R2]"), space=space)
    return memory_shapes("k", tuple(s), block, grid, None)[("k", 64)]


def test_unit_stride_is_coalesced():
    shp = _shape("LDG", "global", "0x4")
    assert shp.pattern == "coalesced" and shp.requests == 1.0 and shp.wavefronts == 1.0


def test_large_stride_costs_a_transaction_per_lane():
    shp = _shape("LDG", "global", "0x80")  # 128 B apart (SAAKE §4.4: one request per thread)
    assert shp.pattern == "uncoalesced" and shp.wavefronts == 32 and shp.requests == 8.0


def test_shared_stride_32_words_is_a_32_way_conflict():
    assert _shape("LDS", "shared", "0x80").wavefronts == 32
    assert _shape("LDS", "shared", "0x4").wavefronts == 1
    assert _shape("LDS", "shared", "0x8").wavefronts == 2


def test_blocks_that_read_the_same_lines_hit_l2():
    assert _shape("LDG", "global", "0x4").l2_hit_rate == 0.0  # each block its own data
    shared = _shape("LDG", "global", "0x4", uses_ctaid=False)
    assert shared.l2_hit_rate > 0.8


def test_launch_from_site_then_annotation_then_default():
    src = parse_source("""
#define N 1024
// kernelscope: grid=4096 block=128 n=1<<20
__global__ void a(float* x, int n) { x[threadIdx.x] = 0; }
__global__ void b(float* x, int n) { x[threadIdx.x] = 0; }
__global__ void c(float* x, int n) { x[threadIdx.x] = 0; }
int main() { float* x; b<<<N / 256, 256>>>(x, N); int m = rand(); c<<<m, m>>>(x, m); }
""")
    opts = AnalysisOptions()
    ra = resolve_launch("a(float*, int)", src, opts, 132)
    assert ra.launch.grid == (4096, 1, 1) and ra.launch.block == (128, 1, 1)
    assert {a.name: a.source for a in ra.assumptions}["grid"] == "annotation"
    assert ra.values["n"] == 1 << 20
    rb = resolve_launch("b(float*, int)", src, opts, 132)
    assert rb.launch.grid == (4, 1, 1) and {a.name: a.source for a in rb.assumptions}["grid"] == "launch_site"
    rc = resolve_launch("c(float*, int)", src, opts, 132)
    assert {a.name: a.source for a in rc.assumptions}["block"] == "default"
    hinted = AnalysisOptions(launch_hints={"c": LaunchHint(grid=7, block=64)})
    rh = resolve_launch("c(float*, int)", src, hinted, 132)
    assert rh.launch.grid == (7, 1, 1) and {a.name: a.source for a in rh.assumptions}["grid"] == "settings"


def test_loop_step_reads_the_counter_update():
    body = loop_kernel(ilp=1)[1:-1]
    assert loop_step(body, body[-1]) == ("const", 1)


def test_barrier_stalls_are_sampled():
    # two warps of one block; one has more work before __syncthreads, the other waits
    s = [ins(0, "FADD", ("R0",), ("R0",)), ins(1, "FADD", ("R0",), ("R0",)),
         ins(2, "BAR", (), (), mods=("SYNC", "DEFER_BLOCKING"), operands=("0x0",)),
         ins(3, "FADD", ("R1",), ("R1",)), ins(4, "EXIT", (), ("R0", "R1"))]
    from kernelscope.analysis.emulator.decode import R
    from kernelscope.analysis.profile import StallReason
    r, sampler, k = run(s, machine(30, 1), 4)
    assert sum(row[R[StallReason.barrier]] for row in sampler.samples) > 0
    # nobody passes the barrier before the last warp reached it
    assert r.emulated_cycles >= 2 * 30


def test_wide_accesses_take_one_wavefront_per_128_bytes_even_when_broadcast():
    from kernelscope.analysis.emulator.memory import global_shape, shared_shape

    # a broadcast LDS.128 has no bank conflict but returns 32 × 16 B = four 128 B wavefronts
    bcast = shared_shape([0] * 32, 16)
    assert bcast.wavefronts == 4 and bcast.bytes_l1 == 512 and bcast.pattern == "coalesced"
    assert shared_shape([16 * i for i in range(32)], 16).wavefronts == 4
    assert shared_shape([0] * 32, 4).wavefronts == 1  # a 4 B broadcast fits one wavefront
    assert shared_shape([8 * i for i in range(32)], 8).wavefronts == 2
    assert global_shape([0] * 32, 16, 0.0).wavefronts == 4
    # a shared request's bytes never exceed its wavefronts × 128 B (the roofline's shared ceiling)
    for offs, width in (([0] * 32, 16), ([4 * i for i in range(32)], 4), ([128 * i for i in range(32)], 4),
                        ([0] * 32, 8), (None, 16)):
        shp = shared_shape(offs, width)
        assert shp.bytes_l1 <= 128 * shp.wavefronts


def test_a_template_instance_takes_only_its_own_launch():
    src = parse_source("""
#define TILE 32
template <int B> __global__ void k(float* x) { x[threadIdx.x] = 0; }
int main() { float* x; k<16><<<7, 16>>>(x); k<TILE><<<9, 32>>>(x); }
""")
    opts = AnalysisOptions()
    r16 = resolve_launch("void k<16>(float*)", src, opts, 132)
    r32 = resolve_launch("void k<32>(float*)", src, opts, 132)
    assert (r16.launch.grid, r16.launch.block) == ((7, 1, 1), (16, 1, 1))
    assert (r32.launch.grid, r32.launch.block) == ((9, 1, 1), (32, 1, 1))  # TILE folds to 32
    r64 = resolve_launch("void k<64>(float*)", src, opts, 132)
    block = next(a for a in r64.assumptions if a.name == "block")
    assert block.source == "default" and "no launch of `k<64>`" in block.detail


def test_real_matrix_mul_launch_folds_through_its_helper():
    """cuda-samples' matrixMul (tests/data/real): main() passes `block_size = 32` to
    MatrixMultiply(), which launches MatrixMulCUDA<16> under `if (block_size == 16)` and
    MatrixMulCUDA<32> otherwise, with `dim3 threads(block_size, block_size)`. Before, both
    instances took the first launch in the file (<16>'s) and its block did not fold: both were
    modeled with the default 256 x 1 threads. The grid is the program's as it runs without
    arguments (main() overwrites the matrix sizes only under `checkCmdLineFlag`), and says so."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "data" / "real" / "cuda-samples" / "matrixMul.cu").read_text()
    src = parse_source(text)
    opts = AnalysisOptions()
    r32 = resolve_launch("void MatrixMulCUDA<32>(float*, float*, float*, int, int)", src, opts, 132)
    got = {a.name: a for a in r32.assumptions}
    assert r32.launch.block == (32, 32, 1) and got["block"].source == "launch_site"
    assert got["block"].detail == "the launch at line 196"
    assert r32.launch.grid == (20, 10, 1) and got["grid"].source == "launch_site"
    assert "as the program runs without command-line arguments" in got["grid"].detail
    r16 = resolve_launch("void MatrixMulCUDA<16>(float*, float*, float*, int, int)", src, opts, 132)
    block16 = next(a for a in r16.assumptions if a.name == "block")
    assert block16.source == "default" and "rule out" in block16.detail and "line 193" in block16.detail


def test_a_launch_written_with_the_launching_templates_parameter_launches_any_instance():
    # Lei Mao's GEMMs: `gemm_v00<T><<<grid_dim, block_dim>>>` inside `launch_gemm_kernel_v00<T>`
    src = parse_source("""
template <typename T> __global__ void g(T* x) { x[threadIdx.x] = 0; }
template <typename T> void launch(T* x) { dim3 const b{32U, 32U, 1U}; g<T><<<4, b>>>(x); }
void other(double* y) { g<double><<<5, 64>>>(y); }
""")
    r = resolve_launch("void g<float>(float*)", src, AnalysisOptions(), 132)
    assert (r.launch.grid, r.launch.block) == ((4, 1, 1), (32, 32, 1))  # not <double>'s 5 x 64
    assert resolve_launch("void g<double>(double*)", src, AnalysisOptions(), 132).launch.grid == (5, 1, 1)  # its own first


def test_a_launching_templates_argument_that_is_a_local_constant_folds():
    # `run<bs, 8>(x)` with `const int bs = 512;`: tree-sitter parses the lone name `bs` in the
    # template argument list as a type. It is the local's value, alone and beside another instance.
    launcher = """
template <unsigned B, unsigned P> __global__ void k(int* x) { x[blockIdx.x * B * P + threadIdx.x] = 0; }
template <int B, int P> void run(int* x, int n) { k<B, P><<<(n + B * P - 1) / (B * P), B>>>(x); }
"""
    one = parse_source(launcher + "int main() { const int bs = 512; int* x; run<bs, 8>(x, 1 << 20); }\n")
    r = resolve_launch("void k<512u, 8u>(int*)", one, AnalysisOptions(), 132)
    assert (r.launch.grid, r.launch.block) == ((256, 1, 1), (512, 1, 1))
    assert {a.name: a.source for a in r.assumptions}["block"] == "launch_site"
    two = parse_source(launcher + "int main() { const int bs = 512; int* x; run<bs, 8>(x, 1 << 20); "
                                  "run<128, 4>(x, 1 << 20); }\n")
    assert resolve_launch("void k<512u, 8u>(int*)", two, AnalysisOptions(), 132).launch.block == (512, 1, 1)
    assert resolve_launch("void k<128u, 4u>(int*)", two, AnalysisOptions(), 132).launch.grid == (2048, 1, 1)
