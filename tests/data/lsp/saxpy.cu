// kernelscope LSP fixture: float kernels that use double-precision literals.
#include <cuda_runtime.h>

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = /* é😀 */ 2.5 * a * x[i] + y[i];
  }
}

__global__ void scale(int n, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = y[i] * 0.5 + 1.0;
  }
}

int main() {
  const int n = 1 << 24;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  saxpy<<<n / 256, 256>>>(n, 2.0f, x, y);
  scale<<<n / 256, 256>>>(n, y);
  cudaDeviceSynchronize();
  cudaFree(x);
  cudaFree(y);
  return 0;
}
