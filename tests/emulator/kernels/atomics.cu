// Atomics to one word: every thread, one lane per warp, a bounds-guarded one, one word per block.
// Written for kernelscope's tests (issue 20 item 4); public domain.
#define N (1 << 22)

__global__ void every_thread(const float* __restrict__ x, float* __restrict__ sum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&sum[0], x[i]);
}

__global__ void one_lane_per_warp(const float* __restrict__ x, float* __restrict__ sum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(&sum[0], v);
}

__global__ void bounds_guarded(const float* __restrict__ x, float* __restrict__ sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&sum[0], x[i]);
}

__global__ void per_block(const float* __restrict__ x, float* __restrict__ sums) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&sums[blockIdx.x], x[i]);
}

int main() {
  float *x, *s;
  every_thread<<<N / 256, 256>>>(x, s);
  one_lane_per_warp<<<N / 256, 256>>>(x, s);
  bounds_guarded<<<N / 256, 256>>>(x, s, N);
  per_block<<<N / 256, 256>>>(x, s);
  return 0;
}
