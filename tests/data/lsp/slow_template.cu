// kernelscope LSP fixture: takes minutes to compile (an exponential tree of force-inlined
// template calls), so that tests can cancel an analysis while nvcc/cicc/ptxas are running.
template <int N> struct F {
  __device__ __forceinline__ static float f(float x) { return F<N - 1>::f(x * 1.0001f + N) + F<N - 2>::f(x - N); }
};
template <> struct F<1> {
  __device__ __forceinline__ static float f(float x) { return x * x; }
};
template <> struct F<0> {
  __device__ __forceinline__ static float f(float x) { return x + 1.0f; }
};
__global__ void slow(float *a) { a[threadIdx.x] = F<24>::f(a[threadIdx.x]); }
