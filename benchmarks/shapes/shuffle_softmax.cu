// A warp-per-row softmax: each warp reduces its row's maximum and sum with shuffle loops.
__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void softmax_rows(const float *in, float *out, int rows, int cols) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= rows) return;
    const float *x = in + (size_t)warp * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, x[c]);
    m = warp_max(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += __expf(x[c] - m);
    s = warp_sum(s);
    for (int c = lane; c < cols; c += 32) out[(size_t)warp * cols + c] = __expf(x[c] - m) / s;
}

int main() {
    int rows = 8192, cols = 4096;
    softmax_rows<<<rows * 32 / 256, 256>>>(nullptr, nullptr, rows, cols);
    return 0;
}
