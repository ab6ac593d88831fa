// <<<>>>, cudaLaunchKernel, cudaLaunchKernelEx, a cooperative launch, a template and a stream, each with known arguments.
#include <cstdio>
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <int TILE> __global__ void scale(float* p, long m) {
  __shared__ float t[TILE];
  t[threadIdx.x % TILE] = p[threadIdx.x];
  if (threadIdx.x < m) p[threadIdx.x] = t[0];
}
int main() {
  int n = 1 << 20;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(y, 0, n * sizeof(float));
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
  cudaStream_t s;
  cudaStreamCreate(&s);
  scale<128><<<dim3(4, 2), 128, 64, s>>>(x, 77L);
  float a = 3.0f;
  void* args[] = {&n, &a, &x, &y};
  cudaLaunchKernel((void*)saxpy, dim3(10), dim3(32), args, 0, 0);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(7, 3);
  cfg.blockDim = dim3(64);
  cfg.dynamicSmemBytes = 256;
  cfg.stream = s;
  cudaLaunchKernelEx(&cfg, saxpy, 500, 4.0f, (const float*)x, y);
  cudaLaunchCooperativeKernel((void*)saxpy, dim3(2), dim3(96), args, 0, s);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
