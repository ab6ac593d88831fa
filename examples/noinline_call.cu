// A kernel that calls a __noinline__ device function in its inner loop: every call pays the
// ABI cost (argument moves, a call and return, and registers saved on the stack).
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

#define ITERS 64

__device__ __noinline__ float smooth_step(float edge0, float edge1, float x)
{
    float t = fminf(fmaxf((x - edge0) / (edge1 - edge0), 0.0f), 1.0f);
    return t * t * (3.0f - 2.0f * t);
}

__global__ void apply_smooth_step(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = in[i];
    for (int it = 0; it < ITERS; ++it)
        v = smooth_step(0.0f, 1.0f, v);
    out[i] = v;
}

int main()
{
    const int n = 1 << 20;
    const int threads = 256;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i)
        h[i] = (float)i / n;

    float *dIn, *dOut;
    CUDA_CHECK(cudaMalloc(&dIn, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dOut, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dIn, h, n * sizeof(float), cudaMemcpyHostToDevice));

    apply_smooth_step<<<(n + threads - 1) / threads, threads>>>(dIn, dOut, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(h, dOut, n * sizeof(float), cudaMemcpyDeviceToHost));
    printf("out[n / 2] = %f\n", h[n / 2]);

    CUDA_CHECK(cudaFree(dIn));
    CUDA_CHECK(cudaFree(dOut));
    free(h);
    return 0;
}
