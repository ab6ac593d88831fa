"""Issue 34's missing remedies, each on a real kernel that needs it and on one that already has it
(real nvcc, emulated): thread tiling in registers, tensor cores, fewer blocks with more elements per
thread, and coalescing read from the lanes' executed addresses where the address analysis stops."""

from __future__ import annotations

import pytest

from .realkernel import analyse

TILED = """#define T 16
__global__ void mm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ float As[T][T], Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float sum = 0.0f;
    for (int t = 0; t < n; t += T) {
        As[ty][tx] = A[row * n + t + tx];
        Bs[ty][tx] = B[(t + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < T; ++k)
            sum += As[ty][k] * Bs[k][tx];  // MARK
        __syncthreads();
    }
    C[row * n + col] = sum;
}
void run(const float* a, const float* b, float* c) { mm<<<dim3(64, 64), dim3(16, 16)>>>(a, b, c, 1024); }
"""

# the same product with an 8 x 8 tile of outputs per thread: a loaded word feeds 8 FMAs
THREAD_TILED = """#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
__global__ void mm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ float As[BK][BM], Bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const float* a = A + blockIdx.y * BM * n;
    const float* b = B + blockIdx.x * BN;
    float acc[TM][TN] = {};
    float ra[TM], rb[TN];
    for (int t = 0; t < n; t += BK) {
        for (int i = 0; i < 4; ++i) {
            int e = tid + i * 256;
            As[e % BK][e / BK] = a[(e / BK) * n + t + e % BK];
            Bs[e / BN][e % BN] = b[(t + e / BN) * n + e % BN];
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
            for (int i = 0; i < TM; ++i) ra[i] = As[k][ty * TM + i];
            for (int j = 0; j < TN; ++j) rb[j] = Bs[k][tx * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += ra[i] * rb[j];  // MARK
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            C[(blockIdx.y * BM + ty * TM + i) * n + blockIdx.x * BN + tx * TN + j] = acc[i][j];
}
void run(const float* a, const float* b, float* c) { mm<<<dim3(8, 8), dim3(16, 16)>>>(a, b, c, 1024); }
"""

WMMA = """#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
__global__ void mm(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int n)
{
    int wr = (blockIdx.y * blockDim.y + threadIdx.y) * 16, wc = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(fa, A + wr * n + k, n);
        wmma::load_matrix_sync(fb, B + k * n + wc, n);
        wmma::mma_sync(acc, fa, fb, acc);  // MARK
    }
    wmma::store_matrix_sync(C + wr * n + wc, acc, n, wmma::mem_row_major);
}
void run(const half* a, const half* b, float* c) { mm<<<dim3(16, 64), dim3(128, 1)>>>(a, b, c, 1024); }
"""

# two elements per thread, then the block's tree: the tree runs once per 512 elements
PER_BLOCK = """#define N (1 << 25)
__global__ void reduce(const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float s[256];
    unsigned t = threadIdx.x, i = blockIdx.x * 512 + t;
    s[t] = in[i] + in[i + 256];
    __syncthreads();
    for (unsigned st = 128; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];  // MARK
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
void run(const float* in, float* out) { reduce<<<N / 512, 256>>>(in, out); }
"""

# the same sum with a grid-stride loop: each thread already adds many elements
GRID_STRIDE = """#define N (1 << 25)
__global__ void reduce(const float* __restrict__ in, float* __restrict__ out, unsigned n)
{
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    float sum = 0.0f;
    for (unsigned i = blockIdx.x * 256 + t; i < n; i += 256 * gridDim.x)
        sum += in[i];
    s[t] = sum;
    __syncthreads();
    for (unsigned st = 128; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];  // MARK
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
void run(const float* in, float* out) { reduce<<<1056, 256>>>(in, out, N); }
"""


def test_register_tiling_on_one_output_per_thread(toolchain, tmp_path):
    r = analyse(TILED, toolchain, tmp_path)
    (a,) = r.by("register_tiling")
    assert r.line_of("// MARK") in a.lines and a.importance > 0.05 and 1.0 < a.speedup <= 1.5
    # 16 words of As (LDS.128) and 16 of Bs for 16 FMAs: two shared words per FMA, from the SASS
    assert "2.00 shared-memory words per FMA" in a.message and "8×8 tile of outputs" in a.message
    assert a.estimate.formula.startswith("GPA Eq. 2") and a.estimate.inputs["fraction"] == pytest.approx(0.875)


def test_no_register_tiling_where_each_thread_has_a_tile(toolchain, tmp_path):
    r = analyse(THREAD_TILED, toolchain, tmp_path)
    assert not r.by("register_tiling"), [a.message for a in r.by("register_tiling")]


def test_tensor_cores_for_an_fma_bound_matrix_multiply(toolchain, tmp_path):
    r = analyse(THREAD_TILED, toolchain, tmp_path)
    (a,) = r.by("tensor_cores")
    assert r.line_of("// MARK") in a.lines and a.importance >= 0.1 and a.speedup > 1.0
    assert "wmma::mma_sync" in a.message and "FP32 FMAs" in a.message
    # the tensor rate over the FP32 rate, from the H100's data: far above what the FMAs' share allows
    assert a.estimate.inputs["fraction"] > 0.9


