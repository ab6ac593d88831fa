// Launchers reached from main() through a dispatcher, as llm.c's dev/cuda programs and Learn-CUDA-
// Programming's reductions write them (written for kernelscope's tests, not copied): main() sweeps
// a local list of block sizes, a dispatcher passes each to one launcher per kernel, and the
// launchers compute the grid with a ceil_div helper, size shared memory by the block, or set the
// block themselves. Each launch is the program's first; the comments give what it is.
#include <cstdio>
#include <cuda_runtime.h>

template <class T>
__host__ __device__ T ceil_div(T dividend, T divisor) { return (dividend + divisor - 1) / divisor; }

__global__ void scale_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

// one block per row, its threads summing through shared memory sized by the block
__global__ void row_kernel(float *x, int rows, int cols)
{
    extern __shared__ float part[];
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[blockIdx.x * cols + c];
    part[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int t = 1; t < blockDim.x; ++t) s += part[t];
        x[blockIdx.x * cols] = s;
    }
}

// one warp per row
__global__ void warp_kernel(float *x, int rows, int cols)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (row >= rows) return;
    for (int c = threadIdx.x % 32; c < cols; c += 32) x[row * cols + c] += 1.0f;
}

__global__ void handed_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

// a grid-stride partial sum, launched over the input and then once more over the partial sums
__global__ void partial_sum(float *out, const float *in, int n)
{
    extern __shared__ float part[];
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += in[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

// four floats per thread, as llm.c's Packed128 moves them
template <class Element>
struct Pack {
    static constexpr const int size = sizeof(int4) / sizeof(Element);
};
typedef float real;
typedef Pack<real> pack;

__global__ void packed_kernel(float *x, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * pack::size;
    for (int k = 0; k < pack::size; ++k)
        if (i + k < n) x[i + k] *= 0.5f;
}

// a launcher named after its kernel: C++ tells them apart by their arguments
void packed_kernel(float *x, int n, int block_size)
{
    packed_kernel<<<ceil_div(n, block_size * pack::size), block_size>>>(x, n);
}

void launch_scale(float *x, int n, const int block_size)
{
    const int grid_size = ceil_div(n, block_size);
    scale_kernel<<<grid_size, block_size>>>(x, n);
}

void launch_rows(float *x, int rows, int cols, int block_size)
{
    size_t smem = block_size * sizeof(float);
    row_kernel<<<rows, block_size, smem>>>(x, rows, cols);
}

void launch_warps(float *x, int rows, int cols, int block_size)
{
    block_size = 64;  // this launcher always uses two warps per block, whatever it is given
    warp_kernel<<<ceil_div(rows * 32, block_size), block_size>>>(x, rows, cols);
}

void dispatch(int version, float *x, int B, int T, int C, int block_size)
{
    switch (version) {
    case 1: launch_scale(x, B * T * C, block_size); break;
    case 2: launch_rows(x, B * T, C, block_size); break;
    case 3: launch_warps(x, B * T, C, block_size); break;
    case 4: packed_kernel(x, B * T * C, block_size); break;
    default: printf("no version %d\n", version);
    }
}

void choose_sizes(int *sizes, int count)
{
    for (int i = 0; i < count; ++i) sizes[i] = 128 << (i % 2);
}

int reduce(float *out, float *in, int n, int threads)
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    int blocks = min(4 * sms, ceil_div(n, threads));
    partial_sum<<<blocks, threads, threads * sizeof(float)>>>(out, in, n);
    partial_sum<<<1, threads, threads * sizeof(float)>>>(out, out, blocks);
    return blocks;
}

int main()
{
    int B = 4, T = 256, C = 512;
    float *x, *partial;
    cudaMalloc(&x, sizeof(float) * B * T * C);
    cudaMalloc(&partial, sizeof(float) * 1024);
    int block_sizes[] = {64, 128, 256, 512};
    for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
        int block_size = block_sizes[j];
        for (int version = 1; version <= 4; ++version) dispatch(version, x, B, T, C, block_size);
    }
    int sizes[] = {64, 32};
    choose_sizes(sizes, 2);  // may change them: the launch below does not fold
    handed_kernel<<<ceil_div(B * T * C, sizes[0]), sizes[0]>>>(x, B * T * C);
    reduce(partial, x, B * T * C, 256);
    cudaDeviceSynchronize();
    cudaFree(partial);
    cudaFree(x);
    return 0;
}
