// A K loop that steps through two shared-memory stages by hand, the shape of multistage GEMMs
// (tests/emulator/test_trip_counts.py). Written for kernelscope's tests.
//
// Each stage's tile comes from one inlined helper, called once per stage; its `for (i < 4)` is
// unrolled fully, and each stage ends in __syncthreads(). Every load of the body thus appears a
// multiple of 4 times on its line, yet the K loop is rolled: one SASS trip per `ko += 2`.
__device__ __forceinline__ void load_stage(float* s, const float* a, int k, int ko) {
  for (int i = 0; i < 4; ++i)
    s[i * 128 + threadIdx.x] = a[(blockIdx.x * 512 + i * 128 + threadIdx.x) * k + ko];
}

__global__ void two_stages(const float* a, float* out, int k) {
  __shared__ float s0[512];
  __shared__ float s1[512];
  float acc = 0.f;
  for (int ko = 0; ko < k; ko += 2) {
    load_stage(s0, a, k, ko);
    __syncthreads();
    for (int i = 0; i < 4; ++i) acc += s0[i * 128 + (threadIdx.x ^ 1)];
    __syncthreads();
    load_stage(s1, a, k, ko + 1);
    __syncthreads();
    for (int i = 0; i < 4; ++i) acc += s1[i * 128 + (threadIdx.x ^ 1)];
    __syncthreads();
  }
  out[blockIdx.x * 128 + threadIdx.x] = acc;
}

int main() {
  float *a, *out;
  two_stages<<<64, 128>>>(a, out, 256);
  return 0;
}
