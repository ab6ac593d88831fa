// The kernel file of a program split as cuda-samples split theirs (cppIntegration): kernels and
// the host function that launches them here, main() in main.cpp, the reference in gold.cpp.
namespace {
__global__ void scale(float* data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
}  // namespace

extern "C" bool run_scale(float* host, int n, float factor) {
  float* device;
  if (cudaMalloc(&device, n * sizeof(float)) != cudaSuccess) return false;
  cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice);
  const int threads = 128;
  scale<<<(n + threads - 1) / threads, threads>>>(device, factor, n);
  cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(device);
  return true;
}
