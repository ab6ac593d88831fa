__device__ __forceinline__ float helper(float x, float y) {
    return x * y + 1.0f;
}
__device__ __noinline__ float devfn(float x) { return x * 3.0f; }
__global__ void saxpy(const float* __restrict__ a, float* b, int n, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0;
        for (int j = 0; j < n; ++j) {
            for (int k = 0; k < d; ++k) {
                s += helper(a[j], a[k]);
            }
        }
        b[i] = devfn(s) + (float)(i / d);
        double dd = (double)b[i] * 2.0;
        ((float4*)b)[i] = make_float4(dd, 1, 2, 3);
    }
}
__global__ void sh(float* out) {
    __shared__ float t[256];
    t[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = t[255 - threadIdx.x] + atomicAdd(out + 1000, 1.0f);
}
