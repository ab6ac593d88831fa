// Microbenchmarks of the tensor pipe and of the shared-memory paths that feed it, for the arch file
// (analysis/data/arch_specs.toml). One program, no arguments; prints one JSON object. How each
// figure is taken, and what it stands for in the model: README.md beside this file.
//
//   nvcc -O3 -arch=sm_90 -o tensor_pipe tensor_pipe.cu && ./tensor_pipe
//
// sm_80 or newer (mma.sync.m16n8k16, ldmatrix, cp.async). Cycles are SM cycles (clock64), so they
// do not depend on the clock the GPU runs at; the clock under tensor load is cycles over cudaEvent
// time of the same launch.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "timing.cuh"

// ---- the tensor pipe: HMMA.16816.F32 ------------------------------------------------------------

__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// CHAINS independent accumulators per warp, each MMA reading the one before it on its chain: with
// one chain the cycles per MMA are the accumulator-to-accumulator latency; with eight, and several
// warps per scheduler, the pipe's issue interval. Each warp writes its own cycle count.
template <int CHAINS>
__global__ void hmma_chains(int n, long long* cycles, float* sink) {
    const unsigned one = 0x3c003c00u;  // two FP16 ones: finite products whatever the chain's length
    unsigned a[4] = {one, one, one, one}, b[2] = {one, one};
    float d[CHAINS][4] = {};
    __syncthreads();
    long long t0 = clock64();
#pragma unroll 1
    for (int i = 0; i < n; ++i) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) mma16816(d[c], a, b);
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    long long t1 = clock64();
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (threadIdx.x % 32 == 0) cycles[warp] = t1 - t0;
    if (s == 42.f) *sink = s;  // never true here; keeps the chains
}

struct Timed {
    double cycles;  // the slowest warp's
    double ms;      // cudaEvent time of the launch
};

template <int CHAINS>
static Timed run_hmma(int blocks, int threads, int n) {
    float* sink;
    CK(cudaMalloc(&sink, sizeof(float)));
    float ms = 0;
    long long cycles = slowest_warp(blocks * threads / 32, [&](long long* cyc) {
        hmma_chains<CHAINS><<<blocks, threads>>>(16, cyc, sink);  // warm: the code's first fetch
        ms = best_ms(1, [&] { hmma_chains<CHAINS><<<blocks, threads>>>(n, cyc, sink); });
    });
    CK(cudaFree(sink));
    return {(double)cycles, ms};
}

// ---- shared-memory loads: wavefronts per warp-instruction -----------------------------------------

// Each warp issues n batches of 8 loads from shared memory and folds them into one register; the
// cycles per load per SM (all of the SM's warps counted) are the wavefronts one such load takes on
// the SM's 128 B/clk data path, once enough warps keep it busy. KIND 0: ldmatrix.x4 with lane L
// giving row L at L * STRIDE bytes (16: conflict-free; 32: two rows per bank group, a 2-way
// conflict in each 8x8 matrix; 128: 8-way). KIND 1/2/3: LDS.32/.64/.128 that every lane of the
// warp reads at one address (a broadcast). KIND 4: LDS.128 at lane * 16 bytes (512 B, distinct).
//
// ptxas merges loads of one address and hoists loop-invariant ones, so the j-th load of a batch is
// 16 B past the (j-1)-th (a uniform shift keeps the pattern's bank conflicts) and every address
// adds `(i * zero) & 0x70` with `zero` a launch argument of 0 that the compiler cannot fold.
template <int KIND, int STRIDE>
__global__ void shared_loads(int n, int zero, long long* cycles, unsigned* sink) {
    __shared__ __align__(16) unsigned char s[32 * 128 + 256];
    for (int i = threadIdx.x; i < (int)sizeof(s); i += blockDim.x) s[i] = (unsigned char)i;
    __syncthreads();
    const unsigned lane = threadIdx.x % 32;
    const unsigned base = (unsigned)__cvta_generic_to_shared(s);
    const unsigned addr = KIND == 0 ? base + lane * STRIDE : KIND == 4 ? base + lane * 16 : base;
    unsigned acc = 0;
    long long t0 = clock64();
#pragma unroll 1
    for (int i = 0; i < n; ++i) {
        const unsigned vary = (unsigned)(i * zero) & 0x70u;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const unsigned at = addr + vary + 16u * j;
            unsigned r0 = 0, r1 = 0, r2 = 0, r3 = 0;
            if (KIND == 0)
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at) : "memory");
            else if (KIND == 1)
                asm volatile("ld.shared.u32 %0, [%1];" : "=r"(r0) : "r"(at) : "memory");
            else if (KIND == 2)
                asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(at) : "memory");
            else
                asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                             : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at) : "memory");
            acc ^= r0 ^ r1 ^ r2 ^ r3;
        }
    }
    long long t1 = clock64();
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (lane == 0) cycles[warp] = t1 - t0;
    if (acc == 0x9e3779b9u) *sink = acc;  // keeps the loads
}

template <int KIND, int STRIDE>
static double cycles_per_load_per_sm(int sms, int threads, int n) {
    unsigned* sink;
    CK(cudaMalloc(&sink, sizeof(unsigned)));
    long long mx = slowest_warp(sms * threads / 32, [&](long long* cyc) {
        shared_loads<KIND, STRIDE><<<sms, threads>>>(4, 0, cyc, sink);
        shared_loads<KIND, STRIDE><<<sms, threads>>>(n, 0, cyc, sink);
    });
    CK(cudaFree(sink));
    return (double)mx / ((double)n * 8 * (threads / 32));  // one block per SM: its warps are the SM's
}

