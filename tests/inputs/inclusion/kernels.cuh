// Kernels in a header, launched from main.cu (the layout of many optimisation series): nvcc
// does not compile a .cuh on its own, so it is analysed in main.cu's translation unit.
#pragma once

// kernelscope: trip=7
template <int TILE>
__global__ void tiled_scale(float *x, int n, int reps) {
    int i = blockIdx.x * TILE + threadIdx.x;
    for (int r = 0; r < reps; ++r)
        if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

__global__ void fill(float *x, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}
