// `exp((double)x)` and `log(...)` of a double run the FP64 math library in a float kernel: the
// float-math-function fix calls expf (or __expf with fast math).
#include <cmath>
#include <cuda_runtime.h>

__global__ void softplus(const float* __restrict__ in, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = log(1.0f + exp((double)in[i]));
}

int main()
{
    const int n = 1 << 20;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    softplus<<<n / 256, 256>>>(in, out, n);
    cudaDeviceSynchronize();
    return 0;
}
