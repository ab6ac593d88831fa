// A loop body whose load `float v = a[...]` sits right before its use, after independent
// arithmetic: the hoist-load fix may move it above that arithmetic (nothing it reads is written there).
#include <cuda_runtime.h>

__global__ void blend(const float* a, const float* w, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float acc = 0.0f;
    for (int k = 0; k < 64; ++k) {
        float s = acc * 0.5f + 1.0f;
        acc = s * s - acc;
        float v = a[k * n + i];
        acc += v * w[k];
    }
    out[i] = acc;
}

int main()
{
    const int n = 1 << 20;
    float *a, *w, *out;
    cudaMalloc(&a, 64 * n * sizeof(float));
    cudaMalloc(&w, 64 * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    blend<<<n / 256, 256>>>(a, w, out, n);
    cudaDeviceSynchronize();
    return 0;
}
