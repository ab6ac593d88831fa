// Host code shapes seen on public programs (issue 31 item 3), each launching its own kernel from
// main() through the kind of host code that hides the launch from a reader that does not read it
// as a compiler does. tests/inputs/test_host_folding.py asserts the launch the model uses.
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>
#include "params.h"

#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

// a helper as llm.c's dev/cuda/common.h writes it
template <class T>
__host__ __device__ T ceil_div(T dividend, T divisor) { return (dividend + divisor - 1) / divisor; }

constexpr unsigned long kTypesBlock = 64;

// one warp per row: the launch asks for 32 threads per row (layernorm/softmax shape)
__global__ void rows_kernel(float *out, const float *in, int N, int C)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += in[row * C + c];
    if (lane == 0) out[row] = s;
}

void rows_forward(float *out, const float *in, int B, int T, int C, const int block_size)
{
    const int N = B * T;
    const int grid_size = ceil_div(N * 32, block_size);
    rows_kernel<<<grid_size, block_size>>>(out, in, N, C);
}

template <const int BM, const int BN, const int TM>
__global__ void tiled_kernel(int M, int N, const float *a, float *c)
{
    int row = blockIdx.y * BM + threadIdx.x / (BN / TM);
    int col = blockIdx.x * BN + (threadIdx.x % (BN / TM)) * TM;
    for (int t = 0; t < TM; ++t)
        if (row < M && col + t < N) c[row * N + col + t] = 2.0f * a[row * N + col + t];
}

void run_tiled(int M, int N, const float *a, float *c)
{
    const uint BM = 64, BN = 64;
    const uint TM = 8;
    dim3 gridDim(CEIL_DIV(N, BN), CEIL_DIV(M, BM));
    dim3 blockDim((BM * BN) / TM);
    tiled_kernel<BM, BN, TM><<<gridDim, blockDim>>>(M, N, a, c);
}

__global__ void assigned_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 3.0f;
}

void run_assigned(float *x, int n)
{
    int threads;
    threads = 128;
    int blocks = (n + threads - 1) / threads;
    assigned_kernel<<<blocks, threads>>>(x, n);
}

__global__ void types_kernel(float *x)
{
    x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f;
}

void run_types(float *x)
{
    const std::size_t rows = 2048;
    const int64_t per_block = 16;
    const long unsigned int grid = rows / per_block;
    types_kernel<<<grid, kTypesBlock>>>(x);
}

__global__ void header_kernel(float *x)
{
    x[blockIdx.x * blockDim.x + threadIdx.x] *= 0.5f;
}

template <int THREADS>
__global__ void template_kernel(float *x, int n)
{
    extern __shared__ float tile[];
    int i = blockIdx.x * THREADS + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = tile[THREADS - 1 - threadIdx.x];
}

template <int THREADS>
void run_template(float *x, int n)
{
    template_kernel<THREADS><<<n / THREADS, THREADS, THREADS * sizeof(float)>>>(x, n);
}

__global__ void chunk_kernel(const float *x, float *out, int n, int chunk)
{
    int steps = n / chunk;
    float s = 0.0f;
    for (int k = 0; k < steps; ++k) s += x[k * chunk + threadIdx.x];
    out[threadIdx.x] = s;
}

__global__ void smem_kernel(float *x, int n)
{
    extern __shared__ float halo[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    halo[threadIdx.x + 1] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = halo[threadIdx.x] + halo[threadIdx.x + 2];
}

struct LaunchShape {
    dim3 grid, block;
};

__global__ void struct_kernel(float *x) { x[threadIdx.x] = 0.0f; }
__global__ void pointer_a(float *x) { x[threadIdx.x] = 1.0f; }
__global__ void pointer_b(float *x) { x[threadIdx.x] = 2.0f; }

int main(int argc, char **argv)
{
    int B = 8;
    int T = 1024;
    int C = 768;
    float *x, *y;
    cudaMalloc(&x, 64 << 20);
    cudaMalloc(&y, 64 << 20);
    rows_forward(y, x, B, T, C, 256);
    int m = 1024;
    run_tiled(m, m, x, y);
    run_assigned(x, 1 << 20);
    run_types(x);
    header_kernel<<<NUM_BLOCKS, BLOCK_SIZE>>>(x);
    run_template<128>(x, 1 << 16);
    const int n = 1 << 16, chunk = 256;
    chunk_kernel<<<1, chunk>>>(x, y, n, chunk);
    const int tile = 256;
    size_t halo_bytes = (tile + 2) * sizeof(float);
    smem_kernel<<<CEIL_DIV(n, tile), tile, halo_bytes>>>(x, n);
    LaunchShape shape;
    shape.grid = dim3(argc > 1 ? atoi(argv[1]) : 4);
    shape.block = dim3(128);
    struct_kernel<<<shape.grid, shape.block>>>(x);
    void (*chosen)(float *) = argc > 2 ? pointer_a : pointer_b;
    chosen<<<2, 64>>>(x);
    cudaDeviceSynchronize();
    return 0;
}
