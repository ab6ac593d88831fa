// Shared memory read through a generic pointer chosen at run time (a stage index into a local array
// of buffers, as WMMA GEMMs do; issue 33), written for kernelscope: the pointer comes from local
// memory (LDL) and ptxas cannot prove its space (generic LD).
__global__ void generic_smem(const float* in, float* out, int iters) {
    __shared__ float a[2][256];
    a[0][threadIdx.x] = in[threadIdx.x];
    a[1][threadIdx.x] = in[threadIdx.x + 256];
    __syncthreads();
    float* bufs[2] = {a[0], a[1]};
    float acc = 0.f;
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
        const float* p = bufs[it & 1];
        acc = acc * 0.5f + p[(threadIdx.x + it) & 255];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
