// IEEE float division and square root, double division, reciprocal, sqrt, rsqrt and sin: each inline
// fast path guards a call to a math-library slow path (`__cuda_sm3x_div_rn_noftz_f32_slowpath`,
// `__internal_trig_reduction_slowpathd`, ...) that only denormal, huge or special operands take.
// pow()'s `__internal_accurate_pow` is its main path: always called.
__global__ void math_paths(const float* x, const double* d, float* z, double* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;  // under -G: `@P0 BRA <the work>; BRA <exit>`
  z[i] = x[i] / x[i + 1] + sqrtf(x[i]);
  w[i] = d[i] / d[i + 1] + sqrt(d[i]) + rsqrt(d[i]) + 1.0 / d[i + 2] + sin(d[i]) + pow(d[i], 1.5);
}

int main() {
  math_paths<<<1024, 256>>>(0, 0, 0, 0, 1 << 18);
  return 0;
}
