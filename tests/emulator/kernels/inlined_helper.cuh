// A device function whose loop runs inside a caller's loop once inlined (tests/emulator/test_trip_counts.py).
// Written for kernelscope's tests; public domain.
__device__ __forceinline__ float tail_sum(const float* x, int m) {
  float s = 0.f;
  for (int i = 0; i < m; ++i) s += x[i] * x[i];
  return s;
}
