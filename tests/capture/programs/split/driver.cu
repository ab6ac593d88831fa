// A second program of the folder: main() in a .cu, with its own kernel, calling gold.cpp's
// reference; it links only with gold.cpp beside it.
#include <cstdio>
void compute_gold(float* reference, int n, float factor);
__global__ void offset(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
int main() {
  const int n = 3000;
  float reference[n] = {};
  compute_gold(reference, n, 2.0f);
  float* d;
  cudaMalloc(&d, n * sizeof(float));
  offset<<<(n + 255) / 256, 256>>>(d, n);
  return 0;
}
