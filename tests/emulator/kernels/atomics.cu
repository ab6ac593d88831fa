// Atomics to one word: every thread, one lane per warp, a bounds-guarded one, one word per block,
// one thread per block after a block reduction (1-D and 2-D blocks).
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

__global__ void one_thread_per_block(const float* __restrict__ x, float* __restrict__ sum) {
  __shared__ float part[256];
  part[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(&sum[0], part[0]);
}

__global__ void one_thread_per_2d_block(const float* __restrict__ x, float* __restrict__ sum) {
  __shared__ float row[32];
  float v = x[(blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) row[threadIdx.y] = v;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    float t = 0.f;
    for (int r = 0; r < 32; ++r) t += row[r];
    atomicAdd(&sum[0], t);
  }
}

int main() {
  float *x, *s;
  every_thread<<<N / 256, 256>>>(x, s);
  one_lane_per_warp<<<N / 256, 256>>>(x, s);
  bounds_guarded<<<N / 256, 256>>>(x, s, N);
  per_block<<<N / 256, 256>>>(x, s);
  one_thread_per_block<<<N / 256, 256>>>(x, s);
  one_thread_per_2d_block<<<N / 1024, dim3(32, 32)>>>(x, s);
  return 0;
}
