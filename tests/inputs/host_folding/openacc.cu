// A program that builds with OpenACC or with CUDA (issue 31 item 3): its `#if defined(_OPENACC)`
// branches each open the loop's `{` that one closing brace after them ends. Read with both
// branches, main() does not parse; nvcc without -fopenacc leaves _OPENACC undefined.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void relax(float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1) a[i] = 0.5f * (b[i - 1] + b[i + 1]);
}

int main()
{
    const int n = 1 << 20;
    float *a, *b;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
#if defined(_OPENACC)
#pragma acc data copy(a[0:n], b[0:n])
    for (int it = 0; it < 100; ++it) {
#pragma acc parallel loop
#else
    for (int it = 0; it < 100; ++it) {
        relax<<<(n + THREADS - 1) / THREADS, THREADS>>>(a, b, n);
#endif
        float *t = a;
        a = b;
        b = t;
    }
    cudaDeviceSynchronize();
    return 0;
}
