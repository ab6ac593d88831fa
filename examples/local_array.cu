// A per-thread histogram in a private array: the index depends on the data, so the array
// cannot live in registers and spills to local memory.
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

#define BINS 32

__global__ void histogram_private(const unsigned int* data, unsigned int* bins, int n)
{
    unsigned int hist[BINS];
    for (int b = 0; b < BINS; ++b)
        hist[b] = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        hist[data[i] & (BINS - 1)] += 1;
    for (int b = 0; b < BINS; ++b)
        atomicAdd(&bins[b], hist[b]);
}

int main()
{
    const int n = 1 << 22;
    unsigned int* h = (unsigned int*)malloc(n * sizeof(unsigned int));
    for (int i = 0; i < n; ++i)
        h[i] = (unsigned int)rand();

    unsigned int *dData, *dBins;
    CUDA_CHECK(cudaMalloc(&dData, n * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&dBins, BINS * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(dData, h, n * sizeof(unsigned int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dBins, 0, BINS * sizeof(unsigned int)));

    histogram_private<<<256, 256>>>(dData, dBins, n);
    CUDA_CHECK(cudaGetLastError());

    unsigned int bins[BINS];
    CUDA_CHECK(cudaMemcpy(bins, dBins, sizeof(bins), cudaMemcpyDeviceToHost));
    printf("bin 0 = %u\n", bins[0]);

    CUDA_CHECK(cudaFree(dData));
    CUDA_CHECK(cudaFree(dBins));
    free(h);
    return 0;
}
