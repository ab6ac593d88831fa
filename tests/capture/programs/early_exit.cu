// Branches on a kernel's result: kernels do not run under capture, so the check fails and the
// program exits early; the launches before it are still recorded.
#include <cstdio>
#include <cstdlib>
__global__ void fill(int* out, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = v;
}
int main() {
  const int n = 4096;
  int* d;
  cudaMalloc(&d, n * sizeof(int));
  fill<<<n / 128, 128>>>(d, 7, n);
  int h[n];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  if (h[0] != 7) { fprintf(stderr, "wrong result\n"); return 1; }
  fill<<<1, 32>>>(d, 9, 32);
  return 0;
}
