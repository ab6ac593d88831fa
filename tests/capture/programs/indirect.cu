// Launches the source cannot resolve: kernels in an anonymous namespace, a function pointer, a
// table of them with dimensions from a struct set at run time, cudaLaunchKernel,
// cudaLaunchKernelExC and a cooperative launch through a pointer.
#include <cstdio>
namespace {
__global__ void hidden(float* p, int n) {
  if (threadIdx.x < n) p[threadIdx.x] = 1.f;
}
template <int B>
__global__ void tiled(float* p, long n) {
  if (threadIdx.x < n) p[threadIdx.x] = B;
}
}  // namespace
__global__ void first(float* p, int n) { p[n] = 1.f; }
__global__ void second(float* p, int n) { p[n] = 2.f; }
typedef void (*kernel_t)(float*, int);
struct LaunchConfig { dim3 grid, block; };
int main(int argc, char**) {
  float* p;
  cudaMalloc(&p, 1 << 20);
  hidden<<<3, 64>>>(p, 17);
  tiled<32><<<5, 32>>>(p, 19L);
  kernel_t table[] = {first, second};
  LaunchConfig config = {dim3(8 * argc, 2), dim3(128)};
  for (int i = 0; i < 2; ++i) table[i]<<<config.grid, config.block>>>(p, 100 + i);
  kernel_t f = hidden;
  f<<<7, 96>>>(p, 23);
  int n = 29;
  void* args[] = {&p, &n};
  cudaLaunchKernel((const void*)f, dim3(9), dim3(32), args, 0, 0);
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(11);
  c.blockDim = dim3(64);
  cudaLaunchKernelExC(&c, (const void*)table[0], args);
  cudaLaunchCooperativeKernel((const void*)table[1], dim3(2), dim3(32), args, 0, 0);
  return 0;
}
