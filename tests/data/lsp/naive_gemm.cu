// kernelscope LSP fixture: a naive GEMM with the signature of the kernel in
// tests/data/ncu-reports/gtx1660s-naive-gemm.ncu-rep (naive_gemm, profiled on a GTX 1660 SUPER).
#include <cuda_runtime.h>

__global__ void naive_gemm(const float *A, const float *B, float *C, int M, int N, int K, float alpha, float beta) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}

int main() {
  const int n = 1024;
  float *a, *b, *c;
  cudaMalloc(&a, n * n * sizeof(float));
  cudaMalloc(&b, n * n * sizeof(float));
  cudaMalloc(&c, n * n * sizeof(float));
  dim3 block(16, 16), grid(n / 16, n / 16);
  naive_gemm<<<grid, block>>>(a, b, c, n, n, n, 1.0f, 0.0f);
  cudaDeviceSynchronize();
  return 0;
}
