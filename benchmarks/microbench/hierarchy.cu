// Microbenchmarks of the memory hierarchy, the instruction cache and a few unit latencies, for the
// arch file (analysis/data/arch_specs.toml). One program, no arguments; prints one JSON object.
// How each figure is taken, and what it stands for in the model: README.md beside this file.
//
//   nvcc -O3 -arch=sm_90 -o hierarchy hierarchy.cu && ./hierarchy
//
// Latencies are in SM clock cycles (clock64 around a chain of dependent operations, one thread),
// so they do not depend on the clock the GPU runs at; bandwidths are bytes over cudaEvent time.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "timing.cuh"

// ---- pointer chases: each element holds the address of the next, so a load's address is the
// previous load's value and nothing else (no address arithmetic inside the timed chain) ----------

enum Path { L1_PATH = 0, L2_PATH = 1 };

template <int PATH>
__device__ __forceinline__ uint64_t load_next(uint64_t p) {
    uint64_t v;
    if (PATH == L1_PATH)
        asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else
        asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

template <int PATH>
__global__ void chase(uint64_t start, int warm, int hops, long long* cycles, uint64_t* sink) {
    uint64_t p = start;
    for (int i = 0; i < warm; ++i) p = load_next<PATH>(p);
    long long t0 = clock64();
#pragma unroll 16
    for (int i = 0; i < hops; ++i) p = load_next<PATH>(p);
    // the last load's value feeds the clock read: the chain is complete before t1
    long long t1 = clock64() + (long long)(p & 0);
    *cycles = t1 - t0;
    *sink = p;
}

// a random cyclic permutation of `count` slots `stride` bytes apart in `buf`, as device addresses
static uint64_t build_chain(uint64_t* host_words, uint64_t base, size_t count, size_t stride, unsigned seed) {
    std::vector<size_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin() + 1, order.end(), rng);
    size_t words = stride / 8;
    for (size_t i = 0; i < count; ++i) {
        size_t from = order[i], to = order[(i + 1) % count];
        host_words[from * words] = base + to * stride;
    }
    return base + order[0] * stride;
}

__global__ void scribble(float4* buf, size_t n) {  // evicts a chain from L2 (writes n float4s)
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = make_float4(1.f, 2.f, 3.f, (float)i);
}

static double chase_cycles(int path, size_t bytes, size_t stride, int warm, int hops, bool flush, float4* flushbuf,
                           size_t flush_n) {
    size_t count = bytes / stride;
    std::vector<uint64_t> host(bytes / 8, 0);
    uint64_t* dev;
    CK(cudaMalloc(&dev, bytes));
    uint64_t start = build_chain(host.data(), (uint64_t)dev, count, stride, 12345u + (unsigned)bytes);
    CK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
    long long* cyc;
    uint64_t* sink;
    CK(cudaMalloc(&cyc, sizeof(long long)));
    CK(cudaMalloc(&sink, sizeof(uint64_t)));
    if (flush) scribble<<<1024, 256>>>(flushbuf, flush_n);
    if (path == L1_PATH)
        chase<L1_PATH><<<1, 1>>>(start, warm, hops, cyc, sink);
    else
        chase<L2_PATH><<<1, 1>>>(start, warm, hops, cyc, sink);
    CK(cudaGetLastError());
    long long c = 0;
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    CK(cudaFree(dev));
    CK(cudaFree(cyc));
    CK(cudaFree(sink));
    return (double)c / hops;
}

// ---- shared memory, constant cache, SFU, conversions, atomics, barriers ---------------------------

__global__ void shared_chase(int hops, long long* cycles, unsigned* sink) {
    __shared__ unsigned s[1024];
    unsigned base = (unsigned)__cvta_generic_to_shared(s);
    for (int i = 0; i < 1024; ++i) s[i] = base + 4u * (unsigned)((i * 97 + 13) % 1024);
    __syncwarp();
    unsigned p = base;
    long long t0 = clock64();
#pragma unroll 16
    for (int i = 0; i < hops; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p) : : "memory");
    long long t1 = clock64() + (long long)(p & 0);
    *cycles = t1 - t0;
    *sink = p;
}

__constant__ unsigned cchain[1024];

__global__ void constant_chase(int hops, unsigned start, long long* cycles, unsigned* sink) {
    // the table holds byte offsets, so a load's offset is the previous load's value (LDC c[3][R])
    unsigned j = start;
    long long t0 = clock64();
#pragma unroll 16
    for (int i = 0; i < hops; ++i) j = *(const unsigned*)((const char*)cchain + j);
    long long t1 = clock64() + (long long)(j & 0);
    *cycles = t1 - t0;
    *sink = j;
}

__global__ void sfu_chain(int n, float x0, long long* cycles, float* sink) {
    float x = x0;
    long long t0 = clock64();
#pragma unroll 16
    for (int i = 0; i < n; ++i) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x));
    long long t1 = clock64() + (long long)(__float_as_int(x) & 0);
    *cycles = t1 - t0;
    *sink = x;
}

