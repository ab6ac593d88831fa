// A float Jacobi stencil whose unsuffixed constants (0.25, 0.5) and double-precision math calls
// promote every update to FP64.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                      \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                \
                    cudaGetErrorString(err_));                                \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

const int NX = 2048;
const int NY = 2048;

__global__ void jacobi_step(const float* in, float* out, float* grad, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1)
        return;
    int i = y * nx + x;
    float sum = in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx];
    out[i] = 0.25 * sum;
    float dx = 0.5 * (in[i + 1] - in[i - 1]);
    float dy = 0.5 * (in[i + nx] - in[i - nx]);
    grad[i] = sqrt(pow(dx, 2.0) + pow(dy, 2.0));
}

int main()
{
    const size_t bytes = (size_t)NX * NY * sizeof(float);
    float* h = (float*)malloc(bytes);
    for (int i = 0; i < NX * NY; ++i)
        h[i] = (float)(i % 7);

    float *dIn, *dOut, *dGrad;
    CUDA_CHECK(cudaMalloc(&dIn, bytes));
    CUDA_CHECK(cudaMalloc(&dOut, bytes));
    CUDA_CHECK(cudaMalloc(&dGrad, bytes));
    CUDA_CHECK(cudaMemcpy(dIn, h, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dOut, 0, bytes));

    dim3 block(32, 8);
    dim3 grid(NX / block.x, NY / block.y);
    jacobi_step<<<grid, block>>>(dIn, dOut, dGrad, NX, NY);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    CUDA_CHECK(cudaMemcpy(h, dOut, bytes, cudaMemcpyDeviceToHost));
    printf("out[NX + 1] = %f\n", h[NX + 1]);

    CUDA_CHECK(cudaFree(dIn));
    CUDA_CHECK(cudaFree(dOut));
    CUDA_CHECK(cudaFree(dGrad));
    free(h);
    return 0;
}
