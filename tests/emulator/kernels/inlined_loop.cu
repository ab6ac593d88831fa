// A loop of an inlined header function inside the kernel's own loop: its trip count is its own
// bound (m), not that of the loop around the call (n). Written for kernelscope's tests; public domain.
#include "inlined_helper.cuh"

__global__ void outer(const float* x, float* y, int n, int m) {
  float s = 0.f;
  for (int j = 0; j < n; ++j) s += tail_sum(x + j * m, m);
  y[threadIdx.x] = s;
}

int main() {
  outer<<<64, 256>>>((const float*)0, (float*)0, 1000, 7);
  return 0;
}
