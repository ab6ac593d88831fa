// Loop shapes whose emulation cost must not grow with the trip count (issue 13).
// Written for kernelscope's tests; public domain.
__device__ __noinline__ float3 pair_force(float4 a, float4 b) {
  float dx = b.x - a.x, dy = b.y - a.y, dz = b.z - a.z;
  float r2 = dx * dx + dy * dy + dz * dz + 1e-9f;
  float inv = rsqrtf(r2);
  float s = b.w * inv * inv * inv;
  return make_float3(dx * s, dy * s, dz * s);
}

__global__ void nbody(const float4* pos, float3* acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 me = pos[i];
  float3 a = make_float3(0.f, 0.f, 0.f);
  for (int j = 0; j < n; ++j) {
    float3 f = pair_force(me, pos[j]);
    a.x += f.x; a.y += f.y; a.z += f.z;
  }
  acc[i] = a;
}


__device__ __noinline__ int depth_sum(int d) {  // recursive: nvcc keeps the CALL
  if (d <= 0) return 0;
  return d + depth_sum(d - 1);
}

__global__ void recursive_in_loop(int* out, int n) {
  int acc = 0;
  for (int j = 0; j < n; ++j) acc += depth_sum(j & 15);
  out[threadIdx.x] = acc;
}

__global__ void until_break(const float* x, float* out, int n) {
  int i = 0;
  float s = 0.f;
  while (true) {
    s += x[i] * 0.5f;
    if (s > 1e30f || ++i >= n) break;
  }
  out[threadIdx.x] = s;
}

__global__ void nest3(float* out, int n) {
  float s = 0.f;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      for (int c = 0; c < n; ++c) s = s * 0.999f + (float)(a ^ b ^ c);
  out[threadIdx.x] = s;
}

__global__ void grid_stride(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = 2.f * x[i] + y[i];
}

__device__ __noinline__ float callee_loop(const float* x, int n) {
  float s = 0.f;
  for (int j = 0; j < n; ++j) s += x[j] * x[j];
  return s;
}

__global__ void loop_in_callee(const float* x, float* out, int n) {
  out[threadIdx.x] = callee_loop(x, n);
}

int main() {
  float4* pos; float3* acc;
  nbody<<<64, 256>>>(pos, acc, 16384);
  int* io; float* x; float* y;
  recursive_in_loop<<<64, 256>>>(io, 10000000);
  until_break<<<64, 256>>>(x, y, 10000000);
  nest3<<<64, 256>>>(y, 1000);
  grid_stride<<<64, 256>>>(x, y, 10000000);
  loop_in_callee<<<64, 256>>>(x, y, 10000000);
  return 0;
}