// ---- cp.async from L2 into shared memory ----------------------------------------------------------

// Every block streams an L2-resident buffer into a 4-stage ring of shared memory with
// cp.async.cg (16 B per thread, L1 bypassed), two groups in flight, as a multistage GEMM's
// main loop does, without the math.
constexpr int STAGES = 4;
constexpr int CP_THREADS = 256;

__global__ void cp_async_stream(const int4* __restrict__ buf, size_t n, int passes, unsigned* sink) {
    __shared__ __align__(16) int4 ring[STAGES][CP_THREADS];
    const size_t stride = (size_t)gridDim.x * CP_THREADS;
    size_t i = (size_t)blockIdx.x * CP_THREADS + threadIdx.x;
    int stage = 0;
    for (long long k = 0; k < (long long)passes * (long long)(n / stride); ++k) {
        unsigned dst = (unsigned)__cvta_generic_to_shared(&ring[stage][threadIdx.x]);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(buf + i) : "memory");
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group 2;" ::: "memory");
        i += stride;
        if (i >= n) i -= n;
        stage = (stage + 1) % STAGES;
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    if (ring[0][threadIdx.x].x == 0x7fffffff) *sink = 1;  // never true for the data written
}

__global__ void fill(int4* buf, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = make_int4((int)i, 1, 2, 3);
}

static double cp_async_gbs(size_t bytes, int passes, int blocks) {
    int4* buf;
    unsigned* sink;
    CK(cudaMalloc(&buf, bytes));
    CK(cudaMalloc(&sink, sizeof(unsigned)));
    size_t n = bytes / sizeof(int4);
    fill<<<1024, 256>>>(buf, n);
    cp_async_stream<<<blocks, CP_THREADS>>>(buf, n, 1, sink);  // warm: the buffer into L2
    float best = best_ms(5, [&] { cp_async_stream<<<blocks, CP_THREADS>>>(buf, n, passes, sink); });
    CK(cudaFree(buf));
    CK(cudaFree(sink));
    size_t stride = (size_t)blocks * CP_THREADS;
    double moved = (double)passes * (double)(n / stride) * (double)stride * sizeof(int4);
    return moved / (best * 1e-3) / 1e9;
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major < 8) {
        fprintf(stderr, "tensor_pipe needs sm_80 or newer (mma.sync.m16n8k16, ldmatrix, cp.async)\n");
        return 1;
    }
    int sms = prop.multiProcessorCount;
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    printf("{\n  \"device\": \"%s\", \"sm\": \"%d%d\", \"sms\": %d, \"clock_khz\": %d,\n", prop.name, prop.major,
           prop.minor, sms, clock_khz);

    // latency: one warp, one chain; issue: one block of 4 x W warps on every SM, 8 chains each
    const int n = 1 << 14;
    Timed lat = run_hmma<1>(1, 32, n);
    printf("  \"hmma_16816_f32\": {\"latency_cycles\": %.2f,\n", lat.cycles / n);
    const int per_sched[] = {1, 2, 4, 8};
    printf("    \"cycles_per_mma_per_scheduler\": {");
    double loaded_mhz = 0;
    for (int k = 0; k < 4; ++k) {
        int w = per_sched[k];
        Timed t = run_hmma<8>(sms, 128 * w, n / 4);
        double per = t.cycles / ((double)(n / 4) * 8 * w);
        printf("\"%d_warps\": %.3f%s", w, per, k == 3 ? "},\n" : ", ");
        if (k == 3) loaded_mhz = t.cycles / (t.ms * 1e-3) / 1e6;
    }
    printf("    \"sm_clock_mhz_under_load\": %.0f},\n", loaded_mhz);

    // shared loads: 16 warps per SM on every SM
    const int m = 1 << 12, thr = 512;
    printf("  \"shared_cycles_per_instruction_per_sm\": {\"ldmatrix_x4\": %.3f, \"ldmatrix_x4_2way\": %.3f, "
           "\"ldmatrix_x4_8way\": %.3f,\n",
           cycles_per_load_per_sm<0, 16>(sms, thr, m), cycles_per_load_per_sm<0, 32>(sms, thr, m),
           cycles_per_load_per_sm<0, 128>(sms, thr, m));
    printf("    \"lds32_broadcast\": %.3f, \"lds64_broadcast\": %.3f, \"lds128_broadcast\": %.3f, "
           "\"lds128_distinct\": %.3f},\n",
           cycles_per_load_per_sm<1, 0>(sms, thr, m), cycles_per_load_per_sm<2, 0>(sms, thr, m),
           cycles_per_load_per_sm<3, 0>(sms, thr, m), cycles_per_load_per_sm<4, 0>(sms, thr, m));

    // cp.async from an 8 MiB buffer that stays in L2, two blocks per SM
    printf("  \"bandwidth_gbs\": {\"cp_async_l2\": %.0f}\n}\n", cp_async_gbs((size_t)8 << 20, 100, 2 * sms));
    CK(cudaDeviceSynchronize());
    return 0;
}
