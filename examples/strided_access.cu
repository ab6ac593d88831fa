// A gather with a stride of 32 floats: each warp's 32 loads touch 32 different 128-byte
// lines, so only 4 of every 128 bytes fetched are used.
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

__global__ void strided_copy(const float* in, float* out, int n, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[(size_t)i * stride];
}

int main()
{
    const int n = 1 << 20;
    const int stride = 32;
    const int threads = 256;
    const size_t in_bytes = (size_t)n * stride * sizeof(float);
    float* h = (float*)malloc(in_bytes);
    for (size_t i = 0; i < (size_t)n * stride; ++i)
        h[i] = (float)(i % 1000);

    float *dIn, *dOut;
    CUDA_CHECK(cudaMalloc(&dIn, in_bytes));
    CUDA_CHECK(cudaMalloc(&dOut, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dIn, h, in_bytes, cudaMemcpyHostToDevice));

    strided_copy<<<(n + threads - 1) / threads, threads>>>(dIn, dOut, n, stride);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(h, dOut, n * sizeof(float), cudaMemcpyDeviceToHost));
    printf("out[1] = %f (expected %f)\n", h[1], (float)(stride % 1000));

    CUDA_CHECK(cudaFree(dIn));
    CUDA_CHECK(cudaFree(dOut));
    free(h);
    return 0;
}
