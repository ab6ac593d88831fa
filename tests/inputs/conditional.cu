// Conditional compilation as real projects use it (issue 20 item 3): a -D flag picks the block
// size, the kernel lies inside #if defined(__CUDACC__), and its loop header has an
// architecture-specific form whose braces only balance once one branch is chosen.
#include <cuda_runtime.h>

#ifdef WIDE_BLOCKS
#define BLOCK 1024
#else
#define BLOCK 128
#endif

#if defined(__CUDACC__)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define REPEAT 40
#else
#define REPEAT 3
#endif

__global__ void repeat_axpy(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = y[i];
#if __CUDA_ARCH__ >= 900
    for (int r = 0; r < REPEAT; ++r) {
#else
    for (int r = 0; r < 2 * REPEAT; ++r) {
#endif
        v = a * x[i] + v;
    }
    y[i] = v;
}
#endif

int main()
{
    const int n = 1 << 22;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    repeat_axpy<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(y, x, 2.0f, n);
    cudaDeviceSynchronize();
    return 0;
}
