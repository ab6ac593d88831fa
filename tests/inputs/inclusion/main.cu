// The program that includes both kernel files and launches their kernels (tests/inputs/test_inclusion.py).
#include <cuda_runtime.h>
#include "kernels.cuh"

#define ELEMS_PER_THREAD 4
#include "kernels_impl.cu"

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

int main() {
    const int n = 1 << 20;
    constexpr int tile = 128;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    dim3 grid(CEIL_DIV(n, tile));
    fill<<<CEIL_DIV(n, 256), 256>>>(x, n, 1.0f);
    tiled_scale<tile><<<grid, tile>>>(x, n, 3);
    unrolled_add<<<CEIL_DIV(n, 256 * ELEMS_PER_THREAD), 256>>>(x, y, n);
    cudaDeviceSynchronize();
    return 0;
}
