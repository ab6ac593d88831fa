// Kernels whose cache behaviour follows from their indexing alone (tests/emulator/test_caches.py).
// Sizes are the launch's; every test derives its expected bytes from them.

#define N (1 << 22)        // elements per array
#define PER_THREAD 12      // consecutive ints each thread of sum_runs reads
#define M 1024             // matrix side of gemm_naive

// Each thread sums 12 consecutive ints: lanes are 48 B apart, so one warp-instruction touches
// ~48 sectors, but the next 7 of every 8 trips read sectors L1 already holds.
// kernelscope: block=256 grid=1366
__global__ void sum_runs(const int* in, int* out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= N / PER_THREAD)
        return;
    int s = 0;
    for (int j = 0; j < PER_THREAD; ++j)
        s += in[t * PER_THREAD + j];
    out[t] = s;
}

// a[i] is read twice (the compiler keeps both loads: `volatile`-free but separated by a store
// through another pointer it cannot prove distinct); the second read hits L1.
// kernelscope: block=256 grid=16384
__global__ void reload(const float* a, const float* b, float* c, float* d)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
    d[i] = a[i] * 2.0f;
}

// One 4 B lane per 128 B line: no reuse anywhere, and each DRAM fetch brings 64 B.
// kernelscope: block=256 grid=512
__global__ void stride32(const float* in, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[(size_t)i * 32];
}

// Textbook SGEMM: each A row is read by every block along x, each B column by every block along
// y; DRAM sees each matrix about once.
// kernelscope: block=16x16 grid=64x64
__global__ void gemm_naive(const float* A, const float* B, float* C)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < M; ++k)
        acc += A[row * M + k] * B[k * M + col];
    C[row * M + col] = acc;
}

// A copy far larger than L2 (2 x 256 MiB): everything streams, and the written lines are
// written back during the kernel.
// kernelscope: block=256 grid=262144
__global__ void big_copy(const float* in, float* out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}

// The same 1024 x 1024 copy, stored along rows (each warp fills whole sectors) and along columns
// (each lane writes 4 B of a different sector: a partial write L2 must merge).
// kernelscope: block=32x8 grid=32x32
__global__ void copy_rows(const float* in, float* out)
{
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        out[(y + j) * 1024 + x] = in[(y + j) * 1024 + x];
}

// kernelscope: block=32x8 grid=32x32
__global__ void copy_columns(const float* in, float* out)
{
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        out[x * 1024 + (y + j)] = in[(y + j) * 1024 + x];
}

// reload with a 64-bit index, as llm.c's AdamW kernels have it: sm_75 code (nvcc 13.5) addresses
// each array as [R2.64+UR6], the index in a register pair and the pointer in a uniform one.
// kernelscope: block=256 grid=16384 n=4194304
__global__ void reload_wide(const float* a, const float* b, float* c, float* d, long n)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    c[i] = a[i] + b[i];
    d[i] = a[i] * 2.0f;
}

// A volatile read is ld.volatile: LDG.E.STRONG.SYS, served past L1 every time.
// kernelscope: block=256 grid=16384
__global__ void volatile_reload(volatile const float* a, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + a[i];
}

// Each lane walks its own row (lanes 16 KiB apart): 32 L1 wavefronts per load, 7 of 8 trips served
// by L1, so the SM's L1 data path (one 128 B wavefront per clock) bounds the kernel.
// kernelscope: block=256 grid=1024
__global__ void row_walk(const float* a, float* out)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < 256; ++k)
        s += a[(size_t)row * 4096 + k];
    out[row] = s;
}

// A strip 4 floats (16 B) wide down one 64 x 64 slice of a 64^3 grid per block, as
// finite-difference's derivative_y reads it: four blocks along x share each 64 B granule, so
// block 0 and block 1 overlap entirely, yet the 16 blocks of a slice read it once (1 MiB in all).
// kernelscope: block=4x64 grid=16x64
__global__ void pencils(const float* f, float* df)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int g = blockIdx.y * 64 * 64 + threadIdx.y * 64 + i;
    df[g] = 2.0f * f[g];
}

// The same grid read 32 floats wide, 8 rows per trip of a loop over the slice's 64 rows:
// `j += blockDim.y` strides over the block, not the grid (8 trips; 1 MiB read in all).
// kernelscope: block=32x8 grid=2x64
__global__ void block_stride(const float* f, float* df)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = threadIdx.y; j < 64; j += blockDim.y) {
        int g = blockIdx.y * 64 * 64 + j * 64 + i;
        df[g] = 2.0f * f[g];
    }
}

// One block reversing 64 ints through shared memory: 256 B of data, less than the code and
// constants its launch fetches.
// kernelscope: block=64 grid=1
__global__ void tiny_reverse(int* d)
{
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = d[t];
    __syncthreads();
    d[t] = s[63 - t];
}

// One block scaling 64 floats in place: 128 FLOPs over 256 B read and 256 B written, fewer
// bytes than its launch fetches.
// kernelscope: block=64 grid=1
__global__ void tiny_scale(float* x, float a, float b)
{
    x[threadIdx.x] = x[threadIdx.x] * a + b;
}
