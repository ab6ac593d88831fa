// One warp per row, as llm.c's layernorm and softmax kernels are launched (ceil_div(N * 32,
// block_size) blocks). `rows_real` is launched with a grid the source states; `rows_assumed`
// with one read at run time, so the model assumes one thread per element of N: 32 blocks where
// the program runs 1024 (tests/advisor/test_assumed_launch.py). Each element costs eight
// independent chains of FMAs, so that the FP32 pipe binds and a block split over more SMs is
// faster in the model, not only a larger grid.
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void rows_real(float *out, const float *in, int N, int C)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float v[8];
        for (int j = 0; j < 8; ++j) v[j] = in[row * C + c] + j;
        for (int k = 0; k < 64; ++k)
            for (int j = 0; j < 8; ++j) v[j] = v[j] * 0.999f + 0.5f;
        for (int j = 0; j < 8; ++j) s += v[j];
    }
    if (lane == 0) out[row] = s;
}

__global__ void rows_assumed(float *out, const float *in, int N, int C)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float v[8];
        for (int j = 0; j < 8; ++j) v[j] = in[row * C + c] + j;
        for (int k = 0; k < 64; ++k)
            for (int j = 0; j < 8; ++j) v[j] = v[j] * 0.999f + 0.5f;
        for (int j = 0; j < 8; ++j) s += v[j];
    }
    if (lane == 0) out[row] = s;
}

int main()
{
    const int N = 8192, C = 768;
    float *in, *out;
    cudaMalloc(&in, sizeof(float) * N * C);
    cudaMalloc(&out, sizeof(float) * N);
    rows_real<<<32, 256>>>(out, in, N, C);
    const char *given = getenv("GRID");
    int grid = given ? atoi(given) : N * 32 / 256;
    rows_assumed<<<grid, 256>>>(out, in, N, C);
    cudaDeviceSynchronize();
    return 0;
}
