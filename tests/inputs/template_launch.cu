// A template kernel launched from main(): its demangled name is `void scale<128>(float*, int)`.
#include <cuda_runtime.h>

template <int BLOCK>
__global__ void scale(float *x, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

int main() {
    const int n = 1 << 20;
    float *d;
    cudaMalloc(&d, n * sizeof(float));
    scale<128><<<n / 128, 128>>>(d, n);
    cudaDeviceSynchronize();
    return 0;
}
