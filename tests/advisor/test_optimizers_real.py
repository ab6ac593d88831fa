"""Every optimizer on a positive and a negative REAL kernel: compiled with the real toolchain and emulated.

Positive: the advice appears on the expected line with a finite estimate > 1.
Negative: the same optimizer says nothing about the fixed variant.
"""

from __future__ import annotations

import math

import pytest

from .realkernel import analyse

H = "#define N (1 << 22)\n"


def launch(kernel: str, grid: str, block: str, args: str) -> str:
    return f"\nvoid run({args.split('|')[0]}) {{ {kernel}<<<{grid}, {block}>>>({args.split('|')[1]}); }}\n"


CASES = {
    "register_reuse": (
        """__global__ void k(const unsigned* __restrict__ d, unsigned* __restrict__ bins, int n)
{
    unsigned h[32];
    for (int b = 0; b < 32; ++b) h[b] = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        h[d[i] & 31] += 1;  // MARK
    for (int b = 0; b < 32; ++b) atomicAdd(&bins[b], h[b]);
}""" + launch("k", "1024", "256", "const unsigned* d, unsigned* b|d, b, N"),
        """__global__ void k(const unsigned* __restrict__ d, unsigned* __restrict__ bins, int n)
{
    unsigned h = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        h += d[i] & 31;  // MARK
    bins[threadIdx.x] = h;
}""" + launch("k", "1024", "256", "const unsigned* d, unsigned* b|d, b, N")),
    "fast_math": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = sinf(x[i]) * expf(x[i]);  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = __sinf(x[i]) * __expf(x[i]);  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y")),
    "warp_balance": (
        """__global__ void k(const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    __syncthreads();
    for (unsigned st = 128; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();  // MARK
    }
    if (t == 0) out[blockIdx.x] = s[0];
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ in, float* __restrict__ out)
{
    float v = in[blockIdx.x * 256 + threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) out[blockIdx.x * 8 + threadIdx.x / 32] = v;  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y")),
    "loop_unrolling": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
#pragma unroll 1
    for (int j = 0; j < n; ++j)  // MARK
        acc += x[j * 4096 + i] * 1.5f;
    y[i] = acc;
}""" + launch("k", "16", "256", "const float* x, float* y, int n|x, y, n"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
#pragma unroll 4
    for (int j = 0; j < n; ++j)  // MARK
        acc += x[j * 4096 + i] * 1.5f;
    y[i] = acc;
}""" + launch("k", "16", "256", "const float* x, float* y, int n|x, y, n")),
    "code_reordering": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 3.0f + 1.0f;  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y"),
        """__global__ void k(float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 1.0f;  // MARK
}""" + launch("k", "N / 256", "256", "float* y|y")),
    "function_inlining": (
        """__device__ __noinline__ float f(float a) { return a * a + 1.0f; }
__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int j = 0; j < 64; ++j) v = f(v);  // MARK
    y[i] = v;
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y"),
        """__device__ __forceinline__ float f(float a) { return a * a + 1.0f; }
__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int j = 0; j < 64; ++j) v = f(v);  // MARK
    y[i] = v;
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y")),
    "thread_increase": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 3.0f;
}""" + launch("k", "N / 32", "32", "const float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 3.0f;
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y")),
    "shared_memory_tiling": (
        """__global__ void k(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int j = 0; j < n; ++j)  // MARK
        acc += A[r * n + j] * B[j * n + c];
    C[r * n + c] = acc;
}
void run(const float* a, const float* b, float* c) { k<<<dim3(64, 64), dim3(16, 16)>>>(a, b, c, 1024); }
""",
        """#define T 16
__global__ void k(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ float As[T][T], Bs[T][T];
    int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += T) {  // MARK
        As[threadIdx.y][threadIdx.x] = A[r * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + c];
        __syncthreads();
        for (int j = 0; j < T; ++j) acc += As[threadIdx.y][j] * Bs[j][threadIdx.x];
        __syncthreads();
    }
    C[r * n + c] = acc;
}
void run(const float* a, const float* b, float* c) { k<<<dim3(64, 64), dim3(16, 16)>>>(a, b, c, 1024); }
"""),
    "double_precision_constant": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 2.5 + 1.0f;  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 2.5f + 1.0f;  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y")),
    "double_math_function": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = sqrt(x[i] * 2.0);  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = sqrtf(x[i] * 2.0f);  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y")),
    "restrict_pointers": (
        # after the store to y, x must be read again: y may alias it
        """__global__ void k(float* x,  // MARK
                  float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 3.0f + x[i + 1];
    y[i + N] = x[i] - x[i + 1];
}""" + launch("k", "N / 256", "256", "float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ x,  // MARK
                  float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 3.0f + x[i + 1];
    y[i + N] = x[i] - x[i + 1];
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y")),
    "vectorize_loads": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[4 * i] + x[4 * i + 1] + x[4 * i + 2] + x[4 * i + 3];  // MARK
}""" + launch("k", "N / 1024", "256", "const float* x, float* y|x, y"),
        """__global__ void k(const float4* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = x[i];
    y[i] = v.x + v.y + v.z + v.w;  // MARK
}""" + launch("k", "N / 1024", "256", "const float4* x, float* y|x, y")),
    "contended_atomics": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ sum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&sum[0], x[i]);  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* s|x, s"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ sum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&sum[i], x[i]);  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* s|x, s")),
    "divergent_branch": (
        """__global__ void k(const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (unsigned st = 1; st < blockDim.x; st *= 2) {
        if (tid % (2 * st) == 0)  // MARK
            s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
        if (tid < st)  // MARK
            s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y")),

    "strength_reduction": (
        """__global__ void k(const int* __restrict__ x, int* __restrict__ y, int d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int acc = 0;
    for (int j = 0; j < n; ++j)
        acc += (x[i] + j) / d;  // MARK
    y[i] = acc;
}""" + launch("k", "N / 256", "256", "const int* x, int* y, int d|x, y, d, 64"),
        """__global__ void k(const int* __restrict__ x, int* __restrict__ y, int d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int acc = 0;
    for (int j = 0; j < n; ++j)
        acc += (x[i] + j) * d;  // MARK
    y[i] = acc;
}""" + launch("k", "N / 256", "256", "const int* x, int* y, int d|x, y, d, 64")),
    "memory_transaction_reduction": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int j = 0; j < 8; ++j)
        acc += x[(i * 33 + j) * s];  // MARK
    y[i] = acc;
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y, 1"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 2.0f;  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y, 1")),
    "occupancy_limit": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)  // MARK
{
    __shared__ float buf[12288];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = x[i];
    __syncthreads();
    y[i] = buf[(threadIdx.x + 1) % 128] * 2.0f;
}""" + launch("k", "N / 128", "128", "const float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ float buf[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = x[i];
    __syncthreads();
    y[i] = buf[(threadIdx.x + 1) % 128] * 2.0f;
}""" + launch("k", "N / 128", "128", "const float* x, float* y|x, y")),
    "reduce_precision": (
        """__global__ void k(const double* __restrict__ x, double* __restrict__ y, double a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a * x[i] + y[i];  // MARK
}""" + launch("k", "N / 256", "256", "const double* x, double* y|x, y, 2.0"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a * x[i] + y[i];  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y, 2.0f")),
    "coalesced_access": (
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[(size_t)i * s];  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y, 32"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[(size_t)i * s];  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y, 1")),
    "bank_conflicts": (
        """__global__ void k(const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float tile[32][32];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    tile[ty][tx] = in[(blockIdx.x * 32 + ty) * 32 + tx];
    __syncthreads();
    out[(blockIdx.x * 32 + ty) * 32 + tx] = tile[tx][ty];  // MARK
}""" + launch("k", "N / 1024", "dim3(32, 32)", "const float* x, float* y|x, y"),
        """__global__ void k(const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float tile[32][33];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    tile[ty][tx] = in[(blockIdx.x * 32 + ty) * 32 + tx];
    __syncthreads();
    out[(blockIdx.x * 32 + ty) * 32 + tx] = tile[tx][ty];  // MARK
}""" + launch("k", "N / 1024", "dim3(32, 32)", "const float* x, float* y|x, y")),
    "function_split": (
        # 2,048 FMAs with distinct constants unrolled: ~64 KiB of SASS in the hot loop, past the L0
        # instruction cache (48 KiB on sm_90, measured on an H100), so every pass refetches its lines
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = x[i];
    for (int j = 0; j < n; ++j) {
#pragma unroll
        for (int u = 0; u < 2048; ++u)
            acc = fmaf(acc, 0.999f + u * 1e-7f, u * 0.25f);  // MARK
    }
    y[i] = acc;
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y, 64"),
        """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = x[i];
    for (int j = 0; j < n; ++j) {
#pragma unroll 1
        for (int u = 0; u < 2048; ++u)
            acc = fmaf(acc, 0.999f + u * 1e-7f, u * 0.25f);  // MARK
    }
    y[i] = acc;
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y, 64")),
}

#: Optimizers whose expected line is the launch site rather than a marked line.
LAUNCH_LINE = {"thread_increase", "block_increase"}


def _check_positive(opt: str, src: str, toolchain, tmp_path, **kw):
    r = analyse(H + src, toolchain, tmp_path, **kw)
    found = r.by(opt)
    assert found, f"{opt} missing; got {[a.optimizer for a in r.advice]}"
    a = found[0]
    assert math.isfinite(a.estimate.speedup) and a.estimate.speedup > 1
    if opt in LAUNCH_LINE:
        assert a.lines[0] == r.line_of("<<<")
    elif "// MARK" in src:
        assert r.line_of("// MARK") in a.lines, (a.lines, r.line_of("// MARK"))
    return a


@pytest.mark.parametrize("opt", sorted(CASES))
def test_positive(opt, toolchain, tmp_path):
    _check_positive(opt, CASES[opt][0], toolchain, tmp_path)


@pytest.mark.parametrize("opt", sorted(CASES))
def test_negative(opt, toolchain, tmp_path):
    r = analyse(H + CASES[opt][1], toolchain, tmp_path)
    assert not r.by(opt), [a.message for a in r.by(opt)]


def test_block_increase_uses_the_emulators_grid_scaling(toolchain, tmp_path):
    src = """__global__ void k(int n, const float* __restrict__ x, float* __restrict__ y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = 2.0f * x[i] + y[i];
}"""
    a = _check_positive("block_increase", src + launch("k", "4", "128", "const float* x, float* y|N, x, y"),
                        toolchain, tmp_path, with_what_if=True)
    assert "what-if" in a.estimate.formula
    r = analyse(H + src + launch("k", "1024", "128", "const float* x, float* y|N, x, y"), toolchain, tmp_path)
    assert not r.by("block_increase")


TILED_2D = """#define T 4
__global__ void k(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ float As[T][T], Bs[T][T];
    int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / T; ++t) {
        As[threadIdx.y][threadIdx.x] = A[r * n + t * T + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * T + threadIdx.y) * n + c];
        __syncthreads();
        for (int j = 0; j < T; ++j)
            acc += As[threadIdx.y][j] * Bs[j][threadIdx.x];
        __syncthreads();
    }
    C[r * n + c] = acc;
}
void run(const float* a, const float* b, float* c) { k<<<dim3(256, 256), dim3(T, T)>>>(a, b, c, 1024); }
"""


def test_no_block_size_advice_for_a_2d_tile(toolchain, tmp_path):
    from kernelscope.analysis.machine.arch import load_arch_specs
    from kernelscope.analysis.machine.occupancy import occupancy

    r = analyse(H + TILED_2D, toolchain, tmp_path)
    # The launch is held back by the blocks-per-SM cap, the case thread_increase fires on for a 1-D
    # block (test_positive) ...
    (kernel,) = r.program.kernels
    occ = occupancy(load_arch_specs().arch("sm_90"), 16, kernel.resources.registers, 0, kernel.resources.static_smem)
    assert occ.limiter.value == "blocks" and occ.occupancy < 1.0
    # ... but the 4 x 4 block is the tile the kernel indexes: another thread count is not a valid launch.
    assert not r.by("thread_increase"), [a.message for a in r.by("thread_increase")]
    assert not [a for a in r.advice if a.fix is not None and a.fix.kind == "block_size"]
