// SAXPY over 16M elements launched with only 4 blocks of 128 threads: 512 threads cannot
// fill even one SM's warp slots, so the grid-stride loop runs 32768 times per thread.
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

// kernelscope: grid=4 block=128 n=1<<24
__global__ void saxpy_grid_stride(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

int main()
{
    const int n = 1 << 24;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i)
        h[i] = 1.0f;

    float *dX, *dY;
    CUDA_CHECK(cudaMalloc(&dX, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dY, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dX, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dY, h, n * sizeof(float), cudaMemcpyHostToDevice));

    saxpy_grid_stride<<<4, 128>>>(n, 2.0f, dX, dY);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(h, dY, n * sizeof(float), cudaMemcpyDeviceToHost));
    printf("y[0] = %f (expected 3.0)\n", h[0]);

    CUDA_CHECK(cudaFree(dX));
    CUDA_CHECK(cudaFree(dY));
    free(h);
    return 0;
}
