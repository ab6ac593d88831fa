// llm.c's dev/cuda shape (issue 31): main() runs the kernel once per block size of a local list
// (`int block_sizes[] = {...}; for (int j = 0; ...) { int block_size = block_sizes[j]; ... }`), and
// the launching function computes the grid from the block it is given, one warp per row. The
// launch read is the program's first, block_sizes[0] = 32 (8192 blocks); a hint that names another
// block gets the program's own grid formula for that block (1024 blocks at 256 threads).
#include <cuda_runtime.h>

template <class T>
__host__ __device__ T ceil_div(T dividend, T divisor) { return (dividend + divisor - 1) / divisor; }

__global__ void softmax_rows(float *out, const float *in, int N, int C)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    float m = -1e30f;
    for (int c = lane; c < C; c += 32) m = fmaxf(m, in[row * C + c]);
    for (int c = lane; c < C; c += 32) out[row * C + c] = expf(in[row * C + c] - m);
}

// one block per row, its threads reducing through shared memory sized by the block (llm.c's mean_kernel)
__global__ void row_mean(float *mean, const float *in, int N, int C)
{
    extern __shared__ float part[];
    const float *x = in + blockIdx.x * C;
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
    part[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int t = 1; t < blockDim.x; ++t) s += part[t];
        mean[blockIdx.x] = s / C;
    }
}

void softmax_forward(float *out, const float *in, int B, int T, int C, int block_size)
{
    const int N = B * T;
    const int grid_size = ceil_div(N * 32, block_size);
    softmax_rows<<<grid_size, block_size>>>(out, in, N, C);
    row_mean<<<N, block_size, block_size * sizeof(float)>>>(out, in, N, C);
}

int main()
{
    int B = 8, T = 1024, C = 768;
    float *in, *out;
    cudaMalloc(&in, sizeof(float) * B * T * C);
    cudaMalloc(&out, sizeof(float) * B * T * C);
    int block_sizes[] = {32, 64, 128, 256, 512, 1024};
    for (int j = 0; j < 6; j++) {
        int block_size = block_sizes[j];
        softmax_forward(out, in, B, T, C, block_size);
    }
    cudaDeviceSynchronize();
    return 0;
}
