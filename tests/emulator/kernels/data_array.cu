// The L1/shared data array is one pipeline stage for global, local and shared requests: each
// passes it one 128 B wavefront per cycle (NVIDIA's description of L1TEX wavefronts). Each
// kernel moves 512 B per warp and trip through it: from global memory (a 16 KiB window that
// stays in L1), from shared memory, or both. tests/emulator/test_data_array.py.
__device__ __forceinline__ void add(float4& a, float4 v) { a.x += v.x; a.y += v.y; a.z += v.z; a.w += v.w; }

// The 16 KiB of `in` in shared memory.
__device__ __forceinline__ float4* staged(const float4* in) {
  __shared__ float4 tile[1024];
  for (int j = threadIdx.x; j < 1024; j += blockDim.x) tile[j] = in[j];
  __syncthreads();
  return tile;
}

__global__ void from_global(const float4* in, float4* out, int iters) {
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i = 0; i < iters; ++i) add(a, in[(threadIdx.x + i * 32) & 1023]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void from_shared(const float4* in, float4* out, int iters) {
  const float4* tile = staged(in);
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i = 0; i < iters; ++i) add(a, tile[(threadIdx.x + i * 32) & 1023]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void from_both(const float4* in, float4* out, int iters) {
  const float4* tile = staged(in);
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i = 0; i < iters; ++i) {
    add(a, in[(threadIdx.x + i * 32) & 1023]);
    add(a, tile[(threadIdx.x + i * 32 + 512) & 1023]);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

// 32 conflict-free 4-byte shared loads per trip, at immediate offsets (no address arithmetic; volatile
// keeps them in the loop): one wavefront each, and 32 addresses for the SMSP's LD/ST units.
__global__ void words_from_shared(const float* in, float* out, int iters) {
  __shared__ float words[1024];
  for (int j = threadIdx.x; j < 1024; j += blockDim.x) words[j] = in[j];
  __syncthreads();
  float a = 0.f;
  const volatile float* mine = words + threadIdx.x % 32;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 32; ++j) a += mine[32 * j];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