__global__ void conversion_chain(int n, double x0, long long* cycles, double* sink) {
    // F2F.F32.F64 then F2F.F64.F32: the conversion unit both ways (two per step)
    double x = x0;
    long long t0 = clock64();
#pragma unroll 16
    for (int i = 0; i < n; ++i) {
        float f;
        asm volatile("cvt.rn.f32.f64 %0, %1;" : "=f"(f) : "d"(x));
        asm volatile("cvt.f64.f32 %0, %1;" : "=d"(x) : "f"(f));
    }
    long long t1 = clock64() + (long long)(__double_as_longlong(x) & 0);
    *cycles = t1 - t0;
    *sink = x;
}

__global__ void atomic_chain(int n, unsigned long long* word, long long* cycles, unsigned long long* sink) {
    // *word holds its own address: each atomic's address is the previous one's result
    *word = (unsigned long long)word;
    __threadfence();
    unsigned long long p = (unsigned long long)word;
    long long t0 = clock64();
#pragma unroll 8
    for (int i = 0; i < n; ++i) asm volatile("atom.global.add.u64 %0, [%0], 0;" : "+l"(p) : : "memory");
    long long t1 = clock64() + (long long)(p & 0);
    *cycles = t1 - t0;
    *sink = p;
}

__global__ void shared_atomic_chain(int n, long long* cycles, unsigned* sink) {
    // the shared word holds its own address: each atomic's address is the previous one's result
    __shared__ unsigned word;
    unsigned p = (unsigned)__cvta_generic_to_shared(&word);
    word = p;
    __syncwarp();
    long long t0 = clock64();
#pragma unroll 8
    for (int i = 0; i < n; ++i) asm volatile("atom.shared.add.u32 %0, [%0], 0;" : "+r"(p) : : "memory");
    long long t1 = clock64() + (long long)(p & 0);
    *cycles = t1 - t0;
    *sink = p;
}

__global__ void barrier_loop(int n, long long* cycles) {
    long long t0 = clock64();
#pragma unroll 1
    for (int i = 0; i < n; ++i) __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0) *cycles = t1 - t0;
}

// ---- bandwidth ------------------------------------------------------------------------------------

__global__ void read_cg(const float4* __restrict__ buf, size_t n, int passes, float* sink) {
    float acc = 0.f;
    for (int r = 0; r < passes; ++r)
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
            float4 v = __ldcg(buf + i);
            acc += v.x + v.y + v.z + v.w;
        }
    if (acc == 42.f) *sink = acc;  // never true for the data written; keeps the loads
}

static double read_bandwidth_gbs(size_t bytes, int passes, int sms) {
    float4* buf;
    float* sink;
    CK(cudaMalloc(&buf, bytes));
    CK(cudaMalloc(&sink, sizeof(float)));
    size_t n = bytes / sizeof(float4);
    scribble<<<1024, 256>>>(buf, n);
    read_cg<<<sms * 8, 256>>>(buf, n, passes, sink);  // warm-up (and, for a buffer that fits, fills L2)
    float best = best_ms(5, [&] { read_cg<<<sms * 8, 256>>>(buf, n, passes, sink); });
    CK(cudaFree(buf));
    CK(cudaFree(sink));
    return (double)bytes * passes / (best * 1e-3) / 1e9;
}

#include "ifetch.cuh"

template <int N>
static void ifetch_row(int blocks, int threads, bool last) {
    const long long target = 1 << 22;  // FFMAs per warp
    int reps = (int)std::max<long long>(4, target / N);
    int warps = blocks * threads / 32;
    float* sink;
    CK(cudaMalloc(&sink, sizeof(float)));
    long long mx = slowest_warp(warps, [&](long long* cyc) {
        ifetch<N><<<blocks, threads>>>(2, 1.0001f, 0.5f, cyc, sink);  // warm: the code's first fetch
        ifetch<N><<<blocks, threads>>>(reps, 1.0001f, 0.5f, cyc, sink);
    });
    int per_sched = std::max(1, threads / 32 / 4);
    // cycles per FFMA issued by one scheduler (1.0 = one warp-instruction per cycle, FP32's rate)
    double cpi = (double)mx / ((double)N * reps * per_sched);
    printf("    {\"body_bytes\": %d, \"blocks\": %d, \"threads\": %d, \"cycles_per_instruction_per_scheduler\": %.4f}%s\n",
           N * 16, blocks, threads, cpi, last ? "" : ",");
    CK(cudaFree(sink));
}