def test_no_tensor_cores_where_the_kernel_uses_them(toolchain, tmp_path):
    r = analyse(WMMA, toolchain, tmp_path)
    assert any(i.opcode.startswith("HMMA") for k in r.program.kernels for i in k.sass.instructions)
    assert not r.by("tensor_cores"), [a.message for a in r.by("tensor_cores")]


def test_thread_coarsening_where_each_block_combines_a_few_elements(toolchain, tmp_path):
    r = analyse(PER_BLOCK, toolchain, tmp_path)
    (a,) = r.by("thread_coarsening")
    assert r.line_of("// MARK") in a.lines and a.importance >= 0.1 and 1.05 <= a.speedup <= 1.5
    # 65,536 blocks: 8x the elements per thread leaves 8,192, more than a wave of the H100
    assert "65536 -> 8192 blocks" in a.message and "fewer blocks with more elements per thread" in a.message
    assert a.estimate.inputs["fraction"] == pytest.approx(7 / 8) and a.assumed == ()


def test_no_thread_coarsening_with_a_grid_stride_loop(toolchain, tmp_path):
    r = analyse(GRID_STRIDE, toolchain, tmp_path)
    assert not r.by("thread_coarsening"), [a.message for a in r.by("thread_coarsening")]


def test_no_thread_coarsening_where_every_thread_writes_its_own_result(toolchain, tmp_path):
    # a stencil through a shared tile: one barrier after the loads, then per-element work, stored by
    # every thread; more elements per thread would not make that phase rarer per element
    src = """#define N (1 << 25)
__global__ void blur(const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float s[258];
    unsigned t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t + 1] = in[i];
    if (t == 0) s[0] = in[i > 0 ? i - 1 : i];
    if (t == 255) s[257] = in[i + 1 < N ? i + 1 : i];
    __syncthreads();
    out[i] = 0.25f * s[t] + 0.5f * s[t + 1] + 0.25f * s[t + 2];  // MARK
}
void run(const float* in, float* out) { blur<<<N / 256, 256>>>(in, out); }
"""
    r = analyse(src, toolchain, tmp_path)
    assert not r.by("thread_coarsening"), [a.message for a in r.by("thread_coarsening")]


def test_no_thread_coarsening_on_an_assumed_launch(toolchain, tmp_path):
    # the grid from a run-time value: the waves the item rests on are a guess, so it is withheld
    src = PER_BLOCK.replace("reduce<<<N / 512, 256>>>(in, out)", "reduce<<<blocks, 256>>>(in, out)").replace(
        "void run(const float* in, float* out)", "void run(const float* in, float* out, int blocks)")
    r = analyse(src, toolchain, tmp_path)
    assert not r.by("thread_coarsening")


# a row per thread with a 64-bit index times an argument: the address analysis does not follow
# `row * lda`, the walked lanes do (32 sectors per request: every lane in its own)
ROWS = """__global__ void gemv(size_t n, const float* __restrict__ A, size_t lda, const float* __restrict__ x,
                     float* __restrict__ y)
{
    size_t const row{blockIdx.x * blockDim.x + threadIdx.x};
    float s = 0.0f;
    for (size_t k = 0; k < n; ++k)
        s += A[row * lda + k] * x[k];  // MARK
    y[row] = s;
}
void run(const float* a, const float* x, float* y) { gemv<<<16, 256>>>(4096, a, 4096, x, y); }
"""


def test_coalescing_from_the_lanes_executed_addresses(toolchain, tmp_path):
    r = analyse(ROWS, toolchain, tmp_path)
    (a,) = r.by("coalesced_access")
    assert a.lines == (r.line_of("// MARK"),)
    assert "32 32-byte sectors where a coalesced one touches 4 (the lanes' executed addresses" in a.message
    # the estimate reads what the executed requests cost against what coalesced ones need (the 32 B
    # sectors past L1, or the LSU's 128 B wavefronts where the LSU is the busier unit): every lane in
    # its own sector, so at least 8 times too many, and that share of the scattered loads' cost goes;
    # `x[k]` on the same line (one address for the warp) is not counted
    inputs = a.estimate.inputs
    assert inputs["sectors"] >= 8 * inputs["ideal_sectors"]
    assert inputs["fraction"] == pytest.approx(1 - inputs["ideal_sectors"] / inputs["sectors"])
    assert len(a.changes) < len(
        [i for k in r.program.kernels for i in k.sass.instructions if i.opcode == "LDG" and i.line == a.lines[0]])


def test_no_coalescing_where_lanes_read_neighbouring_words(toolchain, tmp_path):
    r = analyse(ROWS.replace("A[row * lda + k]", "A[k * lda + row]"), toolchain, tmp_path)
    assert not r.by("coalesced_access"), [a.message for a in r.by("coalesced_access")]
