// The classic interleaved-addressing reduction: `tid % (2 * s) == 0` leaves most lanes of
// every warp idle, and the modulo is slow.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                      \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                \
                    cudaGetErrorString(err_));                                \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

#define BLOCK_SIZE 256

__global__ void reduce_interleaved(const float* in, float* out, int n)
{
    __shared__ float sdata[BLOCK_SIZE];
    unsigned int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

int main()
{
    const int n = 1 << 24;
    const int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    float* h = (float*)malloc(n * sizeof(float));
    float* partial = (float*)malloc(blocks * sizeof(float));
    for (int i = 0; i < n; ++i)
        h[i] = 1.0f;

    float *dIn, *dOut;
    CUDA_CHECK(cudaMalloc(&dIn, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dOut, blocks * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dIn, h, n * sizeof(float), cudaMemcpyHostToDevice));

    reduce_interleaved<<<blocks, BLOCK_SIZE>>>(dIn, dOut, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(partial, dOut, blocks * sizeof(float), cudaMemcpyDeviceToHost));

    double total = 0.0;
    for (int b = 0; b < blocks; ++b)
        total += partial[b];
    printf("sum = %.0f (expected %d)\n", total, n);

    CUDA_CHECK(cudaFree(dIn));
    CUDA_CHECK(cudaFree(dOut));
    free(h);
    free(partial);
    return 0;
}