template <int... Ns>
static void ifetch_sweep(int blocks, int threads, bool last_group) {
    constexpr int count = sizeof...(Ns);
    int k = 0;
    (ifetch_row<Ns>(blocks, threads, last_group && ++k == count), ...);
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int sms = prop.multiProcessorCount;
    int clock_khz = 0, mem_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
    printf("{\n  \"device\": \"%s\", \"sm\": \"%d%d\", \"sms\": %d, \"l2_bytes\": %d, \"clock_khz\": %d,\n",
           prop.name, prop.major, prop.minor, sms, prop.l2CacheSize, clock_khz);

    size_t flush_n = (size_t)512 << 20 >> 4;  // 512 MiB of float4: ten times any L2 here
    float4* flushbuf;
    CK(cudaMalloc(&flushbuf, flush_n * sizeof(float4)));

    long long* cyc;
    CK(cudaMalloc(&cyc, sizeof(long long)));
    long long c;
    // L1 hit: 16 KiB chased twice through the L1 path (ld.ca); L2 hit: 4 MiB through ld.cg (L1 bypassed)
    double l1 = chase_cycles(L1_PATH, 16 << 10, 128, 4096, 8192, false, flushbuf, flush_n);
    double l2 = chase_cycles(L2_PATH, 4 << 20, 128, 1 << 15, 8192, false, flushbuf, flush_n);
    // DRAM: a cold chase (L2 flushed by 512 MiB of writes), first visit of every line; 64 MiB keeps
    // the TLB's reach, 1 GiB adds its misses
    double dram4 = chase_cycles(L2_PATH, 4 << 20, 256, 0, 8192, true, flushbuf, flush_n);
    double dram64 = chase_cycles(L2_PATH, 64 << 20, 2048, 0, 8192, true, flushbuf, flush_n);
    double dram1g = chase_cycles(L2_PATH, (size_t)1 << 30, 2048, 0, 8192, true, flushbuf, flush_n);
    printf("  \"latency_cycles\": {\"l1_hit\": %.1f, \"l2_hit\": %.1f, \"dram_4mib\": %.1f, \"dram_64mib\": %.1f, "
           "\"dram_1gib\": %.1f,\n", l1, l2, dram4, dram64, dram1g);

    unsigned* usink;
    CK(cudaMalloc(&usink, 4096));
    shared_chase<<<1, 1>>>(8192, cyc, usink);
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    double shared = (double)c / 8192;
    std::vector<unsigned> ch(1024);
    for (int i = 0; i < 1024; ++i) ch[i] = 4u * (unsigned)((i * 389 + 7) % 1024);
    CK(cudaMemcpyToSymbol(cchain, ch.data(), sizeof(unsigned) * 1024));
    constant_chase<<<1, 1>>>(64, 0, cyc, usink);  // warm the constant cache
    constant_chase<<<1, 1>>>(8192, 0, cyc, usink);
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    double constant = (double)c / 8192;
    sfu_chain<<<1, 1>>>(8192, 0.5f, cyc, (float*)usink);
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    double sfu = (double)c / 8192;
    double* dsink;
    CK(cudaMalloc(&dsink, sizeof(double)));
    conversion_chain<<<1, 1>>>(8192, 0.5, cyc, dsink);
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    double conversion = (double)c / 8192 / 2;
    CK(cudaMemset(usink, 0, 4096));
    atomic_chain<<<1, 1>>>(4096, (unsigned long long*)usink, cyc, (unsigned long long*)(usink + 512));
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    double atomic = (double)c / 4096;
    shared_atomic_chain<<<1, 1>>>(4096, cyc, usink);
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    double shared_atomic = (double)c / 4096;
    barrier_loop<<<1, 32>>>(8192, cyc);
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    double bar32 = (double)c / 8192;
    barrier_loop<<<1, 1024>>>(8192, cyc);
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    double bar1024 = (double)c / 8192;
    CK(cudaGetLastError());
    printf("    \"shared\": %.1f, \"constant\": %.1f, \"sfu_ex2\": %.1f, \"conversion_f2f\": %.1f, \"atomic_global\": %.1f,\n"
           "    \"atomic_shared\": %.1f, \"barrier_1_warp\": %.1f, \"barrier_32_warps\": %.1f},\n",
           shared, constant, sfu, conversion, atomic, shared_atomic, bar32, bar1024);

    // bandwidth: 8 MiB read 200 times stays in L2 (each half of H100's L2 is 25 MB); 4 GiB once is DRAM
    double l2bw = read_bandwidth_gbs((size_t)8 << 20, 200, sms);
    double drambw = read_bandwidth_gbs((size_t)4 << 30, 1, sms);
    printf("  \"bandwidth_gbs\": {\"l2_read\": %.0f, \"dram_read\": %.0f},\n", l2bw, drambw);

    printf("  \"ifetch\": [\n");
    ifetch_sweep<256, 512, 1024, 2048, 4096, 8192, 16384>(1, 32, false);
    ifetch_sweep<256, 1024, 2048, 4096, 8192, 16384>(sms, 128, false);
    ifetch_sweep<256, 1024, 2048, 4096, 8192, 16384>(sms, 512, true);
    printf("  ]\n}\n");
    CK(cudaDeviceSynchronize());
    return 0;
}
