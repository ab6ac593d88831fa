// The L1/shared data array is one pipeline stage for global, local and shared requests: each
// passes it one 128 B wavefront per cycle (NVIDIA's description of L1TEX wavefronts). Each
// kernel moves 512 B per warp and trip through it: from global memory (a 16 KiB window that
// stays in L1), from shared memory, or both. tests/emulator/test_memory_launch.py.
__global__ void from_global(const float4* in, float4* out, int iters) {
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i = 0; i < iters; ++i) {
    float4 g = in[(threadIdx.x + i * 32) & 1023];
    a.x += g.x; a.y += g.y; a.z += g.z; a.w += g.w;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void from_shared(const float4* in, float4* out, int iters) {
  __shared__ float4 tile[1024];
  for (int j = threadIdx.x; j < 1024; j += blockDim.x) tile[j] = in[j];
  __syncthreads();
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i = 0; i < iters; ++i) {
    float4 s = tile[(threadIdx.x + i * 32) & 1023];
    a.x += s.x; a.y += s.y; a.z += s.z; a.w += s.w;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void from_both(const float4* in, float4* out, int iters) {
  __shared__ float4 tile[1024];
  for (int j = threadIdx.x; j < 1024; j += blockDim.x) tile[j] = in[j];
  __syncthreads();
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i = 0; i < iters; ++i) {
    float4 g = in[(threadIdx.x + i * 32) & 1023];
    float4 s = tile[(threadIdx.x + i * 32 + 512) & 1023];
    a.x += g.x + s.x; a.y += g.y + s.y; a.z += g.z + s.z; a.w += g.w + s.w;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
